"""The attribute catalogue: text attributes that reward models are known to be biased by,
each ready to include in a dataset template, for a causal bias profile of a reward model.

An attribute is one file, ``dataset_templates/attributes/<name>.yaml``, holding the template
parts that say what the attribute is: a W rule that reads W off the text (so every rewrite is
checked), ``w_strings`` both ways, a ``rewrite_prompt`` for LLM rewriters and a ``rewriter``
(the offline ``rules_en`` rules where they are reliable, :mod:`rate.rewrite.rules_attributes`).
A template that supplies ``name``, ``source`` and ``n_examples`` and ``include:``\\s the file is
complete; :func:`write_attribute_template` writes one.

The index here adds what a file does not say: where the attribute comes from in the
literature, and a note. Whether an attribute has an offline rewriter is read from its file.
The attribute folder is not a template folder (the loader lists ``dataset_templates/*.yaml``
only), so its files are never mistaken for whole templates; the first template root
(:func:`rate.templates.template_roots`) that holds ``dataset_templates/attributes/<name>.yaml``
wins, so a project can shadow a shipped attribute as it shadows a template.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rate.catalog import load_dataset_template_file
from rate.datasets.base import SourceContext
from rate.datasets.registry import RULES, SOURCES
from rate.errors import ConfigError, DataFileError, TemplateError
from rate.fs import ensure_dir
from rate.io import atomic_write_text
from rate.records import REWRITE, REWRITTEN
from rate.rewrite.backends import build_rewriter
from rate.rewrite.base import RewriteRequest, checked_outputs
from rate.rewrite.checks import label_outputs, summarize
from rate.suggest import unknown_name_message
from rate.templates import DATASET_FOLDER, DatasetTemplate, read_yaml, template_roots

log = logging.getLogger(__name__)

ATTRIBUTE_FOLDER = "attributes"  # under dataset_templates/
ALL = "all"
OFFLINE_BACKEND = "rules_en"


@dataclass(frozen=True)
class Attribute:
    """One attribute of the catalogue (its parts are in its file)."""

    name: str
    literature: str  # where reward models were found to react to it
    note: str = ""  # what a user should know (e.g. why there is no offline rewriter)
    # Offline rules that exist but miss the 90% bar (the file names an LLM): `rate profile
    # --rewriter rules` uses them only for an attribute named on its own, never for `all`.
    weak_rules: dict[str, str] | None = None

    def file(self) -> Path:
        """The attribute's file: the first template root that has it."""
        for root in template_roots():
            path = root / DATASET_FOLDER / ATTRIBUTE_FOLDER / f"{self.name}.yaml"
            if path.is_file():
                return path
        raise TemplateError(
            f"attribute {self.name!r}: no {DATASET_FOLDER}/{ATTRIBUTE_FOLDER}/{self.name}.yaml "
            f"under {', '.join(map(str, template_roots()))}; restore the file from the checkout"
        )

    def parts(self) -> dict[str, Any]:
        """The file's keys as written (description, w_classifier, w_strings, ...)."""
        return read_yaml(self.file())

    @property
    def description(self) -> str:
        return str(self.parts().get("description", ""))

    @property
    def offline_rewriter(self) -> bool:
        """Whether the file rewrites with the offline rules (else an LLM rewriter)."""
        return self.parts().get("rewriter", {}).get("backend") == OFFLINE_BACKEND


_RM_BENCH = "RM-Bench (Liu et al., 2024)"
_FFF = "Flattery, Fluff, and Fog (Bharadwaj et al., 2025)"
_JIANG = "Jiang et al."
CATALOGUE: dict[str, Attribute] = {
    a.name: a
    for a in (
        Attribute("length", f"{_RM_BENCH}: concise against detailed; {_FFF}: length"),
        Attribute(
            "sentiment",
            "RATE (Reber et al., 2024): sentiment",
            "LLM rewriter: W is read by VADER, and the rules_en antonym rules reach its other "
            "side in under 90% of texts (rewriter: {backend: rules_en, attribute: sentiment} "
            "uses them anyway)",
            weak_rules={"backend": OFFLINE_BACKEND, "attribute": "sentiment"},
        ),
        Attribute("structure", f"{_RM_BENCH}: markdown style; {_FFF}: structure"),
        Attribute("sycophancy", f"{_FFF}: sycophancy"),
        Attribute("hedging", f"{_FFF}: vagueness; {_JIANG}"),
        Attribute("exclamation", _JIANG),
        Attribute("emoji", _JIANG),
        Attribute("politeness", _JIANG),
        Attribute("emphasis", f"{_RM_BENCH}: markdown style (bold); {_JIANG}"),
        Attribute("disclaimer", _JIANG),
        Attribute(
            "typos",
            "RATE (Reber et al., 2024): the imdb_vowels typos",
            "LLM rewriter: the reference's typos (perturb: {kind: typos, method: reference}) "
            "add typos, but no rule removes them from arbitrary text, and short texts get none "
            "(int(rate x words) is 0 under 4 words at 30%)",
        ),
    )
}


def attribute_names() -> list[str]:
    """The catalogue's attributes, in its order."""
    return list(CATALOGUE)


def get_attribute(name: str) -> Attribute:
    """The attribute ``name``; an unknown name suggests the nearest."""
    if name not in CATALOGUE:
        raise ConfigError(unknown_name_message("attribute", name, CATALOGUE))
    return CATALOGUE[name]


def select_attributes(spec: str | list[str]) -> list[Attribute]:
    """The attributes a ``--attributes`` value names: ``all``, or names separated by commas
    (each once, in the order given)."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [n.strip() for n in names if n.strip()]
    if names == [ALL]:
        return list(CATALOGUE.values())
    if not names:
        raise ConfigError(
            f"--attributes names no attribute; give {ALL!r} or some of {', '.join(CATALOGUE)}"
        )
    return [get_attribute(n) for n in dict.fromkeys(names)]


def attribute_rows() -> list[dict[str, Any]]:
    """One row per attribute, for listings: name, description, literature, offline rewriter,
    note and file."""
    return [
        {
            "name": a.name,
            "description": a.description,
            "literature": a.literature,
            "offline_rewriter": a.offline_rewriter,
            "note": a.note,
            "file": str(a.file()),
        }
        for a in CATALOGUE.values()
    ]


def write_attribute_template(
    attribute: str,
    source: dict[str, Any],
    n_examples: int,
    folder: Path,
    name: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> Path:
    """Write ``folder/<name>.yaml``, a dataset template that includes ``attribute``'s file and
    adds ``source`` and ``n_examples`` (and ``overrides``: any other key, e.g. an LLM
    ``rewriter``); ``name`` defaults to ``<attribute>_<source kind>``. -> the file"""
    a = get_attribute(attribute)
    name = name or f"{a.name}_{source.get('kind', 'source')}"
    data = {"name": name, "include": str(a.file()), "source": source, "n_examples": n_examples}
    data.update(overrides or {})
    path = Path(folder) / f"{name}.yaml"
    ensure_dir(path.parent)
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def load_attribute_template(
    attribute: str,
    source: dict[str, Any],
    n_examples: int,
    folder: Path,
    name: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> DatasetTemplate:
    """The dataset template of :func:`write_attribute_template`, loaded and validated."""
    path = write_attribute_template(attribute, source, n_examples, folder, name, overrides)
    return load_dataset_template_file(path)


def rule_success(template: DatasetTemplate, n: int, seed: int = 0) -> dict[str, Any]:
    """Rewrite the first ``n`` examples with W defined of ``template``'s source to the other W
    and back with its rewriter, and check both passes as create_dataset does
    (:mod:`rate.rewrite.checks`). Unlike create_dataset, every example may have the same W
    (most attributes are absent from most texts). -> counts and each pass's summary"""
    kind, source_options = template.parts["source"]
    source = SOURCES[kind].build(source_options, SourceContext(seed, template.path))
    rule_kind, rule_options = template.parts["w_classifier"]
    rule = RULES[rule_kind].build(rule_options)
    everything = [ex for chunk in source.chunks() for ex in chunk]
    rule.fit(everything)
    chosen = []
    for ex in everything:
        w = rule(ex)
        if w is not None:
            chosen.append((ex, w))
        if len(chosen) == n:
            break
    if len(chosen) < n:
        raise DataFileError(f"{template.path}: only {len(chosen)} examples have W; asked for {n}")
    rewriter = build_rewriter(template, seed, rule)
    passes: dict[str, dict] = {}
    texts, targets = [ex.text for ex, _ in chosen], [not w for _, w in chosen]
    for pass_name in (REWRITE, REWRITTEN):
        requests = [
            RewriteRequest(f"{ex.key}/{pass_name}", t, target, template.instruction(t, target))
            for (ex, _), t, target in zip(chosen, texts, targets, strict=True)
        ]
        outputs = checked_outputs(rewriter, requests, rewriter.rewrite(requests))
        labels = label_outputs(texts, outputs, targets, rule.classify_texts)
        passes[pass_name] = summarize(labels)
        texts, targets = outputs, [not t for t in targets]
    return {
        "template": template.name,
        "n": len(chosen),
        "w_1": sum(w for _, w in chosen),
        "w_0": sum(not w for _, w in chosen),
        "passes": passes,
    }
