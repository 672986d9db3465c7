"""The catalogue: find, load and validate templates against every registry.

It stands above the registries (sources, W rules, rewriters, perturbations, scorers) and the
template parser, which never import each other; stages get their templates from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rate.datasets.registry import PERTURBATIONS, RULES, SOURCES
from rate.errors import ConfigError, TemplateError
from rate.rewrite.backends import REWRITERS
from rate.score.backends import load_scoring_template
from rate.templates import (
    DATASET_FOLDER,
    DatasetKinds,
    DatasetTemplate,
    dataset_template_names,
    find_template,
    parse_dataset_template,
    scoring_template_names,
)

if TYPE_CHECKING:
    from rate.config import Config

KINDS = DatasetKinds(SOURCES, RULES, REWRITERS, PERTURBATIONS)


def load_dataset_template(name: str) -> DatasetTemplate:
    """The dataset template ``name``, every part validated (and the scoring templates its
    parts read W with)."""
    template = parse_dataset_template(
        find_template(DATASET_FOLDER, name, "dataset template"), KINDS
    )
    for part, (_, options) in template.parts.items():
        for scorer in options.scoring_templates():
            try:
                load_scoring_template(scorer)
            except TemplateError as err:
                raise TemplateError(f"{template.path}: key '{part}.scorer': {err}") from None
    return template


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
