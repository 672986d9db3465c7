"""The catalogue: find, load and validate templates against every registry, and load an
experiment config against the templates it names.

It stands above the registries (sources, W rules, rewriters, perturbations, scorers), the
template parser and the config schema (:mod:`rate.config`), none of which import it; stages get
their templates, and the commands their configs, from here.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from rate.config import (
    Config,
    EffectsConfig,
    ScoringConfig,
    check_name,
    read_config,
)
from rate.datasets.registry import PERTURBATIONS, RULES, SOURCES
from rate.errors import ConfigError, RateError, TemplateError
from rate.registry import typed_part
from rate.rewrite.backends import REWRITERS
from rate.score.backends import SCORERS
from rate.suggest import unknown_name_message
from rate.templates import (
    DATASET_FOLDER,
    SCORING_FOLDER,
    DatasetKinds,
    DatasetTemplate,
    ScoringTemplate,
    dataset_template_names,
    find_template,
    parse_dataset_template,
    parse_scoring_template,
    scoring_template_names,
)

log = logging.getLogger(__name__)

KINDS = DatasetKinds(SOURCES, RULES, REWRITERS, PERTURBATIONS)


def load_dataset_template(name: str) -> DatasetTemplate:
    """The dataset template ``name``, every part validated (and the scoring templates its
    parts read W with)."""
    return load_dataset_template_file(find_template(DATASET_FOLDER, name, "dataset template"))


def load_dataset_template_file(path: Path) -> DatasetTemplate:
    """The dataset template in ``path`` (a file anywhere, e.g. one a command writes), every
    part validated as :func:`load_dataset_template` does."""
    template = parse_dataset_template(path, KINDS)
    for part, (_, options) in template.parts.items():
        for scorer in options.scoring_templates():
            try:
                load_scoring_template(scorer)
            except TemplateError as err:
                raise TemplateError(f"{template.path}: key '{part}.scorer': {err}") from None
    return template


def load_scoring_template(name: str) -> ScoringTemplate:
    """The scoring template ``name``, its backend's options validated."""
    return parse_scoring_template(find_template(SCORING_FOLDER, name, "scoring template"), SCORERS)


def names_a_model(model: str) -> bool:
    """Whether ``scoring.model`` names a model rather than a template: a hub id (``org/name``:
    a template's name has no '/') or a local folder, and no template has that name."""
    if model in scoring_template_names():
        return False
    return "/" in model or Path(model).expanduser().is_dir()


def model_short_name(model: str) -> str:
    """A model's name in output file names: the last part of its hub id or folder, with any
    character a file name part may not hold replaced by '_'."""
    last = Path(model.rstrip("/")).name or "model"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", last).lstrip(".") or "model"


def model_template(model: str, chat: bool = False, label: int = 0) -> ScoringTemplate:
    """A scoring template for a hub id or local folder without a YAML file: the generic
    sequence classifier (``hf_classifier`` with its defaults, ``chat`` and ``label`` as
    given); its scores go under the model as written, the reference's reward key."""
    options = {"model": model, "chat": chat, "label": label}
    template = ScoringTemplate(model_short_name(model), model, "hf_classifier")
    where = f"scoring.model {model!r} (a model without a scoring template)"
    _, template.spec = typed_part(
        SCORERS, {"backend": "hf_classifier", **options}, "backend", where, ""
    )
    template.options = options
    return template


def scoring_template_of(model: str, chat: bool = False, label: int = 0) -> ScoringTemplate:
    """What ``scoring.model`` names: a scoring template, or a model (:func:`names_a_model`)."""
    if names_a_model(model):
        return model_template(model, chat, label)
    return load_scoring_template(model)


def templates_with_reward_key(reward_key: str) -> set[str]:
    """The names of the scoring templates that write their scores under ``reward_key`` (a
    template that does not load is left out: it cannot have written a scored file)."""
    names = set()
    for name in scoring_template_names():
        try:
            if load_scoring_template(name).reward_key == reward_key:
                names.add(name)
        except RateError:
            continue
    return names


def validate_all() -> list[tuple[str, str, str | None]]:
    """Load every template; -> [(kind, name, error or None)]. Never stops at the first error."""
    results: list[tuple[str, str, str | None]] = []
    for kind, names, load in (
        ("dataset", dataset_template_names(), load_dataset_template),
        ("scoring", scoring_template_names(), load_scoring_template),
    ):
        for name in names:
            try:
                load(name)
                results.append((kind, name, None))
            except TemplateError as err:
                results.append((kind, name, str(err)))
    return results


# Fields every example of a rewritten dataset has (besides its source's metadata).
ROW_FIELDS = frozenset({"index", "key", "w_original", "reward_question"})


def check_group_by(config: Config, where: str = "the config") -> None:
    """effects.group_by must name a field the examples will have, where the dataset
    template's source says which fields its examples carry: checked before stage 1, not
    found missing at stage 3."""
    ec, rw = config.effects, config.rewrites
    if ec is None or rw is None or not ec.group_by:
        return
    fields = load_dataset_template(rw.dataset_name).part("source").example_fields()
    if fields is None or ec.group_by in fields | ROW_FIELDS:
        return
    raise ConfigError(
        f"{where}: key 'effects.group_by' is {ec.group_by!r}, but the examples of dataset "
        f"template {rw.dataset_name!r} have the fields {', '.join(sorted(fields | ROW_FIELDS))}; "
        "use one of them, or null"
    )


def load_config(
    path: Path, overrides: list[str] = (), stage: str | None = None, derive: bool = True
) -> Config:
    """Read, override and validate an experiment config; every error names the file and key.
    With ``stage``, the sections that stage reads must be there (:data:`STAGE_SECTIONS`); the
    others may be left out. ``derive``: fill in the names a section takes from the one before
    (:func:`derive_names`; off to write the config out as it is written)."""
    config, where = read_config(path, overrides, stage)
    check_templates(config, where)
    if derive:
        derive_names(config, where)
    return config


def derive_names(config: Config, where: str) -> None:
    """Fill in the names a later section takes from the one before.

    One key names the experiment: scoring.dataset_name follows rewrites.dataset_name, and
    effects.dataset_name scoring's; effects.score and effects.reward_key follow the scoring
    section's model. A name set by hand (the reference's configs set them all) is kept; one
    that disagrees with the section before while ``dataset_filename`` is ``latest`` is said
    in the log, since the stage then reads the newest file of that other dataset or model
    (right for a stage run alone on another dataset, wrong for a name forgotten on a switch).
    """
    rw, sc, ec = config.rewrites, config.scoring, config.effects
    if sc is not None and rw is not None:
        if not sc.dataset_name:
            sc.dataset_name = rw.dataset_name
        elif sc.dataset_folder == "rewrites" and sc.dataset_filename == "latest":
            _tell_other(
                where,
                "scoring.dataset_name",
                sc.dataset_name,
                "rewrites.dataset_name",
                rw.dataset_name,
                "the dataset",
            )
    if ec is None:
        return
    before, key = (
        (sc.dataset_name, "scoring.dataset_name")
        if sc and sc.dataset_name
        else ((rw.dataset_name, "rewrites.dataset_name") if rw else ("", ""))
    )
    if not ec.dataset_name:
        if not before:
            raise ConfigError(
                f"{where}: key 'effects.dataset_name' is empty and the config has no scoring or "
                "rewrites section to take it from; set effects.dataset_name"
            )
        ec.dataset_name = before
    elif before and ec.dataset_filename == "latest":
        _tell_other(where, "effects.dataset_name", ec.dataset_name, key, before, "the dataset")
    check_name(where, "effects.dataset_name", ec.dataset_name)
    _derive_model_names(ec, sc, where)


def _tell_other(where: str, key: str, value: str, key_before: str, before: str, what: str) -> None:
    if value != before:
        log.warning(
            "%s: %s is %r but %s is %r: 'latest' reads the newest file of %s %r, not of %r "
            "(remove %s to follow %s)",
            where, key, value, key_before, before, what, value, before, key, key_before,
        )  # fmt: skip


def _derive_model_names(ec: EffectsConfig, sc: ScoringConfig | None, where: str) -> None:
    """effects.score and effects.reward_key from the scoring section's model."""
    if sc is None:
        for key in ("score", "reward_key"):
            if not getattr(ec, key):
                raise ConfigError(
                    f"{where}: key 'effects.{key}' is empty and the config has no scoring "
                    f"section to take it from; set effects.{key}"
                )
        return
    latest = sc.dataset_folder == "rewrites" and ec.dataset_filename == "latest"
    if ec.score and ec.reward_key and not latest:
        return  # all named by hand (the reference's configs): the model is not read
    template = scoring_template_of(sc.model, sc.chat, sc.label)
    if not ec.score:
        ec.score = template.name
    check_name(where, "effects.score", ec.score)
    if not ec.reward_key:
        ec.reward_key = template.reward_key
    elif latest:
        _tell_other(
            where,
            "effects.reward_key",
            ec.reward_key,
            f"the reward_key of scoring.model {sc.model!r}",
            template.reward_key,
            "the reward model",
        )


def check_templates(config: Config, where: str) -> None:
    """The templates the config names must exist (close names are suggested)."""

    checks = []
    if config.rewrites is not None:
        checks.append(
            (
                "dataset template",
                "rewrites.dataset_name",
                config.rewrites.dataset_name,
                dataset_template_names(),
            )
        )
    if config.scoring is not None and not names_a_model(config.scoring.model):
        checks.append(
            ("scoring template", "scoring.model", config.scoring.model, scoring_template_names())
        )
    for kind, key, name, known in checks:
        if name not in known:
            raise ConfigError(
                unknown_name_message(kind, name, known, where=f"{where}: key '{key}'")
            )
