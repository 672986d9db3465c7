"""What both demos share: their log, scoring one dataset with several scorers in turn, the
effects of each, and the table of rewrite checks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rate.config import Config
from rate.io import read_json
from rate.pipeline import score_dataset, treatment_effects
from rate.rewrite.checks import PASSING, SUCCESS_LABEL, success_text
from rate.settings import setup_logging
from rate.store import Layout, meta_path, new_log_path


def start_log(layout: Layout, name: str, smoke: bool, verbose: bool) -> None:
    """Log to the terminal and to ``logs/<name>_<stamp>[_smoke_test].log``."""
    setup_logging("DEBUG" if verbose else "INFO", new_log_path(layout.logs, name, smoke))


def rewrite_checks(dataset: Path) -> dict:
    """The rewrite-check counts of each pass that create_dataset recorded for ``dataset``."""
    return read_json(meta_path(dataset))["rewrite_checks"]


def score_with(
    cfg: Config, layout: Layout, template: str, dataset: Path, models: list[str]
) -> tuple[Config, Path]:
    """score_dataset with each scoring template in turn, each adding its scores to the file the
    one before wrote. -> (the config of the last run, the last scored file)"""
    scored = dataset
    for i, model in enumerate(models):
        cfg = replace(
            cfg,
            scoring=replace(
                cfg.scoring,
                model=model,
                dataset_name=template,
                dataset_folder="rewrites" if i == 0 else "scored",
                dataset_filename=str(scored),
            ),
        )
        scored = score_dataset(cfg, layout)
    return cfg, scored


def effects_of(cfg: Config, layout: Layout, scored: Path, **effects) -> tuple[Config, Path]:
    """treatment_effects on ``scored`` with these effects keys set (and no groups)."""
    cfg = replace(
        cfg,
        effects=replace(cfg.effects, dataset_filename=str(scored), group_by=None, **effects),
    )
    return cfg, treatment_effects(cfg, layout)


def checks_table(rows: list[dict]) -> str:
    """Per template and pass: how many rewrites passed their checks, of all of them
    (:data:`rate.rewrite.checks.SUCCESS_LABEL`), and the failures."""
    lines = [
        f"| dataset | pass | {SUCCESS_LABEL} | missed | undefined | cut at length limit "
        "| empty | refusal | unchanged |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    seen = set()
    for row in rows:
        if row["template"] in seen:
            continue
        seen.add(row["template"])
        for name, c in row["checks"].items():
            passed = sum(c.get(k, 0) for k in PASSING)
            lines.append(
                f"| {row['template']} | {name} | {success_text(passed, c['n'])} | "
                f"{c['missed_target']} | {c['undefined']} | {c['length_limit']} | {c['empty']} | "
                f"{c['refusal']} | {c['unchanged']} |"
            )
    return "\n".join(lines)
