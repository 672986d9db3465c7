"""Stage 4, plots: the figures of the effect files the config names, into PROJECT_DIR/plots."""

from __future__ import annotations

import logging
from pathlib import Path

from rate.config import Config
from rate.store import Layout, resolve_input, timestamp

log = logging.getLogger(__name__)


def effect_files(config: Config, layout: Layout) -> list[Path]:
    """The effect files to draw: names in effects/ or 'latest' (the newest for the effects
    section's dataset, concept and score)."""
    ec = config.effects
    stem = f"{ec.dataset_name}_{ec.concept}_{ec.score}_treatment_effects"
    out = []
    for name in config.plots.effects_files:
        out.append(resolve_input(layout.effects, name, stem, ".json", config.smoke_test))
    return list(dict.fromkeys(out))


def plot_stage(config: Config, layout: Layout) -> list[Path]:
    from rate.io import read_json
    from rate.plots import make_plots

    paths = effect_files(config, layout)
    first = read_json(paths[0])
    scored = Path(first["input"]["file"]) if isinstance(first.get("input"), dict) else None
    if scored is not None and not scored.is_file():
        scored = None
    suffix = "_smoke_test" if config.smoke_test else ""
    out_dir = layout.plots / f"{config.effects.dataset_name}_{timestamp()}{suffix}"
    sweeps = sorted((layout.plots / "synthetic").glob("*.json"))
    written = make_plots(
        paths,
        out_dir,
        formats=tuple(config.plots.formats),
        scored_path=scored,
        reward_key=config.effects.reward_key,
        sweep_paths=sweeps,
    )
    log.info("wrote %d figure files to %s", len(written), out_dir)
    return written
