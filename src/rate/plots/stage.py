"""Stage 4, plots: every figure and table of some effect files (and the scored file behind
them, and the synthetic sweeps) into one folder of PROJECT_DIR/plots.

Every figure is rendered once per format and written atomically; the figures are built on the
Agg canvas (:mod:`rate.plots.figures`), never through pyplot, so nothing is shown and no
display is needed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from rate.config import Config, config_record
from rate.errors import ConfigError, DataFileError
from rate.fs import ensure_dir
from rate.io import atomic_write_bytes, atomic_write_text, read_json
from rate.plots.distributions import score_distribution_figure
from rate.plots.figures import effects_figure, figure_bytes, rewrite_bias_figure
from rate.plots.select import glob_inside, is_glob, run_kind
from rate.plots.sweeps import sweep_figure
from rate.plots.tables import effects_summary_table, sample_rewrites_table
from rate.records import read_examples, reward_keys
from rate.results.record import run_record, write_run_record
from rate.results.values import shape_problem
from rate.store import Layout, effects_stem, is_name_part, publish_dir, resolve_input, temp_dir

log = logging.getLogger(__name__)

FORMATS = ("png", "pdf", "svg")


def _save(fig: Figure, out_dir: Path, stem: str, formats: Sequence[str]) -> list[Path]:
    """Render `fig` once per format and write each file atomically."""
    written = []
    for fmt in formats:
        path = out_dir / f"{stem}.{fmt}"
        atomic_write_bytes(path, figure_bytes(fig, fmt))
        log.info("wrote %s", path)
        written.append(path)
    fig.clear()  # frees the artists now; the figure was never registered with pyplot
    return written


def _read_effects(path: Path) -> dict:
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataFileError(
            f"{path}: expected an effect file (a JSON object from treatment_effects)"
        )
    problem = shape_problem(data)
    if problem:
        raise DataFileError(f"{path}: {problem}; run treatment_effects again for it")
    return data


def _with_file(path: Path, err: DataFileError) -> DataFileError:
    msg = str(err)
    return err if msg.startswith(str(path)) else DataFileError(f"{path}: {msg}")


def _reward_key(rows: list[dict], given: str | None, effects: list[dict], path: Path) -> str:
    """The reward key to draw: the one given, else the effect files' (if the scored file has
    it), else the scored file's only one."""
    if given:
        return given
    present = reward_keys(rows)
    for e in effects:
        if e.get("reward_key") in present:
            return e["reward_key"]
    if len(present) == 1:
        return present[0]
    raise DataFileError(
        f"{path}: reward keys {present or '(none)'}; say which to draw (plots: reward_key)"
    )


def make_plots(
    effects_paths: Sequence[Path],
    out_dir: Path,
    formats: Sequence[str] = ("png",),
    scored_path: Path | None = None,
    reward_key: str | None = None,
    sweep_paths: Sequence[Path] = (),
) -> list[Path]:
    """Write every figure (and the tables) into out_dir; -> the written paths.

    Files: effects_normalized and effects_raw (all effect files), rewrite_bias_<effect file
    stem> (one per file), effects_summary.md; with a scored file, score_distributions and
    sample_rewrites.md; sweep_<sweep file stem> per sweep.
    """
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ConfigError(f"figure formats {list(formats)}: use some of {', '.join(FORMATS)}")
    out_dir = ensure_dir(out_dir)
    paths = [Path(p) for p in effects_paths]
    effects = [_read_effects(p) for p in paths]
    written: list[Path] = []
    if effects:
        written += _save(
            effects_figure(effects, normalized=True), out_dir, "effects_normalized", formats
        )
        written += _save(effects_figure(effects, normalized=False), out_dir, "effects_raw", formats)
        stems: set[str] = set()
        for p, e in zip(paths, effects, strict=True):
            stem = f"rewrite_bias_{p.stem}"
            while stem in stems:  # the same name from two folders
                stem += "_"
            stems.add(stem)
            written += _save(rewrite_bias_figure(e), out_dir, stem, formats)
        table = effects_summary_table(effects, names=[p.name for p in paths])
        atomic_write_text(out_dir / "effects_summary.md", table)
        written.append(out_dir / "effects_summary.md")
    if scored_path is not None:
        scored_path = Path(scored_path)
        rows = read_examples(scored_path)
        key = _reward_key(rows, reward_key, effects, scored_path)
        try:
            fig = score_distribution_figure(rows, key)
        except DataFileError as err:
            raise _with_file(scored_path, err) from None
        written += _save(fig, out_dir, "score_distributions", formats)
        table = f"Sample rewrites from `{scored_path.name}`\n\n" + sample_rewrites_table(rows)
        atomic_write_text(out_dir / "sample_rewrites.md", table)
        written.append(out_dir / "sample_rewrites.md")
    for p in map(Path, sweep_paths):
        sweep = read_json(p)
        if not isinstance(sweep, dict):
            raise DataFileError(
                f"{p}: expected a sweep object; see the format in rate.plots.sweeps"
            )
        try:
            fig = sweep_figure(sweep)
        except DataFileError as err:
            raise _with_file(p, err) from None
        written += _save(fig, out_dir, f"sweep_{p.stem}", formats)
    log.info("make_plots: %d files in %s", len(written), out_dir)
    return written


KEY = "plots.effects_files"


def effect_files(config: Config, layout: Layout) -> list[Path]:
    """The effect files to draw: names in effects/ (or absolute), glob patterns relative to
    effects/ (files of the config's run kind, oldest first; never outside PROJECT_DIR), or
    'latest' (the newest for the effects section's dataset, concept and score)."""
    out: list[Path] = []
    for name in config.plots.effects_files:
        if is_glob(name):
            found = run_kind(glob_inside(layout.effects, name, layout.root, KEY), config.smoke_test)
            if not found:
                kind = "smoke-test" if config.smoke_test else "full-run (non-smoke)"
                raise ConfigError(
                    f"{KEY}: {name!r} matches no {kind} effect file in {layout.effects}; "
                    "patterns are relative to that folder, e.g. '*_treatment_effects_*.json'"
                )
            out += found
            continue
        stem = ""
        if name == "latest":
            ec = config.need("effects", f"plots ({KEY}: latest)")
            stem = effects_stem(ec.dataset_name, ec.concept, ec.score)
        out.append(resolve_input(layout.effects, name, stem, ".json", config.smoke_test, KEY))
    return list(dict.fromkeys(out))


def plot_stage(config: Config, layout: Layout) -> list[Path]:
    """Run stage 4 with ``config``; -> the written files (and, beside them in
    PROJECT_DIR/results, the run's results record).

    The folder is built aside (a hidden temporary folder) and renamed into place when every
    file is written, as the world builder does: a killed run leaves no half-filled folder."""
    paths = effect_files(config, layout)
    first = read_json(paths[0])
    scored = Path(first["input"]["file"]) if isinstance(first.get("input"), dict) else None
    if scored is not None and not scored.is_file():
        scored = None
    # Without an effects section (the files named): the first file's own keys.
    ec = config.effects
    stem = ec.dataset_name if ec else str(first.get("dataset_name") or "effects")
    if not is_name_part(stem):  # a name from a data file becomes a folder name: never a path
        stem = "effects"
    sweeps = sorted((layout.plots / "synthetic").glob("*.json"))
    with temp_dir(layout.plots, stem) as tmp:
        written = make_plots(
            paths,
            tmp,
            formats=tuple(config.plots.formats),
            scored_path=scored,
            reward_key=ec.reward_key if ec else first.get("reward_key"),
            sweep_paths=sweeps,
        )
        out_dir = publish_dir(tmp, layout.plots, stem, config.smoke_test)
    written = [out_dir / p.relative_to(tmp) for p in written]
    log.info("wrote %d figure files to %s", len(written), out_dir)
    # The plots end a pipeline run: its record names every file the four stages wrote.
    inputs = [*paths, *([scored] if scored is not None else [])]
    record = run_record(paths, config_record(config), layout.root, (inputs, written))
    write_run_record(layout.results, record)
    return written
