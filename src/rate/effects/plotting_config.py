"""The reference notebook's ``config_plotting.jsonl``: effects recomputed from scored files.

The reference's results notebook reads a JSON-lines file, one object per line with
``dataset_name``, ``concept``, ``score``, ``reward_key`` and ``dataset_filename`` (a scored
file), and computes each line's effects from that file; the paper's figures pool the datasets
of a concept (IMDB and ELI5 for length, IMDB and HH-RLHF for sentiment). This module does the
same with our estimators: a line's file is found under the scored folder (its
``dataset_folder``, the folder itself, or one sub-folder such as the reference's ``complete/``),
and lines of the same concept and reward key are pooled into one estimate unless asked not to,
each file then also estimated alone under ``groups`` by source.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from rate.config import EffectsConfig
from rate.effects.stage import clean, effects_for_columns, pooled_columns
from rate.errors import DataFileError
from rate.schema import from_dict, to_dict

log = logging.getLogger(__name__)

LINE_KEYS = ("dataset_name", "concept", "score", "reward_key", "dataset_filename")


def read_plotting_config(path: Path) -> list[dict]:
    """The lines of a config_plotting.jsonl, each checked for the reference's keys."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise DataFileError(f"{path}: cannot read ({err.strerror})") from None
    lines = []
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as err:
            raise DataFileError(f"{path}:{n}: not a JSON object ({err.msg})") from None
        missing = [k for k in LINE_KEYS if not isinstance(line, dict) or k not in line]
        if missing:
            raise DataFileError(
                f"{path}:{n}: missing {', '.join(missing)}; each line names {', '.join(LINE_KEYS)}"
            )
        lines.append(line)
    if not lines:
        raise DataFileError(f"{path}: no lines; each line names {', '.join(LINE_KEYS)}")
    return lines


def scored_file(line: dict, scored_dir: Path, where: str) -> Path:
    """A line's scored file: absolute; or under scored_dir/<dataset_folder>, scored_dir, or one
    sub-folder of it (the reference kept its files in scored/complete/)."""
    name = Path(str(line["dataset_filename"])).expanduser()
    if name.is_absolute():
        candidates = [name]
    else:
        folder = line.get("dataset_folder")
        candidates = [scored_dir / folder / name] if folder else []
        candidates.append(scored_dir / name)
        candidates += sorted(scored_dir.glob(f"*/{name}"))
    for path in candidates:
        if path.is_file():
            return path
    raise DataFileError(
        f"{where}: dataset_filename {str(name)!r}: no such file in {scored_dir} (looked in "
        f"{', '.join(str(c.parent) for c in candidates) or scored_dir})"
    )


def _section(lines: list[dict], files: list[Path], n_bootstrap: int) -> EffectsConfig:
    """The effects section of one group of lines (the first line's keys, the others pooled)."""
    first = lines[0]
    data = {k: first[k] for k in LINE_KEYS} | {"n_bootstrap": n_bootstrap}
    data["dataset_name"] = "+".join(dict.fromkeys(str(x["dataset_name"]) for x in lines))
    data["dataset_filename"] = str(files[0])
    data["pool_with"] = [str(p) for p in files[1:]]
    for key in ("w_original_key", "w_counterfactual_key", "w_rewritten_rewrite_key"):
        if key in first:
            data[key] = first[key]
    return from_dict(EffectsConfig, data, "config_plotting line", "effects")


def effects_from_plotting_config(
    path: Path, scored_dir: Path, pool: bool = True, n_bootstrap: int = 0
) -> list[dict]:
    """One effects dict per line, or per (concept, reward key) when ``pool`` (the paper's
    figures), computed from the scored files; each in the effect files' format."""
    lines = read_plotting_config(path)
    groups: dict[tuple, list[dict]] = {}
    for i, line in enumerate(lines):
        key = (str(line["concept"]), str(line["reward_key"])) if pool else (i,)
        groups.setdefault(key, []).append(line)
    out = []
    for members in groups.values():
        files = [scored_file(x, scored_dir, str(path)) for x in members]
        ec = _section(members, files, n_bootstrap)
        cols, group_by = pooled_columns(files, ec)
        result = effects_for_columns(cols, ec, files[0], group_by=group_by)
        if len(files) > 1:
            result["input"]["files"] = [str(p) for p in files]
        result.update(to_dict(ec))
        result.update(dataset_filename=files[0].name, config_plotting=str(path))
        log.info("%s: %s from %d file(s)", path.name, ec.dataset_name, len(files))
        out.append(clean(result))
    return out
