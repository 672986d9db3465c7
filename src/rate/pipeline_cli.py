"""`rate create_dataset | score_dataset | treatment_effects | plots | validate`: the stages.

Each stage reads the experiment config (``--config``, default experiments/config.yaml) with any
``--set section.key=value`` overrides, validates it before doing any work, writes its outputs
under PROJECT_DIR and a log of the run to PROJECT_DIR/logs/.
"""

from __future__ import annotations

import argparse
import logging
import textwrap
from functools import partial
from pathlib import Path

from rate.cli_args import Number, count
from rate.config import DEFAULT_CONFIG, STAGE_SECTIONS, Config, add_config_args
from rate.errors import ConfigError
from rate.io import json_text
from rate.score.options import LOGIT
from rate.settings import setup_logging
from rate.store import Layout, new_log_path

log = logging.getLogger(__name__)


# What each stage reads and writes (under PROJECT_DIR), and an example of its own.
STAGES = {
    "create_dataset": (
        "stage 1: classify W and rewrite twice",
        "Reads the config's rewrites section and the dataset template it names "
        "(dataset_templates/<rewrites.dataset_name>.yaml) and that template's source. Writes "
        "data/rewrites/<dataset>_dataset_<stamp>[_smoke_test].json (each example's original, "
        "rewrite and rewritten rewrite, and their checks) with a .meta.json beside it.",
        "rate create_dataset --set rewrites.dataset_name=imdb_sentiment --dry-run",
        "rewrites.n_examples=200",
    ),
    "score_dataset": (
        "stage 2: score every completion with a reward model",
        "Reads the scoring section: the newest (dataset_filename: latest) or the named file of "
        "data/rewrites (or data/scored, to add a model) of scoring.dataset_name, and the model: "
        "a scoring template, or --model ORG/NAME or a folder. Writes "
        "data/scored/<dataset>_<model>[_smoke_test]_scored_<stamp>.jsonl, the scores under the "
        "model's reward_key, with a .meta.json; a .partial file meanwhile, so a killed run "
        "resumes.",
        "rate score_dataset --model OpenAssistant/reward-model-deberta-v3-large-v2",
        "scoring.batch_size=16",
    ),
    "treatment_effects": (
        "stage 3: naive, single-rewrite and RATE",
        "Reads the effects section and the newest (or the named) scored file of "
        "effects.dataset_name with scores under effects.reward_key, in data/scored. Writes "
        "effects/<dataset>_<concept>_<score>_treatment_effects_<stamp>.json: the naive, "
        "single-rewrite and RATE effects with standard errors and intervals.",
        "rate treatment_effects --set effects.group_by=family",
        "effects.n_bootstrap=200",
    ),
    "plots": (
        "stage 4: figures from effect files",
        "Reads the effect files of plots.effects_files (latest: the newest of the effects "
        "section's dataset, concept and score) in effects/, and the scored file each names. "
        "Writes plots/<dataset>_<stamp>/: the figures (plots.formats), a summary and a table "
        "of sample rewrites.",
        "rate plots --set plots.formats=[png,pdf]",
        "plots.formats=[svg]",
    ),
}
FUNCS = {
    "create_dataset": "cmd_create_dataset",
    "score_dataset": "cmd_score_dataset",
    "treatment_effects": "cmd_treatment_effects",
    "plots": "cmd_plot",
}


def register(sub: argparse._SubParsersAction) -> None:
    for name, (help_, reads_writes, example, set_example) in STAGES.items():
        p = sub.add_parser(
            name,
            help=help_,
            description=textwrap.fill(f"{help_[0].upper()}{help_[1:]}. {reads_writes}", 79),
            epilog=f"example:\n  {example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_config_args(p, set_example)
        if name == "create_dataset":
            p.add_argument(
                "--dry-run",
                action="store_true",
                help="write the request files and a token and cost estimate, then stop",
            )
        if name == "score_dataset":
            p.add_argument(
                "--shard", metavar="I/N", help="score only shard I of N (numbered from 0)"
            )
            p.add_argument(
                "--model",
                metavar="ORG/NAME",
                help="score with this sequence classifier, a hub id or a local folder, without "
                "a scoring template (scoring.model; the hf_classifier defaults)",
            )
            p.add_argument(
                "--chat",
                action="store_true",
                help="with --model: read (prompt, response) through the model's chat template",
            )
            p.add_argument(
                "--label",
                type=Number(int, LOGIT),
                metavar="N",
                help="with --model: the logit that is the score (default 0)",
            )
        p.set_defaults(func=globals()[FUNCS[name]])
    p = sub.add_parser(
        "config",
        help="every config key with its type, default and help (or a complete commented YAML)",
    )
    p.add_argument("--config", type=Path, help="show this config's values (with --yaml)")
    p.add_argument("--set", dest="overrides", action="append", default=[])
    form = p.add_mutually_exclusive_group()
    form.add_argument("--yaml", action="store_true", help="a complete commented config file")
    form.add_argument("--markdown", action="store_true", help="the reference as a table")
    p.set_defaults(func=cmd_config)
    p = sub.add_parser("validate", help="check every template (and a config, if given)")
    p.add_argument("--config", type=Path, help="also validate this experiment config")
    p.add_argument("--set", dest="overrides", action="append", default=[])
    p.add_argument(
        "--sweep",
        type=Path,
        action="append",
        default=[],
        help="also validate this sweep grid and every cell's config (repeatable)",
    )
    p.set_defaults(func=cmd_validate)
    # Sharded scoring: `score_dataset --shard I/N` per shard (one GPU each; `rate submit` runs
    # them as a SLURM job array), then merge_scores writes the one scored file.
    p = sub.add_parser("merge_scores", help="merge the N shards of a sharded score_dataset")
    add_config_args(p)
    p.add_argument(
        "--shards",
        type=count(10_000, "shards"),
        required=True,
        metavar="N",
        help="number of shards",
    )
    p.add_argument("--array-job", help="the shards' SLURM array job id (named when one failed)")
    p.set_defaults(func=cmd_merge_scores)


def _start(args: argparse.Namespace, stage: str) -> tuple[Config, Layout]:
    # The stage's own sections must be in the config; the others may be left out.
    from rate.catalog import check_group_by, load_config  # the registries: not for `rate --help`

    reads = next((s for s in STAGE_SECTIONS if stage.startswith(s)), None)
    config = load_config(args.config, args.overrides, stage=reads)
    if reads in ("create_dataset", "pipeline"):
        check_group_by(config, str(args.config))
    layout = Layout.from_env()
    log_file = new_log_path(layout.logs, stage, config.smoke_test)
    setup_logging(
        "DEBUG" if getattr(args, "verbose", False) else "INFO",
        log_file,
        stderr_level="WARNING" if getattr(args, "quiet", False) else None,
    )
    log.info("%s with %s; PROJECT_DIR=%s; log %s", stage, args.config, layout.root, log_file)
    return config, layout


# Each command imports the stage it runs when it runs, to keep `rate --help` fast.


def cmd_create_dataset(args: argparse.Namespace) -> int:
    from rate.pipeline import create_dataset

    if args.dry_run:
        args.overrides = [*args.overrides, "rewrites.dry_run=true"]
    print(create_dataset(*_start(args, "create_dataset")))
    return 0


def cmd_score_dataset(args: argparse.Namespace) -> int:
    from rate.pipeline import score_dataset

    args.overrides = [*args.overrides, *model_overrides(args)]
    if args.shard:
        return cmd_score_shard(args)
    print(score_dataset(*_start(args, "score_dataset")))
    return 0


def model_overrides(args: argparse.Namespace) -> list[str]:
    """score_dataset's --model, --chat and --label as the config keys they set."""
    if args.model is None:
        if args.chat or args.label is not None:
            raise ConfigError(
                "--chat and --label go with --model ORG/NAME (a template says its own)"
            )
        return []
    out = [f"scoring.model={json_text(args.model)}", f"scoring.chat={json_text(args.chat)}"]
    return out + ([f"scoring.label={args.label}"] if args.label is not None else [])


def cmd_treatment_effects(args: argparse.Namespace) -> int:
    from rate.pipeline import treatment_effects

    print(treatment_effects(*_start(args, "treatment_effects")))
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from rate.pipeline import plot_stage

    for path in plot_stage(*_start(args, "plots")):
        print(path)
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    from rate.catalog import load_config
    from rate.config_docs import config_yaml, reference_markdown, reference_text, title_of

    if args.yaml:
        path = args.config or DEFAULT_CONFIG
        config = load_config(path, args.overrides, derive=False)
        title = title_of(path.read_text(encoding="utf-8")) or f"{path}, every key written out"
        print(config_yaml(config, title), end="")
    elif args.markdown:
        print(reference_markdown(), end="")
    else:
        print(reference_text(), end="")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from rate.catalog import check_group_by, load_config, validate_all
    from rate.sweep.grid import Sweep

    failures = 0
    for kind, name, error in validate_all():
        print(
            f"{'FAIL' if error else 'ok  '} {kind:8s} {name}" + (f"\n     {error}" if error else "")
        )
        failures += error is not None
    if args.config:
        check_group_by(load_config(args.config, args.overrides), str(args.config))
        print(f"ok   config   {args.config}")
    for path in args.sweep:
        print(f"ok   sweep    {path} ({len(Sweep(path).cells)} cells)")
    if failures:
        print(f"{failures} template(s) failed")
        return 1
    return 0


def cmd_score_shard(args: argparse.Namespace) -> int:
    from rate.score.shards import parse_shard, score_shard

    i, n = parse_shard(args.shard)
    print(score_shard(*_start(args, f"score_dataset_shard{i}of{n}"), i, n))
    return 0


def cmd_merge_scores(args: argparse.Namespace) -> int:
    from rate.score.shards import merge_shards
    from rate.slurm.jobs import explain_shard

    config, layout = _start(args, "merge_scores")
    explain = partial(explain_shard, args.array_job, logs=layout.logs) if args.array_job else None
    print(merge_shards(config, layout, args.shards, explain))
    return 0
