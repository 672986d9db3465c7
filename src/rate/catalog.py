"""The catalogue: find, load and validate templates against every registry.

It stands above the registries (sources, W rules, rewriters, perturbations, scorers) and the
template parser, which never import each other; stages get their templates from here.
"""

from __future__ import annotations

from rate.datasets.registry import PERTURBATIONS, RULES, SOURCES
from rate.errors import TemplateError
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
