"""A profile's plan: its inputs checked, and the sweep that runs it written under ``--out``.

``rate profile`` is a sweep whose grid is generated from the attribute catalogue
(:mod:`rate.attributes`): one dataset template per attribute, each including the attribute's
file with the profile's source, and the one scoring template. Everything generated lies in
``OUT/work/``: ``templates/dataset_templates/``, ``templates/scoring_templates/`` (the
``--model`` template) and ``grid.yaml``, whose ``templates:`` key makes the sweep (and its
SLURM jobs) find them first. The sweep's markers and the pipeline's data stay where every
sweep keeps them (PROJECT_DIR); the sweep's name carries a digest of ``--out``, so two
profiles never share markers, and the markers' made-from records redo a step whose data file,
template or scorer changed.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rate.attributes import ALL, Attribute, select_attributes, write_attribute_template
from rate.catalog import (
    load_dataset_template,
    load_dataset_template_file,
    load_scoring_template,
    model_short_name,
)
from rate.errors import ConfigError, DataFileError
from rate.fs import ensure_dir
from rate.hf_models import hub_offline_error, is_local
from rate.io import atomic_write_text, read_jsonl_numbered
from rate.profile import RULES
from rate.settings import hub_unreachable
from rate.templates import DATASET_FOLDER, SCORING_FOLDER

log = logging.getLogger(__name__)

DEFAULT_LLM = "gpt-4o-2024-08-06"  # the catalogue's LLM model, for the OpenAI backends
SMOKE_N = 60  # examples per attribute in a smoke profile (fewer where the data has fewer)
WORK = "work"  # OUT/work/: the generated templates and grid


@dataclass
class Inputs:
    """What a profile is of: a source of (prompt, response) examples, a scorer, attributes."""

    source: dict[str, Any]
    n_examples: int
    where: str  # the data file or dataset template, for messages
    scorer: str  # a scoring template's name, or the hub id or folder of --model
    attributes: list[Attribute]
    left_out: dict[str, str]  # attribute -> why it is not in the profile
    rewriter: str = RULES
    rewriter_model: str | None = None
    group_by: str | None = None  # effects.group_by: also estimated per value of this field


def data_source(
    path: Path, prompt_field: str, response_field: str, group_by: str | None = None
) -> tuple[dict, int]:
    """The JSONL source of ``path``, every line checked now (one line naming the file, the
    line and the field otherwise; the ``group_by`` field too, a number or a string); ->
    (source, the number of examples)."""
    if not path.is_file():
        raise DataFileError(
            f"--data {path}: no such file; give a JSONL file with {prompt_field!r} and "
            f"{response_field!r} on each line"
        )
    rows = read_jsonl_numbered(path)
    if len(rows) < 2:
        raise DataFileError(f"--data {path}: holds {len(rows)} example(s); a profile needs >= 2")
    for line, row in rows:
        for field in (prompt_field, response_field):
            if not isinstance(row.get(field), str):
                got = "missing" if field not in row else f"a {type(row[field]).__name__}"
                raise DataFileError(
                    f"{path}:{line}: field {field!r} is {got}; every line needs a string "
                    f"{field!r} (fields present: {', '.join(sorted(row)) or 'none'})"
                )
        if group_by and not isinstance(row.get(group_by), (str, int, float, bool)):
            raise DataFileError(
                f"{path}:{line}: field {group_by!r} (--group-by) is missing or not a number or "
                f"a string; give every line one, or drop --group-by (fields present: "
                f"{', '.join(sorted(row)) or 'none'})"
            )
    source = {
        "kind": "jsonl",
        "path": str(path.resolve()),
        "text_field": response_field,
        "prompt_field": prompt_field,
    }
    return source, len(rows)


def template_source(name: str) -> tuple[dict, int, str]:
    """The source and n_examples of the dataset template ``name`` (or a .yaml file), a
    relative JSONL path made absolute; -> (source, n_examples, its file)."""
    if name.endswith((".yaml", ".yml")):
        path = Path(name)
        if not path.is_file():
            raise ConfigError(f"--dataset {name}: no such file; name a template or a .yaml file")
        template = load_dataset_template_file(path.resolve())
    else:
        template = load_dataset_template(name)
    source = dict(template.source)
    if source.get("kind") == "jsonl" and not Path(source["path"]).expanduser().is_absolute():
        source["path"] = str((Path(template.path).parent / source["path"]).resolve())
    return source, template.n_examples, template.path


def check_scorer(scorer: str | None, model: str | None) -> str:
    """The scorer a profile names: a scoring template (checked now), or a model by hub id or
    folder (a hub id fails now when the hub is offline)."""
    if (scorer is None) == (model is None):
        raise ConfigError("give exactly one of --scorer TEMPLATE and --model ORG/NAME|DIR")
    if scorer is not None:
        load_scoring_template(scorer)  # an unknown name: the close ones
        return scorer
    assert model is not None
    if is_local(model):
        if not Path(model).expanduser().is_dir():
            raise ConfigError(f"--model {model}: no such folder; give a model folder or ORG/NAME")
        return str(Path(model).expanduser().resolve())
    if "/" not in model:
        raise ConfigError(f"--model {model!r}: give a hub id (ORG/NAME) or a local folder")
    if why := hub_unreachable():
        raise hub_offline_error(model, None, "--model", why)
    return model


def choose_attributes(spec: str, rewriter: str) -> tuple[list[Attribute], dict[str, str]]:
    """The attributes ``--attributes`` names that ``rewriter`` can rewrite; with the offline
    rules, an attribute without rules is left out of ``all`` (and said so), and refused when
    named, unless it has weak rules (:attr:`Attribute.weak_rules`), which a name asks for."""
    try:
        chosen = select_attributes(spec)
    except ConfigError as err:  # an unknown name: say which flag holds it
        raise ConfigError(
            str(err) if "--attributes" in str(err) else f"--attributes: {err}"
        ) from None
    if rewriter != RULES:
        return chosen, {}
    named = spec.strip() != ALL
    kept, left_out = [], {}
    for a in chosen:
        if a.offline_rewriter:
            kept.append(a)
        elif named and a.weak_rules:
            log.warning(
                "profile: %s's offline rules reach its other W in under 90%% of texts; named, "
                "so rewritten with them (profile.md gives the rewrite success)", a.name,
            )  # fmt: skip
            kept.append(a)
        elif named:
            raise ConfigError(
                f"--attributes: {a.name} has no offline rules ({a.note.split(':')[0]}); drop it, "
                "or give --rewriter openai_batch|openai_chat|hf_generate"
            )
        else:
            left_out[a.name] = "no offline rules; an LLM --rewriter rewrites it"
    if left_out:
        log.info(
            "profile: left out %s (no offline rules; --rewriter openai_batch|openai_chat|"
            "hf_generate rewrites them)", ", ".join(left_out),
        )  # fmt: skip
    if not kept:
        raise ConfigError(f"--attributes {spec}: none of them has offline rules; give --rewriter")
    return kept, left_out


def _rewriter_override(inputs: Inputs) -> dict[str, Any]:
    if inputs.rewriter == RULES:
        return {}
    model = inputs.rewriter_model or (DEFAULT_LLM if inputs.rewriter.startswith("openai") else "")
    if not model:
        raise ConfigError(f"--rewriter {inputs.rewriter}: give its model with --rewriter-model")
    return {"rewriter": {"backend": inputs.rewriter, "model": model}}


def _tag(out: Path) -> str:
    """A name part for ``out``: its folder name, and a digest of its absolute path (two
    profiles in folders of the same name keep apart)."""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", out.resolve().name).strip("._") or "out"
    return f"{stem[:40]}_{hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:8]}"


def dataset_name(attribute: str, out: Path) -> str:
    return f"{attribute}_{_tag(out)}"


def write_plan(
    inputs: Inputs,
    out: Path,
    smoke: bool,
    bootstrap: int | None = None,
    also: tuple[str, ...] = (),
) -> Path:
    """Write the profile's templates and grid under ``out/work``; -> the grid file. ``also``:
    more scoring templates, each scoring the same rewrites (a sweep's cells share their
    dataset's rewrite step)."""
    work = out / WORK
    templates = work / "templates"
    scorer = inputs.scorer
    if "/" in scorer:  # a model by hub id or folder: a scoring template of its own
        scorer = f"{model_short_name(scorer)}_{_tag(out)}"
        record = {
            "name": scorer,
            "description": f"the sequence classifier {inputs.scorer} (rate profile --model)",
            "reward_key": model_short_name(inputs.scorer),
            "backend": "hf_classifier",
            "model": inputs.scorer,
        }
        path = templates / SCORING_FOLDER / f"{scorer}.yaml"
        ensure_dir(path.parent)
        atomic_write_text(path, yaml.safe_dump(record, sort_keys=False))
    overrides = {"one_sided_w": True, **_rewriter_override(inputs)}
    datasets = {}
    for a in inputs.attributes:
        name = dataset_name(a.name, out)
        own = overrides
        if inputs.rewriter == RULES and not a.offline_rewriter and a.weak_rules:
            own = {**overrides, "rewriter": a.weak_rules}
        write_attribute_template(
            a.name, inputs.source, inputs.n_examples, templates / DATASET_FOLDER, name, own
        )
        datasets[name] = {"concept": a.name}
    settings: dict[str, Any] = {"rewrites.smoke_n_examples": min(SMOKE_N, inputs.n_examples)}
    if bootstrap is not None:
        settings["effects.n_bootstrap"] = bootstrap
    if inputs.group_by:
        settings["effects.group_by"] = inputs.group_by
    grid = {
        "name": f"profile_{_tag(out)}",
        "description": f"rate profile of {inputs.scorer} on {inputs.where}",
        "templates": "templates",
        "datasets": datasets,
        "scorers": [scorer, *also],
        "set": settings,
        "smoke": smoke,
    }
    path = work / "grid.yaml"
    header = "# Written by rate profile: the profile's sweep (rerun rate profile, not this).\n"
    atomic_write_text(path, header + yaml.safe_dump(grid, sort_keys=False, allow_unicode=True))
    return path
