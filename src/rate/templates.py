"""Dataset and scoring templates: declarative YAML files found by name, validated on load.

A template is ``<folder>/<name>.yaml`` in ``dataset_templates/`` or ``scoring_templates/``. The
folders searched, first match wins: those in RATE_TEMPLATE_PATH (colon-separated roots that
hold the two folders), the current directory, and the repository this package lives in. Each
part with a kind (a dataset's ``source``, ``w_classifier`` and ``rewriter``, a scorer's
``backend``) is checked against that kind's own typed options. An unknown name is an error that
suggests the close ones; a template that does not parse is an error, never skipped.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rate.errors import ConfigError, TemplateError
from rate.schema import from_dict
from rate.suggest import unknown_name_message

DATASET_FOLDER = "dataset_templates"
SCORING_FOLDER = "scoring_templates"
_REPO_ROOT = Path(__file__).resolve().parents[2]
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
W_KEYS = ("w=1", "w=0")
PROMPT_FIELDS = {"original_completion", "w_counterfactual_string"}


def template_roots() -> list[Path]:
    roots = [Path(p) for p in os.environ.get("RATE_TEMPLATE_PATH", "").split(":") if p.strip()]
    roots += [Path.cwd(), _REPO_ROOT]
    out: list[Path] = []
    for r in roots:
        r = r.resolve()
        if r not in out:
            out.append(r)
    return out


def _index(folder: str) -> dict[str, Path]:
    """name -> file, first root wins."""
    found: dict[str, Path] = {}
    for root in template_roots():
        d = root / folder
        if not d.is_dir():
            continue
        for p in sorted(d.glob("*.yaml")):
            found.setdefault(p.stem, p)
    return found


def dataset_template_names() -> list[str]:
    return sorted(_index(DATASET_FOLDER))


def scoring_template_names() -> list[str]:
    return sorted(_index(SCORING_FOLDER))


def _find(folder: str, name: str, kind: str) -> Path:
    index = _index(folder)
    if name not in index:
        roots = ", ".join(str(r / folder) for r in template_roots())
        raise TemplateError(
            unknown_name_message(kind, name, sorted(index)) + f" (searched {roots})"
        )
    return index[name]


def _read(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise TemplateError(
            f"{path}{line}: not valid YAML ({getattr(err, 'problem', None) or err})"
        ) from None
    except OSError as err:
        raise TemplateError(f"{path}: cannot read ({err.strerror})") from None
    if not isinstance(data, dict):
        raise TemplateError(f"{path}: expected a mapping of keys to values")
    return data


# ---------------------------------------------------------------------------------------------
# Kinds: each part with a kind has a registry of name -> typed options (a dataclass).


@dataclass(frozen=True)
class Kind:
    options: type  # a dataclass validated with rate.schema.from_dict
    build: Callable[..., Any]  # the factory; its arguments depend on the part
    help: str = ""


def typed_part(
    registry: dict[str, Kind], data: Any, kind_key: str, where: str, path: str
) -> tuple[str, Any]:
    """Validate ``{kind_key: name, **options}`` against the registry -> (name, options)."""
    if not isinstance(data, dict):
        raise TemplateError(f"{where}: key '{path}' must be a mapping with '{kind_key}:'")
    data = dict(data)
    name = data.pop(kind_key, None)
    if name is None:
        raise TemplateError(
            f"{where}: key '{path}.{kind_key}' is missing; one of {', '.join(registry)}"
        )
    if name not in registry:
        raise TemplateError(
            unknown_name_message(kind_key, str(name), registry, where=f"{where}: key '{path}'")
        )
    try:
        options = from_dict(registry[name].options, data, where, path)
    except ConfigError as err:
        raise TemplateError(str(err)) from None
    return name, options


# ---------------------------------------------------------------------------------------------
# Dataset templates


@dataclass
class DatasetTemplate:
    name: str
    source: dict[str, Any]  # {kind: ..., options}
    w_classifier: dict[str, Any]  # {rule: ..., options}
    w_strings: dict[str, str]  # {"w=1": target string, "w=0": target string}
    rewrite_prompt: str  # with {original_completion} and {w_counterfactual_string}
    rewriter: dict[str, Any]  # {backend: ..., options}
    n_examples: int
    description: str = ""
    # Optional: a perturbation of the originals before rewriting ({kind: typos, ...}).
    perturb: dict[str, Any] | None = None
    # Optional: how to check that rewrites reached their target W when the W rule cannot read
    # W off text (a rating, a label): {scorer: <scoring template>, threshold: .., margin: ..}.
    rewrite_check: dict[str, Any] | None = None
    # Filled in on load: the file, and the validated kinds with their options.
    path: str = field(default="", init=False)
    parts: dict[str, tuple[str, Any]] = field(default_factory=dict, init=False)

    def validate(self, where: str) -> None:
        keys = set(self.w_strings)
        if keys != set(W_KEYS):
            raise ConfigError(
                f"{where}: key 'w_strings' must have exactly the keys 'w=1' and 'w=0', "
                f"got {sorted(keys)}"
            )
        if self.n_examples < 2:
            raise ConfigError(f"{where}: key 'n_examples' must be >= 2")
        try:
            fields = {f for _, f, _, _ in string.Formatter().parse(self.rewrite_prompt) if f}
        except ValueError as err:
            raise ConfigError(
                f"{where}: key 'rewrite_prompt' is not a valid template ({err})"
            ) from None
        if fields != PROMPT_FIELDS:
            raise ConfigError(
                f"{where}: key 'rewrite_prompt' must use exactly the placeholders "
                f"{{original_completion}} and {{w_counterfactual_string}}; it uses "
                f"{sorted('{' + f + '}' for f in fields) or 'none'}"
            )

    def instruction(self, text: str, target_w: bool) -> str:
        """The rewrite prompt for ``text``, asking for W = ``target_w``."""
        target = self.w_strings["w=1" if target_w else "w=0"]
        return self.rewrite_prompt.format(original_completion=text, w_counterfactual_string=target)

    def record(self) -> dict:
        """The template as written, for metadata records."""
        return {
            "name": self.name,
            "path": self.path,
            "description": self.description,
            "source": self.source,
            "w_classifier": self.w_classifier,
            "w_strings": self.w_strings,
            "rewrite_prompt": self.rewrite_prompt,
            "rewriter": self.rewriter,
            "n_examples": self.n_examples,
            "perturb": self.perturb,
            "rewrite_check": self.rewrite_check,
        }


def load_dataset_template(name: str) -> DatasetTemplate:
    from rate.datasets.sources import SOURCES
    from rate.datasets.wrules import RULES
    from rate.rewrite.backends import REWRITERS

    path = _find(DATASET_FOLDER, name, "dataset template")
    return parse_dataset_template(path, SOURCES, RULES, REWRITERS)


def parse_dataset_template(path: Path, sources, rules, rewriters) -> DatasetTemplate:
    data, where = _read(path), str(path)
    try:
        t = from_dict(DatasetTemplate, data, where)
    except ConfigError as err:
        raise TemplateError(str(err)) from None
    _check_name(t.name, path)
    t.path = str(path)
    t.parts = {
        "source": typed_part(sources, t.source, "kind", where, "source"),
        "w_classifier": typed_part(rules, t.w_classifier, "rule", where, "w_classifier"),
        "rewriter": typed_part(rewriters, t.rewriter, "backend", where, "rewriter"),
    }
    if t.perturb is not None:
        from rate.datasets.perturb import PERTURBATIONS

        t.parts["perturb"] = typed_part(PERTURBATIONS, t.perturb, "kind", where, "perturb")
    if t.rewrite_check is not None:
        from rate.datasets.wrules import ScorerAbove

        try:
            check = from_dict(ScorerAbove, t.rewrite_check, where, "rewrite_check")
            check.check_template(t, where)
        except ConfigError as err:
            raise TemplateError(str(err).replace("w_classifier", "rewrite_check")) from None
        t.parts["rewrite_check"] = ("scorer_above", check)
    # Cross-part rules (e.g. the tiny rewriter needs a token W rule) are checked by the parts.
    for part in ("source", "w_classifier", "rewriter"):
        kind, options = t.parts[part]
        check = getattr(options, "check_template", None)
        if callable(check):
            try:
                check(t, where)
            except ConfigError as err:
                raise TemplateError(str(err)) from None
    return t


def _check_name(name: str, path: Path) -> None:
    if name != path.stem:
        raise TemplateError(
            f"{path}: key 'name' is {name!r} but the file is {path.name}; they must agree "
            "(templates are found by file name)"
        )
    if not _NAME.match(name):
        raise TemplateError(f"{path}: name {name!r}: use letters, digits, '_', '-' and '.'")


# ---------------------------------------------------------------------------------------------
# Scoring templates


@dataclass
class ScoringTemplate:
    name: str
    reward_key: str  # the key the scores get in scored files
    backend: str
    description: str = ""
    batch_size: int = 64
    # Filled in on load: the backend's own keys as written, validated, and the file.
    options: dict[str, Any] = field(default_factory=dict, init=False)
    spec: Any = field(default=None, init=False)
    path: str = field(default="", init=False)

    def record(self) -> dict:
        return {
            "name": self.name,
            "path": self.path,
            "reward_key": self.reward_key,
            "backend": self.backend,
            "description": self.description,
            "batch_size": self.batch_size,
            **self.options,
        }


_SCORING_COMMON = ("name", "reward_key", "backend", "description", "batch_size")


def load_scoring_template(name: str) -> ScoringTemplate:
    from rate.score.backends import SCORERS

    path = _find(SCORING_FOLDER, name, "scoring template")
    return parse_scoring_template(path, SCORERS)


def parse_scoring_template(path: Path, scorers) -> ScoringTemplate:
    data, where = _read(path), str(path)
    common = {k: v for k, v in data.items() if k in _SCORING_COMMON}
    options = {k: v for k, v in data.items() if k not in _SCORING_COMMON}
    try:
        t = from_dict(ScoringTemplate, common, where)
    except ConfigError as err:
        raise TemplateError(str(err)) from None
    _check_name(t.name, path)
    if t.batch_size < 1:
        raise TemplateError(f"{where}: key 'batch_size' must be >= 1")
    if not t.reward_key.strip():
        raise TemplateError(f"{where}: key 'reward_key' must not be empty")
    _, t.spec = typed_part(scorers, {"backend": t.backend, **options}, "backend", where, "")
    t.options, t.path = options, str(path)
    return t


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
