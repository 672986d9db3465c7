"""The experiment config: one YAML file, a section per stage, typed and validated before work.

The sections and key names are those of the reference pipeline (``smoke_test``, ``rewrites``,
``scoring``, ``effects``) so that its users recognise them; ``plots`` and ``slurm`` are ours.
``--set section.key=value`` overrides any key (the value is read as YAML). As with the
reference's scripts, each stage reads only its own section: a config may hold just that one
(:data:`STAGE_SECTIONS`).
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rate.errors import ConfigError
from rate.schema import SEED, Bound, from_dict, opt, parse_assignment, to_dict
from rate.settings import checkout_root
from rate.slurm_options import SlurmConfig
from rate.store import is_name_part

log = logging.getLogger(__name__)

DEFAULT_CONFIG = Path("experiments") / "config.yaml"


def check_name(where: str, key: str, value: str) -> None:
    """A name that becomes part of an output path must be one plain name: never a path."""
    if not is_name_part(value):
        raise ConfigError(
            f"{where}: key '{key}' is {value!r}; it names output files, so use letters, digits "
            "and '_', '.', '-' (no '/', no '..', not starting with '.')"
        )


@dataclass
class RewritesConfig:
    """Stage 1, create_dataset."""

    dataset_name: str = opt(help="a dataset template (dataset_templates/<name>.yaml)")
    n_examples: int | None = opt(
        None,
        help="exactly this many examples; null: the template's",
        bound=Bound(2, high=10**8, why="one per W value at least"),
    )
    smoke_n_examples: int = opt(
        60,
        help="examples in smoke runs (both W values are always present)",
        bound=Bound(2, high=10**8),
    )
    seed: int = opt(
        0,
        help="sampling, subsampling and the rewriter's randomness",
        bound=SEED,
    )
    batch_size: int = opt(512, help="texts per rewriter call", bound=Bound(1, high=10**6))
    dry_run: bool = opt(
        False,
        help="write the rewrite requests and a token and cost estimate, then stop (no "
        "rewriting; or `rate create_dataset --dry-run`)",
    )
    prices: dict[str, dict[str, float]] = opt(
        help="synchronous list prices, USD per million tokens, for the dry run's estimate: "
        "{model: {input_per_1m, output_per_1m}}; the Batch API's half price is applied. Check "
        "the provider's current prices",
        factory=lambda: {
            "gpt-4o-2024-08-06": {"input_per_1m": 2.5, "output_per_1m": 10.0},
            "gpt-4o-mini-2024-07-18": {"input_per_1m": 0.15, "output_per_1m": 0.6},
        },
    )

    def validate(self, where: str) -> None:
        for model, price in self.prices.items():
            if set(price) != {"input_per_1m", "output_per_1m"} or min(price.values()) < 0:
                raise ConfigError(
                    f"{where}: rewrites.prices.{model} needs input_per_1m and output_per_1m "
                    "(USD per million tokens, >= 0)"
                )


@dataclass
class ScoringConfig:
    """Stage 2, score_dataset."""

    model: str = opt(
        help="a scoring template (scoring_templates/<name>.yaml), or a sequence classifier "
        "without one: a hub id (org/name) or a local folder, read with the hf_classifier "
        "defaults (`rate score_dataset --model ORG/NAME`)"
    )
    dataset_folder: str = opt(
        "rewrites",
        help="rewrites: score a new dataset; scored: add a reward model to a scored file",
    )
    dataset_name: str = opt(
        "", help="the dataset name of the input and the output; empty: rewrites.dataset_name"
    )
    dataset_filename: str = opt("latest", help="a file in dataset_folder, or 'latest'")
    batch_size: int | None = opt(
        None, help="texts per forward pass; null: the template's", bound=Bound(1, high=10**6)
    )
    chunk_size: int = opt(
        512,
        bound=Bound(1, high=10**7),
        help="examples per durable save; a chunk's texts are sorted by length into batches (a "
        "larger chunk pads less) and a kill loses at most one chunk",
    )
    chat: bool = opt(
        False,
        help="a model named by hub id or folder reads (prompt, response) through its chat "
        "template (a template says this itself)",
    )
    label: int = opt(
        0,
        help="a model named by hub id or folder: which logit is the score (0: the first)",
        bound=Bound(0, high=10**6, why="a logit's position"),
    )
    cache: bool = opt(
        True,
        help="take the scores of texts this scorer has scored before (any file, any run) from "
        "the project's score cache, PROJECT_DIR/data/scored/.score_cache, and keep new ones "
        "there; false: score every text",
    )

    def validate(self, where: str) -> None:
        if self.dataset_name:
            check_name(where, "scoring.dataset_name", self.dataset_name)
        if self.dataset_folder not in ("rewrites", "scored"):
            raise ConfigError(
                f"{where}: key 'scoring.dataset_folder' must be 'rewrites' or 'scored', "
                f"got {self.dataset_folder!r}"
            )


def _bootstrap_cost(n: int) -> str:
    # Each resample keeps a mean per quantity and W group, and takes ~1 ms per 1e5 examples.
    return f"{n:,} resamples keep {n * 16 * 8 / 1e9:.1f} GB of means and take hours"


@dataclass
class EffectsConfig:
    """Stage 3, treatment_effects."""

    concept: str = opt(help="the attribute W, for the output name and the plots")
    dataset_name: str = opt(
        "",
        help="names the input (scored files of this dataset) and the output; empty: "
        "scoring.dataset_name, else rewrites.dataset_name",
    )
    score: str = opt(
        "",
        help="the reward model's short name, for the output name and the plots; empty: the "
        "scoring section's model",
    )
    reward_key: str = opt(
        "",
        help="the key of the scores in the scored file; empty: the reward_key of the scoring "
        "section's model",
    )
    dataset_filename: str = opt(
        "latest", help="a file in data/scored (or dataset_folder), or 'latest'"
    )
    dataset_folder: str | None = opt(None, help="a sub-folder of data/scored, as in the reference")
    pool_with: list[str] = opt(
        help="more scored files (names in the same folder, or paths) pooled with "
        "dataset_filename into one estimate, as the paper's figures pool datasets per concept "
        "(IMDB and ELI5 for length); each file is also estimated alone, as a group by source",
        factory=list,
    )
    w_original_key: str = opt(
        "original", help="the completion that is the original (the reference's key)"
    )
    w_counterfactual_key: str = opt(
        "rewrite", help="the completion that is the rewrite, W flipped (the reference's key)"
    )
    w_rewritten_rewrite_key: str = opt(
        "rewritten rewrite",
        help="the completion that is the rewrite of the rewrite, W back (the reference's key)",
    )
    n_bootstrap: int = opt(
        1000,
        help="bootstrap resamples for percentile intervals (0: none)",
        bound=Bound(0, high=10**6, cost=_bootstrap_cost),
    )
    bootstrap_seed: int = opt(
        0,
        help="the seed of the bootstrap resamples",
        bound=SEED,
    )
    level: float = opt(
        0.95, help="the coverage of every interval", bound=Bound(0, strict=True, high=1, below=True)
    )
    group_by: str | None = opt(
        None, help="also estimate per value of this field of the examples or their metadata"
    )
    drop_incomplete: bool = opt(
        False, help="exclude examples missing a completion or a score (else an error)"
    )
    only_successful_rewrites: bool = opt(
        False,
        help="keep only examples whose two rewrites passed create_dataset's checks (reached "
        "their target W, not empty, not a refusal, not unchanged); the output says how many",
    )
    max_failed_rewrites: float = opt(
        0.2,
        bound=Bound(0, high=1, why="a share"),
        help="warn (once per run; not with only_successful_rewrites, which leaves them out), "
        "and note in the output, when more than this share of a pass's rewrites failed their "
        "checks: RATE takes each rewrite for the same text with W flipped, so failed ones "
        "shrink the estimate toward 0 by up to their share",
    )

    def validate(self, where: str) -> None:
        for key in ("dataset_name", "concept", "score"):
            if getattr(self, key) or key == "concept":  # empty: derived (catalog)
                check_name(where, f"effects.{key}", getattr(self, key))
        if self.dataset_folder is not None:
            parts = Path(self.dataset_folder).parts
            if not parts or not all(is_name_part(part) for part in parts):
                raise ConfigError(
                    f"{where}: key 'effects.dataset_folder' is {self.dataset_folder!r}; name a "
                    "sub-folder of data/scored (a relative path without '..'), or null"
                )
        names = self.completion_keys()
        if len(set(names)) < 3:
            raise ConfigError(
                f"{where}: effects.w_original_key, w_counterfactual_key and "
                f"w_rewritten_rewrite_key must name three different completions, got {names}"
            )

    def completion_keys(self) -> tuple[str, str, str]:
        """(original, rewrite, rewrite of the rewrite): the completions the estimators read."""
        return (self.w_original_key, self.w_counterfactual_key, self.w_rewritten_rewrite_key)


@dataclass
class PlotsConfig:
    """Stage 4, plots."""

    effects_files: list[str] = opt(
        help="effect files to draw: names in effects/, glob patterns relative to effects/ (e.g. "
        "'*_pa_*.json'; the files of the run kind, never outside PROJECT_DIR), or 'latest' (the "
        "newest of the effects section's dataset, concept and score)",
        factory=lambda: ["latest"],
    )
    formats: list[str] = opt(help="figure formats: png, pdf, svg", factory=lambda: ["png"])

    def validate(self, where: str) -> None:
        bad = [f for f in self.formats if f not in ("png", "pdf", "svg")]
        if bad:
            raise ConfigError(f"{where}: plots.formats: unknown {bad}; use png, pdf or svg")


# The sections each stage reads; a config that runs one stage may hold only its sections.
STAGE_SECTIONS = {
    "create_dataset": ("rewrites",),
    "score_dataset": ("scoring",),
    "merge_scores": ("scoring",),
    "treatment_effects": ("effects",),
    "plots": (),  # and effects, to find the 'latest' effect file
    "pipeline": ("rewrites", "scoring", "effects"),
}


@dataclass
class Config:
    """An experiment: one section per stage (a stage's own section may stand alone)."""

    # help="": the sections' comments are their classes' docstrings.
    rewrites: RewritesConfig | None = opt(None, help="")
    scoring: ScoringConfig | None = opt(None, help="")
    effects: EffectsConfig | None = opt(None, help="")
    smoke_test: bool = opt(
        False, help="small runs that cost little; output names end in _smoke_test"
    )
    plots: PlotsConfig = opt(help="stage 4", factory=PlotsConfig)
    slurm: SlurmConfig = opt(help="jobs when PARTITION is set", factory=SlurmConfig)

    def need(self, section: str, stage: str, where: str = "the config") -> Any:
        """The section ``stage`` reads; its absence is an error naming the key."""
        value = getattr(self, section)
        if value is None:
            raise ConfigError(
                f"{where}: missing required key '{section}': {stage} reads the {section} "
                f"section; add it (`rate config --yaml` writes every key)"
            )
        return value


def find_config(path: Path) -> Path:
    """``path`` as given, or, a relative one that is not there, the checkout's file of that
    name (so that `rate` finds experiments/config.yaml from any folder)."""
    path = Path(path)
    root = checkout_root()
    if path.exists() or path.is_absolute() or root is None or not (root / path).is_file():
        return path
    log.info("%s is not in %s: using the checkout's, %s", path, Path.cwd(), root / path)
    return root / path


def read_yaml(path: Path, missing: str) -> Any:
    """A YAML file's data; every failure is one ConfigError naming the file (``missing``: what
    to say, after the path, when it is not there)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: {missing}") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read ({err.strerror})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise ConfigError(f"{path}{line}: not valid YAML ({problem}); fix the file") from None


def _read_config(path: Path) -> Any:
    looked = f" (nor in the checkout, {checkout_root()})" if checkout_root() else ""
    return read_yaml(
        path,
        f"no such config file in {Path.cwd()}{looked}; the defaults are "
        "experiments/config.yaml and experiments/smoke.yaml",
    )


def apply_override(data: dict, text: str, where: str = "--set") -> None:
    """Apply ``section.key=value`` (:func:`rate.schema.parse_value`) to the raw config."""
    parts, value = parse_assignment(text, where)
    node = data
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            prefix = ".".join(parts[: i + 1])
            raise ConfigError(f"{where} {text!r}: '{prefix}' is a value, not a section")
        node = child
    node[parts[-1]] = value


def add_config_args(p: argparse.ArgumentParser, example: str = "smoke_test=true") -> None:
    """--config and the repeatable --set overrides, as every stage command takes them
    (``example``: a key of the command's own section, for its help)."""
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="experiment config (YAML)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help=f"override a config key (repeatable), e.g. --set {example}",
    )


def read_config(
    path: Path, overrides: list[str] = (), stage: str | None = None
) -> tuple[Config, str]:
    """Read, override and type an experiment config, -> (config, where: the file and the
    overrides, for messages). With ``stage``, the sections that stage reads must be there
    (:data:`STAGE_SECTIONS`). The templates it names are checked, and the names it leaves to
    be derived filled in, by :func:`rate.catalog.load_config`."""
    path = find_config(path)
    data = _read_config(path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections (rewrites:, scoring:, ...)")
    for text in overrides:
        apply_override(data, text)
    where = str(path) + (f" (with --set {' '.join(overrides)})" if overrides else "")
    config = from_dict(Config, data, where)
    for section in STAGE_SECTIONS.get(stage, ()):
        config.need(section, stage, where)
    return config, where


def config_record(config: Config) -> dict:
    """The config as plain data, for metadata records."""
    return to_dict(config)
