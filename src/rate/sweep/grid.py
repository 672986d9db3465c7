"""A sweep's grid file: dataset templates x scoring templates, validated as every input is.

::

    name: offline                    # names PROJECT_DIR/sweeps/<name>/
    base_config: ../config.yaml      # optional, relative to this file; default the checkout's
                                     #   experiments/config.yaml (smoke.yaml when smoke: true)
    smoke: true                      # smoke-size runs (smoke_test in every cell's config)
    datasets:                        # dataset templates, each with the concept W it varies
      drugreview_sentiment: {concept: sentiment}
      drugreview_length: {concept: length, effects: {n_bootstrap: 200}}
    scorers: [minilm_sentiment, vader]
    set: {effects.n_bootstrap: 500}  # config keys for every cell, as --set takes them

A cell is one dataset with one scorer. Its config is the base config with, in this order,
``effects.group_by: null`` (the report reads no groups), ``smoke_test``, the ``set`` keys,
the dataset's ``effects`` keys, and last the keys that say which cell it is (the templates,
the names and the files each stage reads), which the grid may not set.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rate.catalog import (
    check_templates,
    load_dataset_template,
    load_scoring_template,
    scoring_template_of,
)
from rate.config import Config, apply_override, read_yaml
from rate.errors import ConfigError, TemplateError
from rate.io import json_text
from rate.provenance import MadeFrom, made_from
from rate.schema import from_dict, opt, to_dict
from rate.settings import checkout_root
from rate.store import is_name_part
from rate.suggest import unknown_name_message
from rate.templates import dataset_template_names, scoring_template_names

# The keys that say which cell a config is: the sweep sets them, a grid may not.
CELL_KEYS = (
    "rewrites.dataset_name",
    "scoring.model",
    "scoring.dataset_name",
    "scoring.dataset_folder",
    "scoring.dataset_filename",
    "effects.dataset_name",
    "effects.concept",
    "effects.score",
    "effects.reward_key",
    "effects.dataset_filename",
    "effects.dataset_folder",
)


@dataclass
class DatasetEntry:
    """One dataset template of the grid."""

    concept: str = opt(help="the attribute W the template varies (names effect files and rows)")
    effects: dict[str, Any] = opt(
        help="effects keys for this dataset's cells, e.g. {pool_with: [...]}", factory=dict
    )

    def validate(self, where: str) -> None:
        if not is_name_part(self.concept):
            raise ConfigError(
                f"{where}: concept {self.concept!r} names output files; use letters, digits "
                "and '_', '.', '-'"
            )


@dataclass
class Grid:
    """A sweep: every dataset template with every scoring template."""

    name: str = opt(help="the sweep's name: PROJECT_DIR/sweeps/<name>/")
    datasets: dict[str, DatasetEntry] = opt(help="dataset templates, each with its concept")
    scorers: list[str] = opt(help="scoring templates")
    base_config: str | None = opt(
        None,
        help="the experiment config the cells start from (relative to the grid file); null: "
        "experiments/config.yaml, or experiments/smoke.yaml when smoke is true",
    )
    set: dict[str, Any] = opt(
        help="config keys for every cell, {section.key: value}, as --set takes them",
        factory=dict,
    )
    smoke: bool = opt(False, help="smoke-size runs: smoke_test in every cell's config")
    description: str = opt("", help="what the grid is for")
    templates: str | None = opt(
        None,
        help="a folder of templates searched first (relative to this file), as a "
        "RATE_TEMPLATE_PATH entry: a generated grid's own dataset and scoring templates",
    )

    def validate(self, where: str) -> None:
        if not is_name_part(self.name):
            raise ConfigError(
                f"{where}: key 'name' is {self.name!r}; it names a folder, so use letters, "
                "digits and '_', '.', '-'"
            )
        if not self.datasets:
            raise ConfigError(f"{where}: key 'datasets' is empty; name at least one template")
        if not self.scorers:
            raise ConfigError(f"{where}: key 'scorers' is empty; name at least one template")
        known = dataset_template_names()
        for name in self.datasets:
            if name not in known:
                raise ConfigError(
                    unknown_name_message("dataset template", name, known, f"{where}: 'datasets'")
                )
        known = scoring_template_names()
        for name in self.scorers:
            if name not in known:
                raise ConfigError(
                    unknown_name_message("scoring template", name, known, f"{where}: 'scorers'")
                )
        twice = sorted({s for s in self.scorers if self.scorers.count(s) > 1})
        if twice:
            raise ConfigError(f"{where}: key 'scorers' names {', '.join(twice)} twice")
        for key, value in self.set.items():
            if "." not in key and isinstance(value, dict):
                raise ConfigError(
                    f"{where}: key 'set.{key}' is a whole section; set its keys one by one, "
                    f"e.g. set: {{{key}.<key>: value}}, so the base config's other keys stay"
                )
            if key in CELL_KEYS:
                raise ConfigError(
                    f"{where}: key 'set.{key}' is set by the sweep for each cell; name the "
                    "templates under datasets: and scorers: instead"
                )
            if key == "smoke_test":  # the grid's smoke also names its folder and markers
                raise ConfigError(
                    f"{where}: key 'set.smoke_test': use the grid's own key 'smoke: "
                    f"{str(bool(value)).lower()}', which also keeps smoke and full runs in "
                    "folders of their own"
                )
        for name, entry in self.datasets.items():
            for key in entry.effects:
                if f"effects.{key}" in CELL_KEYS:
                    raise ConfigError(
                        f"{where}: key 'datasets.{name}.effects.{key}' is set by the sweep "
                        "for each cell; remove it"
                    )


@dataclass(frozen=True)
class Cell:
    """One dataset template with one scoring template."""

    dataset: str
    scorer: str
    concept: str
    reward_key: str

    @property
    def label(self) -> str:
        return f"{self.dataset} x {self.scorer}"


def default_base(smoke: bool) -> Path:
    """The checkout's experiments/config.yaml (smoke.yaml), else the current folder's."""
    root = checkout_root() or Path.cwd()
    return root / "experiments" / ("smoke.yaml" if smoke else "config.yaml")


def _put(data: dict, key: str, value: Any, where: str) -> None:
    """Set the dotted ``key`` of raw config data (as --set does)."""
    apply_override(data, f"{key}={json_text(value)}", where)


class Sweep:
    """A loaded grid: its cells and the config of each, every one validated on load."""

    def __init__(
        self, path: Path, base_override: Path | None = None, smoke: bool | None = None
    ) -> None:
        self.path = path
        raw = read_yaml(path, "no such grid file (see experiments/sweeps/ for examples)")
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: expected a mapping (name:, datasets:, scorers:, ...)")
        if smoke is not None:  # --smoke: the grid at smoke size
            raw = {**raw, "smoke": smoke}
        self.raw = raw
        self.templates: Path | None = None
        if isinstance(raw.get("templates"), str):  # before validation: it names templates
            folder = (path.parent / raw["templates"]).resolve()
            self.templates = use_template_root(folder, f"{path}: key 'templates'")
        self.grid: Grid = from_dict(Grid, raw, str(path))
        if base_override is not None:
            self.base = base_override
        elif self.grid.base_config:
            self.base = (path.parent / self.grid.base_config).resolve()
        else:
            self.base = default_base(self.grid.smoke)
        base = read_yaml(self.base, f"no such base config (key 'base_config' of {path})")
        if base is None:
            base = {}
        if not isinstance(base, dict):
            raise ConfigError(f"{self.base}: expected a mapping of sections (rewrites:, ...)")
        self.base_data = base
        self.cells = [
            Cell(ds, sc, entry.concept, self._reward_key(sc))
            for ds, entry in self.grid.datasets.items()
            for sc in self.grid.scorers
        ]
        for cell in self.cells:  # every cell's config is checked before any work
            self.config(cell)

    @property
    def name(self) -> str:
        return self.grid.name

    def _reward_key(self, scorer: str) -> str:
        try:
            return load_scoring_template(scorer).reward_key
        except TemplateError as err:
            raise ConfigError(f"{self.path}: key 'scorers': {err}") from None

    def set_overrides(self) -> list[str]:
        """The grid's ``smoke`` and ``set`` keys as --set overrides (for SLURM resources)."""
        keys = {"smoke_test": self.grid.smoke, **self.grid.set}
        return [f"{k}={json_text(v)}" for k, v in keys.items()]

    def config(
        self, cell: Cell, dataset_file: Path | None = None, scored_file: Path | None = None
    ) -> Config:
        """The config of ``cell``; scoring reads ``dataset_file`` and the effects
        ``scored_file`` (or 'latest' until they exist)."""
        data = copy.deepcopy(self.base_data)
        where = f"{self.path} (cell {cell.label}, base config {self.base})"
        _put(data, "effects.group_by", None, where)
        _put(data, "smoke_test", self.grid.smoke, where)
        for key, value in self.grid.set.items():
            _put(data, key, value, f"{self.path}: key 'set'")
        for key, value in self.grid.datasets[cell.dataset].effects.items():
            _put(data, f"effects.{key}", value, f"{self.path}: key 'datasets.{cell.dataset}'")
        cell_keys = {
            "rewrites.dataset_name": cell.dataset,
            "scoring.model": cell.scorer,
            "scoring.dataset_name": cell.dataset,
            "scoring.dataset_folder": "rewrites",
            "scoring.dataset_filename": str(dataset_file) if dataset_file else "latest",
            "effects.dataset_name": cell.dataset,
            "effects.concept": cell.concept,
            "effects.score": cell.scorer,
            "effects.reward_key": cell.reward_key,
            "effects.dataset_filename": str(scored_file) if scored_file else "latest",
            "effects.dataset_folder": None,
        }
        for key, value in cell_keys.items():
            _put(data, key, value, where)
        config = from_dict(Config, data, where)
        check_templates(config, where)
        return config

    def grid_record(self) -> dict:
        """The grid as written, for a copy that SLURM jobs read (elsewhere: its template
        folder made absolute)."""
        record = {k: v for k, v in self.raw.items() if k != "base_config"}
        if self.grid.templates:
            record["templates"] = str(self.templates)
        return record


def use_template_root(folder: Path, where: str) -> Path:
    """Search ``folder`` for templates before any other root, for the rest of this process
    (the first entry of RATE_TEMPLATE_PATH, which the stages' template lookups read)."""
    if not folder.is_dir():
        raise ConfigError(f"{where}: no such folder {folder}; name a folder of templates")
    entries = [p for p in os.environ.get("RATE_TEMPLATE_PATH", "").split(":") if p.strip()]
    rest = [e for e in entries if Path(e) != folder]
    os.environ["RATE_TEMPLATE_PATH"] = ":".join([str(folder), *rest])
    return folder


# The parts of a config each kind of step reads: a change to them redoes the step.
STEP_SECTIONS = {
    "rewrite": ("rewrites", "smoke_test"),
    "score": ("scoring", "smoke_test"),
    "effects": ("effects", "smoke_test"),
}


def template_inputs(config: Config, kind: str) -> dict[str, dict[str, str]]:
    """What the template parts a step of ``kind`` builds read besides their options (a
    plugin's world folder, resolved now): {part: inputs}."""
    if kind == "rewrite":
        template = load_dataset_template(config.rewrites.dataset_name)
        return {part: options.inputs() for part, (_, options) in template.parts.items()}
    if kind == "score":
        scoring = config.scoring
        return {
            "scorer": scoring_template_of(scoring.model, scoring.chat, scoring.label).spec.inputs()
        }
    return {}


def _template_files(config: Config, kind: str) -> list[str]:
    """The files of the templates a step of ``kind`` reads, include chains and the scoring
    templates its dataset template's parts read W with included."""
    if kind == "rewrite":
        template = load_dataset_template(config.rewrites.dataset_name)
        files = [template.path, *template.includes]
        for _, options in template.parts.values():
            for name in options.scoring_templates():
                scorer = load_scoring_template(name)
                files += [scorer.path, *scorer.includes]
        return files
    if kind == "score":
        sc = config.scoring
        scorer = scoring_template_of(sc.model, sc.chat, sc.label)
        return [f for f in (scorer.path, *scorer.includes) if f]  # a model id has no file
    return []


# The code whose every edit redoes a step of this kind: the steps that cost nothing but time
# here. A rewrite (paid) or a scoring (hours of GPU) is redone for its inputs, never because
# rate itself was edited or upgraded.
STEP_CODE = {"effects": "rate.effects.stage", "report": "rate.sweep.report"}


def step_made_from(config: Config, kind: str) -> MadeFrom:
    """What a step of ``kind`` is made from besides its config and upstream files
    (:func:`rate.provenance.made_from`): its templates' files and each input its parts read
    (a world folder, a model folder), and for the cheap steps the code; a step is redone
    when one of them differs, and the log names it."""
    inputs = {
        f"{part}.{key}": Path(path)
        for part, paths in template_inputs(config, kind).items()
        for key, path in sorted(paths.items())
    }
    files = [Path(f) for f in _template_files(config, kind)]
    return made_from(code=STEP_CODE.get(kind), templates=files or None, **inputs)


def fingerprint(config: Config, kind: str) -> str:
    """A hash of what a step of ``kind`` reads from its config and its templates' inputs."""
    data = to_dict(config)
    part = {key: data[key] for key in STEP_SECTIONS[kind]}
    inputs = {k: v for k, v in template_inputs(config, kind).items() if v}
    if inputs:  # only where a part reads more than its options: other keys stay as they were
        part["inputs"] = inputs
    return hashlib.sha256(json.dumps(part, sort_keys=True, default=str).encode()).hexdigest()[:16]
