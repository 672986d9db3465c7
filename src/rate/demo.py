"""`rate demo`: the main job on the embedded default, the tiny RLHF world.

Builds the world under PROJECT_DIR if it is absent (or reuses it), then runs the four stages for
the world's shortcut syllables ('pa' in dune, 'he' in ember) and a control ('pa' in anvil, where
no vendor paid for it): create_dataset, score_dataset with the reward model and with the oracle
(true quality), treatment_effects on each, plots. It prints, per concept and scorer, the naive,
single-rewrite and RATE estimates beside the true effect (from the perfect rewriter).
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from dataclasses import replace
from pathlib import Path

from rate.config import DEFAULT_CONFIG, load_config
from rate.settings import project_dir
from rate.store import Layout, timestamp

log = logging.getLogger(__name__)

DEMO_TEMPLATES = (
    ("tinyrlhf_dune_pa", "pa"),
    ("tinyrlhf_ember_he", "he"),
    ("tinyrlhf_anvil_pa", "pa"),
)
SCORERS = (
    ("tinyrlhf_rm", "tinyrlhf_rm", "reward model"),
    ("tinyrlhf_oracle", "true_quality", "true quality"),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the main job: RATE on the tiny world, checked against truth")
    p.add_argument(
        "--world", type=Path, help="world directory (default: PROJECT_DIR/tinyrlhf/world)"
    )
    p.add_argument("--small", action="store_true", help="use the small world (seconds, for tests)")
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="base experiment config")
    p.add_argument("--smoke", action="store_true", help="smoke-test sizes (60 examples)")
    p.add_argument("--runs", action="store_true", help="also print the world's RL runs table")
    p.add_argument(
        "--per-family", type=int, default=500, help="prompts per family for the runs table"
    )
    p.set_defaults(func=run_demo)


def world_is_built(world: Path) -> bool:
    return (world / "world_info.json").is_file()


def ensure_world(world: Path, small: bool) -> None:
    from rate.tinyrlhf.build import build_world
    from rate.tinyrlhf.worldconfig import load_world_config

    if world_is_built(world):
        log.info("reusing the world at %s", world)
    else:
        log.info("building the tiny RLHF world at %s (minutes on 2 cores)", world)
        build_world(load_world_config(small=small), world)


def score_with(cfg, layout: Layout, template: str, dataset: Path, models: list[str]):
    """score_dataset with each scoring template in turn, each adding its scores to the file the
    one before wrote. -> (the config of the last run, the last scored file)"""
    from rate.score.stage import score_dataset

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


def run_pipeline(config_path: Path, world: Path, smoke: bool, layout: Layout) -> list[dict]:
    """The four stages for each demo concept and scorer; -> one row per (concept, scorer)."""
    from rate.effects import treatment_effects
    from rate.io import read_json
    from rate.plot_stage import plot_stage
    from rate.rewrite.stage import create_dataset

    base = load_config(config_path, [f"world={world}", f"smoke_test={str(smoke).lower()}"])
    rows, effect_files = [], []
    for template, concept in DEMO_TEMPLATES:
        cfg = replace(base, rewrites=replace(base.rewrites, dataset_name=template))
        dataset = create_dataset(cfg, layout)
        checks = read_json(dataset.with_name(dataset.name + ".meta.json"))["rewrite_checks"]
        cfg, scored = score_with(cfg, layout, template, dataset, [m for m, _, _ in SCORERS])
        for model, key, label in SCORERS:
            cfg = replace(
                cfg,
                effects=replace(
                    cfg.effects,
                    dataset_name=template,
                    concept=concept,
                    score=model,
                    reward_key=key,
                    dataset_filename=str(scored),
                    group_by=None,
                ),
            )
            path = treatment_effects(cfg, layout)
            effect_files.append(path.name)
            rows.append(
                {
                    "template": template,
                    "scorer": label,
                    "file": path,
                    "checks": checks,
                    **read_json(path),
                }
            )
    plot_cfg = replace(base, plots=replace(base.plots, effects_files=effect_files))
    plot_stage(plot_cfg, layout)
    return rows


def _cell(value: float | None, se: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:+.4f} ({se:.4f})" if se is not None else f"{value:+.4f}"


def _err(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}"


def demo_table(rows: list[dict]) -> str:
    """Per concept, scorer and estimand: naive (ATE row only), single rewrite, RATE and the
    truth (raw units, SE in brackets), and each estimator's error in units of its own SE."""
    lines = [
        "| concept | scorer | estimand | naive | single rewrite | RATE | true effect | "
        "error/SE: naive, single, RATE |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        truth = r.get("truth") or {}
        err = r.get("error_in_se") or {}
        for est in ("ATE", "ATT", "ATU"):
            single, rate = f"{est}_single_rewrite", f"{est}_rewritten_rewrite"
            naive = _cell(r["naive_effect"], r["naive_effect_stderr"]) if est == "ATE" else ""
            naive_err = _err(err.get("naive_effect")) if est == "ATE" else "-"
            n = f" (n {r['Y1_count']}/{r['Y0_count']})" if est == "ATE" else ""
            lines.append(
                f"| {r['template']}{n} | {r['scorer']} | {est} | {naive} | "
                f"{_cell(r[single], r[f'{single}_stderr'])} | "
                f"{_cell(r[rate], r[f'{rate}_stderr'])} | "
                f"{_cell(truth.get(est), truth.get(f'{est}_stderr'))} | "
                f"{naive_err}, {_err(err.get(single))}, {_err(err.get(rate))} |"
            )
    return "\n".join(lines)


def run_demo(args: argparse.Namespace) -> int:
    from rate.settings import setup_logging

    name = "world_small" if args.small else "world"
    world = args.world or project_dir() / "tinyrlhf" / name
    layout = Layout.from_env()
    setup_logging(
        "DEBUG" if getattr(args, "verbose", False) else "INFO",
        layout.logs / f"demo_{timestamp()}{'_smoke_test' if args.smoke else ''}.log",
    )
    ensure_world(world, args.small)
    if args.runs:
        print_runs_table(world, args.per_family)
    t0 = time.perf_counter()
    rows = run_pipeline(args.config, world, args.smoke, layout)
    seconds = time.perf_counter() - t0
    print(f"\nRATE on the tiny RLHF world at {world} ({seconds:.0f} s after the world)")
    print(
        "Raw score units (SE); n is W=1/W=0. The true effect compares each original with its "
        "perfect rewrite\n(W changed, nothing else); error/SE is (estimate - truth) / the "
        "estimate's own SE.\n"
    )
    print(demo_table(rows))
    from rate.demo_text import checks_table

    print("\nRewrite checks (W re-read from each rewrite):\n")
    print(checks_table(rows))
    print(f"\nOutputs under {layout.root}: data/rewrites, data/scored, effects, plots, logs")
    return 0


def print_runs_table(world: Path, per_family: int = 500) -> None:
    from rate.tinyrlhf.evaluate import evaluate_policy, load_oracle
    from rate.tinyrlhf.models import load_policy, load_reward_model
    from rate.tinyrlhf.report_table import quality_table

    oracle, _ = load_oracle(world)
    reference = load_policy(world / "policy")
    rm = load_reward_model(world / "reward_model")
    reports = {"reference": evaluate_policy(reference, oracle, rm, reference, per_family)}
    for run in sorted(p for p in (world / "runs").iterdir() if (p / "checkpoint").is_dir()):
        reports[run.name] = evaluate_policy(
            load_policy(run / "checkpoint"), oracle, rm, reference, per_family
        )
    print(f"\nTiny RLHF world at {world}: the reference policy and its RL runs")
    print(f"True quality is the oracle's expected expert label; {per_family} prompts per family.\n")
    print(quality_table(reports))
