"""The experiment config: one YAML file, a section per stage, typed and validated before work.

The sections and key names are those of the reference pipeline (``smoke_test``, ``rewrites``,
``scoring``, ``effects``) so that its users recognise them; ``plots`` and ``world`` are ours.
``--set section.key=value`` overrides any key (the value is read as YAML).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rate.errors import ConfigError
from rate.schema import from_dict, to_dict
from rate.settings import project_dir
from rate.suggest import unknown_name_message

DEFAULT_CONFIG = Path("experiments") / "config.yaml"


@dataclass
class RewritesConfig:
    """Stage 1, create_dataset."""

    dataset_name: str  # a dataset template (dataset_templates/<name>.yaml)
    n_examples: int | None = None  # exactly this many examples; None: the template's
    smoke_n_examples: int = 60  # in smoke runs (both W values are always present)
    seed: int = 0  # sampling, subsampling and the rewriter's randomness
    batch_size: int = 512  # texts per rewriter call
    # Write the rewrite requests and a token and cost estimate, then stop (no rewriting).
    dry_run: bool = False
    # Synchronous list prices per model, USD per million tokens, for the dry run's estimate:
    # {model: {input_per_1m: .., output_per_1m: ..}} (the Batch API's discount is applied).
    prices: dict[str, dict[str, float]] = field(default_factory=dict)

    def validate(self, where: str) -> None:
        for model, price in self.prices.items():
            if set(price) != {"input_per_1m", "output_per_1m"} or min(price.values()) < 0:
                raise ConfigError(
                    f"{where}: rewrites.prices.{model} needs input_per_1m and output_per_1m "
                    "(USD per million tokens, >= 0)"
                )
        if self.n_examples is not None and self.n_examples < 2:
            raise ConfigError(f"{where}: rewrites.n_examples must be >= 2 (one per W value)")
        if self.smoke_n_examples < 2:
            raise ConfigError(f"{where}: rewrites.smoke_n_examples must be >= 2")
        if self.batch_size < 1:
            raise ConfigError(f"{where}: rewrites.batch_size must be >= 1")


@dataclass
class ScoringConfig:
    """Stage 2, score_dataset."""

    model: str  # a scoring template (scoring_templates/<name>.yaml)
    dataset_folder: str = "rewrites"  # rewrites: a new scored file; scored: add a reward model
    dataset_name: str = ""  # the rewrites' dataset name (names the input and the output)
    dataset_filename: str = "latest"  # a file in dataset_folder, or 'latest'
    batch_size: int | None = None  # None: the scoring template's
    # Examples per durable save. Texts of a chunk are sorted by length into batches, so a
    # larger chunk pads less; a kill loses at most one chunk of work.
    chunk_size: int = 512

    def validate(self, where: str) -> None:
        if self.chunk_size < 1:
            raise ConfigError(f"{where}: scoring.chunk_size must be >= 1")
        if self.dataset_folder not in ("rewrites", "scored"):
            raise ConfigError(
                f"{where}: key 'scoring.dataset_folder' must be 'rewrites' or 'scored', "
                f"got {self.dataset_folder!r}"
            )
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError(f"{where}: scoring.batch_size must be >= 1")


@dataclass
class EffectsConfig:
    """Stage 3, treatment_effects."""

    dataset_name: str  # names the input (scored files starting with it) and the output
    concept: str  # the attribute W, for the output name and the plots
    score: str  # the reward model's short name, for the output name and the plots
    reward_key: str  # the key of the scores in the scored file
    dataset_filename: str = "latest"  # a file in data/scored (or dataset_folder), or 'latest'
    dataset_folder: str | None = None  # a sub-folder of data/scored, as in the reference
    n_bootstrap: int = 1000  # bootstrap resamples for percentile intervals (0: none)
    bootstrap_seed: int = 0
    level: float = 0.95  # interval coverage
    group_by: str | None = None  # also estimate per value of this example field (e.g. family)
    drop_incomplete: bool = False  # exclude examples missing a completion or a score
    # Keep only examples whose two rewrites passed create_dataset's checks (reached their
    # target W, not empty, not a refusal, not unchanged); the output says how many were kept.
    only_successful_rewrites: bool = False

    def validate(self, where: str) -> None:
        if self.n_bootstrap < 0:
            raise ConfigError(f"{where}: effects.n_bootstrap must be >= 0")
        if not 0 < self.level < 1:
            raise ConfigError(f"{where}: effects.level must be between 0 and 1, e.g. 0.95")


@dataclass
class PlotsConfig:
    """Stage 4, plots: which effect files to draw (file names in effects/, or 'latest')."""

    effects_files: list[str] = field(default_factory=lambda: ["latest"])
    formats: list[str] = field(default_factory=lambda: ["png"])

    def validate(self, where: str) -> None:
        bad = [f for f in self.formats if f not in ("png", "pdf", "svg")]
        if bad:
            raise ConfigError(f"{where}: plots.formats: unknown {bad}; use png, pdf or svg")


# sbatch options that rate sets itself for every job; extra_args must not repeat them.
_RATE_SBATCH_OPTIONS = ("--output", "--error", "--array", "--dependency", "--parsable", "--wrap")
_SLURM_TIME = re.compile(r"^(\d+-)?\d+(:\d+){0,2}$|^UNLIMITED$|^INFINITE$")
_SLURM_MEM = re.compile(r"^\d+[KMGT]?$")


@dataclass
class StageResources:
    """What one stage's SLURM job asks for; a null key takes the stage's default (rate.slurm)."""

    # Wall-time limit: MM, HH:MM:SS or D-HH:MM:SS, quoted ('12:00:00'; YAML reads 12:00:00
    # unquoted as a number of seconds, which is refused).
    time: str | int | None = None
    cpus: int | None = None  # --cpus-per-task
    mem: str | None = None  # --mem, e.g. 16G
    gpus: int | None = None  # --gres=gpu:N; score_dataset asks for 1 by default
    extra_args: list[str] = field(default_factory=list)  # more sbatch options for this stage


@dataclass
class SlurmConfig:
    """SLURM jobs for the stages, used when PARTITION is set (`make`) or by `rate submit`."""

    partition: str | None = None  # null: the PARTITION setting (.env or the command line)
    # score_dataset as a job array of this many shards (one GPU each) and one merge job.
    shards: int = 1
    extra_args: list[str] = field(default_factory=list)  # sbatch options for every job
    create_dataset: StageResources = field(default_factory=StageResources)
    score_dataset: StageResources = field(default_factory=StageResources)
    merge_scores: StageResources = field(default_factory=StageResources)
    treatment_effects: StageResources = field(default_factory=StageResources)
    plots: StageResources = field(default_factory=StageResources)

    def stages(self) -> dict[str, StageResources]:
        return {
            "create_dataset": self.create_dataset,
            "score_dataset": self.score_dataset,
            "merge_scores": self.merge_scores,
            "treatment_effects": self.treatment_effects,
            "plots": self.plots,
        }

    def validate(self, where: str) -> None:
        if self.partition is not None and not self.partition.strip():
            raise ConfigError(f"{where}: slurm.partition is empty; name a partition or use null")
        if self.shards < 1:
            raise ConfigError(f"{where}: slurm.shards must be >= 1 (1: no job array)")
        _check_sbatch_args(self.extra_args, f"{where}: slurm.extra_args")
        for stage, res in self.stages().items():
            key = f"{where}: slurm.{stage}"
            if isinstance(res.time, int):
                raise ConfigError(
                    f"{key}.time: YAML read this time as the number {res.time}; quote it, e.g. "
                    "time: '12:00:00' (or --set \"slurm.score_dataset.time='12:00:00'\")"
                )
            if res.time is not None and not _SLURM_TIME.match(res.time):
                raise ConfigError(
                    f"{key}.time: {res.time!r} is not a SLURM time; write MM, HH:MM:SS or "
                    "D-HH:MM:SS, e.g. '04:00:00'"
                )
            if res.mem is not None and not _SLURM_MEM.match(res.mem):
                raise ConfigError(
                    f"{key}.mem: {res.mem!r} is not a SLURM memory size; write e.g. 16G or 500M"
                )
            if res.cpus is not None and res.cpus < 1:
                raise ConfigError(f"{key}.cpus must be >= 1")
            if res.gpus is not None and res.gpus < 0:
                raise ConfigError(f"{key}.gpus must be >= 0")
            _check_sbatch_args(res.extra_args, f"{key}.extra_args")


def _check_sbatch_args(args: list[str], key: str) -> None:
    for arg in args:
        if not arg.startswith("-") or "\n" in arg:
            raise ConfigError(f"{key}: {arg!r} is not an sbatch option; write e.g. '--account=lab'")
        if arg.split("=", 1)[0] in _RATE_SBATCH_OPTIONS:
            raise ConfigError(
                f"{key}: {arg.split('=', 1)[0]} is set by rate itself (logs go to "
                "PROJECT_DIR/logs/<stage>_<job id>.out); remove it"
            )


@dataclass
class Config:
    rewrites: RewritesConfig
    scoring: ScoringConfig
    effects: EffectsConfig
    smoke_test: bool = False
    plots: PlotsConfig = field(default_factory=PlotsConfig)
    world: str | None = None  # the tiny RLHF world; None: PROJECT_DIR/tinyrlhf/world
    slurm: SlurmConfig = field(default_factory=SlurmConfig)  # jobs when PARTITION is set

    def world_dir(self) -> Path:
        return Path(self.world).expanduser() if self.world else project_dir() / "tinyrlhf" / "world"


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such config file; the defaults are experiments/config.yaml and "
            "experiments/smoke.yaml"
        ) from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read ({err.strerror})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise ConfigError(f"{path}{line}: not valid YAML ({problem}); fix the file") from None


def apply_override(data: dict, text: str, where: str = "--set") -> None:
    """Apply ``section.key=value`` (value parsed as YAML) to the raw config mapping."""
    if "=" not in text:
        raise ConfigError(f"{where} {text!r}: expected section.key=value, e.g. effects.level=0.9")
    dotted, raw = text.split("=", 1)
    parts = [p.strip() for p in dotted.split(".")]
    if not all(parts):
        raise ConfigError(f"{where} {text!r}: empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
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


def load_config(path: Path, overrides: list[str] = ()) -> Config:
    """Read, override and validate an experiment config; every error names the file and key."""
    data = _read_yaml(path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections (rewrites:, scoring:, ...)")
    for text in overrides:
        apply_override(data, text)
    where = str(path) + (f" (with --set {' '.join(overrides)})" if overrides else "")
    config = from_dict(Config, data, where)
    check_templates(config, where)
    return config


def check_templates(config: Config, where: str) -> None:
    """The templates the config names must exist (close names are suggested)."""
    from rate.templates import dataset_template_names, scoring_template_names

    for kind, key, name, known in (
        (
            "dataset template",
            "rewrites.dataset_name",
            config.rewrites.dataset_name,
            dataset_template_names(),
        ),
        ("scoring template", "scoring.model", config.scoring.model, scoring_template_names()),
    ):
        if name not in known:
            raise ConfigError(
                unknown_name_message(kind, name, known, where=f"{where}: key '{key}'")
            )


def config_record(config: Config) -> dict:
    """The config as plain data, for metadata records."""
    return to_dict(config)
