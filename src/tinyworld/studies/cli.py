"""`rate world study ...`: the estimators and the release tools against the tiny world's
ground truth (interval coverage, the semi-synthetic sweeps, the audit, the release)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from rate.cli_args import Commas, Setting, add_out_argument, count
from rate.io import json_text
from rate.parallel import add_jobs_argument
from rate.settings import project_dir
from tinyworld.cli_args import (
    BOOTSTRAP,
    PER_FAMILY,
    RL,
    SEED_FLAG,
    add_world_argument,
)
from tinyworld.studies.audit_cli import register_audit_study
from tinyworld.studies.cli_forecasts import cmd_frontier, cmd_tilt_study
from tinyworld.tilt.cli import add_forecast_arguments

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("study", help="the estimators and release tools against the world's truth")
    study = p.add_subparsers(dest="study", required=True, metavar="STUDY")

    c = study.add_parser("coverage", help="interval coverage over many samples")
    c.add_argument("--template", default="tinyrlhf_dune_pa", help="a tiny-world dataset template")
    c.add_argument("--scorers", default="tinyrlhf_rm,tinyrlhf_oracle")
    c.add_argument(
        "--pool",
        type=count(10**7, "examples"),
        default=100_000,
        help="examples in the population pool",
    )
    c.add_argument(
        "--n",
        type=count(10**7, "examples"),
        default=2000,
        help="examples per sample (the demo's size)",
    )
    c.add_argument("--seeds", type=count(100_000, "samples"), default=200)
    c.add_argument("--bootstrap", type=BOOTSTRAP, default=0, help="bootstrap resamples per sample")
    c.add_argument("--seed", type=SEED_FLAG, default=0)
    c.set_defaults(func=cmd_coverage)

    s = study.add_parser("synthetic", help="the paper's two semi-synthetic sweeps")
    s.add_argument("--pool", type=count(10**7, "examples"), default=40_000)
    s.add_argument("--n", type=count(10**7, "examples"), default=2000)
    s.add_argument("--seed", type=SEED_FLAG, default=0)
    s.set_defaults(func=cmd_synthetic)

    register_audit_study(study)

    r = study.add_parser(
        "release",
        help="RL with no, the ridge, our and the oracle correction, at two recipes, checked "
        "against the truth",
    )
    add_world_argument(r, required=True)
    add_out_argument(r, "folder of the runs (a rerun resumes)", required=True)
    r.add_argument(
        "--seeds", type=Commas(SEED_FLAG), default="0,1,2", help="RL seeds, comma-separated"
    )
    r.add_argument("--recipes", default="R1,R2", help="R1 (kl 0.1, 800 steps), R2 (0.05, 1,200)")
    r.add_argument("--corrections", default="none,ridge,ours,oracle")
    r.add_argument(
        "--steps", type=Setting(RL, "steps"), help="override every recipe's steps (CI-sized runs)"
    )
    r.add_argument(
        "--per-family", type=PER_FAMILY, default=500, help="evaluation prompts per family"
    )
    add_jobs_argument(r, "RL runs trained and evaluated")
    r.set_defaults(func=cmd_release_study)

    v = study.add_parser(
        "certify-coverage",
        help="certification intervals over many fresh gold sets, against the true quality",
    )
    add_world_argument(v, required=True)
    v.add_argument("--policy", action="append", required=True, metavar="NAME=DIR")
    v.add_argument("--wrapper", type=Path, help="the reward wrapper the certification uses")
    v.add_argument("--sets", type=count(100_000, "gold sets"), default=200, help="fresh gold sets")
    v.add_argument("--truth-per-family", type=PER_FAMILY, default=4000)
    v.add_argument(
        "--gold-per-family", type=PER_FAMILY, default=100, help="rows per family of each gold set"
    )
    add_out_argument(v, required=True)
    v.set_defaults(func=cmd_certify_coverage)

    g = study.add_parser(
        "gold",
        help="a fresh gold set labelled by the oracle (the labels a certificate's plan asks for)",
        description="Reference samples of fresh prompts with expert labels, written like "
        "WORLD/data/gold_calib.jsonl, for `rate world certify|assess --gold`. Example: rate "
        "study gold --world W --per-family 600 --out gold600.jsonl",
    )
    add_world_argument(g, required=True)
    g.add_argument("--per-family", type=PER_FAMILY, required=True, help="rows per family")
    g.add_argument(
        "--seed",
        type=SEED_FLAG,
        default=30_000,
        help="default 30000 (the coverage study's sets: 20000+)",
    )
    add_out_argument(g, "the .jsonl to write (must not exist)", required=True)
    g.set_defaults(func=cmd_gold)

    x = study.add_parser(
        "assess-truth", help="a `rate world assess`'s decisions against the oracle's rule"
    )
    add_world_argument(x, required=True)
    x.add_argument("--assessment", type=Path, required=True, help="its folder (assessment.json)")
    x.add_argument(
        "--per-family", type=PER_FAMILY, default=500, help="evaluation prompts per family"
    )
    x.set_defaults(func=cmd_assess_truth)

    w = study.add_parser(
        "sweep-truth", help="a `rate world recipe-sweep`'s checkpoints and choice against the truth"
    )
    add_world_argument(w, required=True)
    w.add_argument("--sweep", type=Path, required=True, help="the sweep's folder (sweep.json)")
    w.add_argument(
        "--per-family", type=PER_FAMILY, default=500, help="evaluation prompts per family"
    )
    w.set_defaults(func=cmd_sweep_truth)

    ti = study.add_parser("tilt", help="the tilt forecast's signs against the oracle's pi_beta")
    add_world_argument(ti, required=True)
    add_forecast_arguments(ti)
    ti.add_argument(
        "--max-n",
        type=count(10**8, "samples per family"),
        default=200_000,
        help="oracle samples per family, at most",
    )
    add_out_argument(ti, default=Path("experiments/tilt"))
    ti.add_argument(
        "--proposal",
        action="append",
        default=[],
        metavar="REWARD:BETA=DIR",
        help="a policy that the oracle also samples for that cell, e.g. corrected:0.05=RUN/"
        "checkpoint (an RL run at kl_coef = beta on that reward); repeat for more cells",
    )
    ti.set_defaults(func=cmd_tilt_study)

    fr = study.add_parser(
        "frontier",
        help="the highest true quality a policy can reach while gold labels can still certify it",
    )
    add_world_argument(fr, required=True)
    fr.add_argument(
        "--prompts",
        type=count(10**6, "prompts per family"),
        default=128,
        help="fresh prompts per family",
    )
    fr.add_argument(
        "--per-prompt",
        type=count(10**6, "samples per prompt"),
        default=4096,
        help="reference samples per prompt",
    )
    fr.add_argument(
        "--gold-per-family",
        type=PER_FAMILY,
        help="gold rows per family (default: the world's gold set)",
    )
    fr.add_argument("--bootstrap", type=BOOTSTRAP, default=200, help="resamples of the prompts")
    fr.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a policy to set beside the best true quality at its own KL; repeat for more",
    )
    fr.add_argument(
        "--per-family", type=PER_FAMILY, default=500, help="a policy's evaluation prompts"
    )
    add_out_argument(fr, "folder for frontier.{json,md}", required=True)
    fr.set_defaults(func=cmd_frontier)

    for q in (c, s):
        add_world_argument(q, "default: PROJECT_DIR/tinyrlhf/world")
        q.add_argument("--small", action="store_true", help="the small world (for tests)")
        add_out_argument(q, "output folder")


# Each command imports the study it runs when it runs, to keep `rate --help` fast.


def _world(args: argparse.Namespace) -> Path:
    from tinyworld.build import ensure_world

    world = args.world or project_dir() / "tinyrlhf" / ("world_small" if args.small else "world")
    ensure_world(world, args.small)
    return world


def cmd_coverage(args: argparse.Namespace) -> int:
    from rate.fs import ensure_dir
    from rate.io import atomic_write_json, atomic_write_text
    from rate.store import timestamp
    from tinyworld.studies.coverage import coverage_study, coverage_table

    out = ensure_dir(args.out or project_dir() / "effects" / "coverage")  # fails now, not after
    world = _world(args)
    study = coverage_study(
        args.template,
        args.scorers.split(","),
        world,
        pool_size=args.pool,
        n=args.n,
        seeds=args.seeds,
        seed=args.seed,
        n_bootstrap=args.bootstrap,
    )
    stem = out / f"coverage_{args.template}_{timestamp()}"
    table = coverage_table(study)
    atomic_write_json(stem.with_suffix(".json"), study)
    atomic_write_text(stem.with_suffix(".md"), table + "\n")
    print(table)
    print(f"\nwrote {stem}.json and .md")
    return 0


def cmd_synthetic(args: argparse.Namespace) -> int:
    from rate.fs import ensure_dir
    from tinyworld.studies.synthetic import run_synthetic

    out = ensure_dir(args.out or project_dir() / "plots" / "synthetic")  # fails now, not after
    world = _world(args)
    written = run_synthetic(world, out, pool_size=args.pool, n=args.n, seed=args.seed)
    print((out / "synthetic.md").read_text())
    for p in written:
        print(p)
    return 0


def cmd_release_study(args: argparse.Namespace) -> int:
    from rate.errors import ConfigError
    from rate.io import atomic_write_json, atomic_write_text
    from tinyworld import heap
    from tinyworld.studies.release import CORRECTIONS, RECIPES, markdown, run_release_study

    def names(value: str, known, what: str) -> list[str]:
        chosen = [v.strip() for v in value.split(",") if v.strip()]
        for v in chosen:
            if v not in known:
                raise ConfigError(f"--{what}: unknown {v!r}; choose from {', '.join(known)}")
        return chosen

    recipes = {n: dict(RECIPES[n]) for n in names(args.recipes, RECIPES, "recipes")}
    if args.steps:
        for recipe in recipes.values():
            recipe["steps"] = args.steps
    heap.keep_freed_memory()  # this command's process setting: it audits (tinyworld.heap)
    study = run_release_study(
        args.world,
        args.out,
        args.seeds,
        recipes,
        tuple(names(args.corrections, CORRECTIONS, "corrections")),
        args.per_family,
        args.jobs,
    )
    atomic_write_json(args.out / "release_study.json", study)
    table = markdown(study)
    atomic_write_text(args.out / "release_study.md", table)
    print(table, end="")
    print(f"wrote {args.out}/release_study.json and .md")
    return 0


def cmd_certify_coverage(args: argparse.Namespace) -> int:
    from rate.io import atomic_write_json, atomic_write_text
    from tinyworld.certify.cli import named_paths
    from tinyworld.studies.certify import coverage_study, markdown
    from tinyworld.studies.frontier import check_gold_rows

    policies = named_paths(args.policy)
    check_gold_rows(args.gold_per_family)
    study = coverage_study(
        args.world,
        policies,
        args.out,
        args.wrapper,
        args.sets,
        args.gold_per_family,
        truth_per_family=args.truth_per_family,
    )
    table = markdown(study)
    atomic_write_json(args.out / "certify_coverage.json", study)
    atomic_write_text(args.out / "certify_coverage.md", table)
    print(table, end="")
    return 0


def cmd_gold(args: argparse.Namespace) -> int:

    from tinyworld.data import require_world
    from tinyworld.studies.certify import write_fresh_gold
    from tinyworld.studies.frontier import check_gold_rows

    check_gold_rows(args.per_family)
    rows = write_fresh_gold(require_world(args.world), args.per_family, args.seed, args.out)
    print(json_text({"gold": str(args.out), "rows": rows, "seed": args.seed}))
    return 0


def cmd_assess_truth(args: argparse.Namespace) -> int:

    from rate.io import atomic_write_json, read_json
    from tinyworld.studies.release import check_assessment

    result = check_assessment(
        args.world, read_json(args.assessment / "assessment.json"), args.per_family
    )
    atomic_write_json(args.assessment / "assessment_truth.json", result)
    print("| run | decision | oracle | true quality | gain | worst family gain |")
    print("|---|---|---|---|---|---|")
    for r in result["runs"]:
        print(
            f"| {r['run']} | {r['decision']} | {'ship' if r['oracle_ship'] else 'no'} | "
            f"{r['true_quality']:.3f} | {r['gain']:+.3f} | {r['worst_family_gain']:+.3f} |"
        )
    print(json_text({k: result[k] for k in ("reference", "agree", "false_ships")}))
    return 0


def cmd_sweep_truth(args: argparse.Namespace) -> int:

    from rate.io import atomic_write_json, read_json
    from tinyworld.studies.release import check_sweep

    result = check_sweep(args.world, read_json(args.sweep / "sweep.json"), args.per_family)
    atomic_write_json(args.sweep / "sweep_truth.json", result)
    label_free = result["candidates"] and result["candidates"][0]["certified"] is None
    what = "corrected reward (no label)" if label_free else "certified (selection half)"
    print(f"| kl_coef | step | decision | {what} | true quality | worst family gain |")
    print("|---|---|---|---|---|---|")
    for r in result["candidates"]:
        value = r["corrected_reward"] if label_free else r["certified"]
        print(
            f"| {r['kl_coef']:g} | {r['step']} | {r['decision']} | {value:.3f} | "
            f"{r['true_quality']:.3f} | {r['worst_family_gain']:+.3f} |"
        )
    print(json_text({k: result[k] for k in ("reference", "best", "chosen", "chosen_within_best")}))
    return 0
