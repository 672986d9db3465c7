"""Dataset and scoring templates: declarative YAML files, found by name and parsed with clear
errors. This module knows no registry: the parsers take the registries they check parts
against (the catalogue, :mod:`rate.catalog`, passes them in).

A template is ``<folder>/<name>.yaml`` in ``dataset_templates/`` or ``scoring_templates/``. The
folders searched, first match wins: those in RATE_TEMPLATE_PATH (colon-separated roots that
hold the two folders), the current directory, the repository this package lives in, and the
folders that installed plugins ship (:mod:`rate.plugins`).

``include: <name>`` (a template of the same folder) or ``include: <file>.yaml`` (relative to
the including file) starts a template from another one, as lm-evaluation-harness's tasks do.
The including file's keys override: a mapping is merged key by key, except a part that names
another kind (``source.kind``, ``w_classifier.rule``, ``rewriter.backend``, ``perturb.kind``,
or a scoring template's ``backend``), which replaces the included part whole. ``name`` is never
inherited: every template names itself after its file.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rate.errors import ConfigError, TemplateError
from rate.plugins import plugin_template_roots
from rate.registry import Kind, typed_part
from rate.schema import from_dict
from rate.suggest import unknown_name_message

log = logging.getLogger(__name__)

DATASET_FOLDER = "dataset_templates"
SCORING_FOLDER = "scoring_templates"
_REPO_ROOT = Path(__file__).resolve().parents[2]
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
W_KEYS = ("w=1", "w=0")
PROMPT_FIELDS = {"original_completion", "w_counterfactual_string"}
# The key that names the kind of each part, for `include:` (a part of another kind replaces).
PART_KIND_KEYS = {
    "source": "kind",
    "w_classifier": "rule",
    "rewriter": "backend",
    "perturb": "kind",
}
SCORING_COMMON = ("name", "reward_key", "backend", "description", "batch_size")
_shadowing_told: set[tuple[Path, Path]] = set()


# ---------------------------------------------------------------------------------------------
# Finding and reading template files


def template_roots() -> list[Path]:
    roots = [Path(p) for p in os.environ.get("RATE_TEMPLATE_PATH", "").split(":") if p.strip()]
    roots += [Path.cwd(), _REPO_ROOT, *plugin_template_roots()]
    out: list[Path] = []
    for r in roots:
        r = r.resolve()
        if r not in out:
            out.append(r)
    return out


# The keys that tell a template of a flat folder (a RATE_TEMPLATE_PATH entry holding YAML files
# itself) for a scoring template or a dataset template.
_SCORING_MARKS = ("backend", "reward_key")
_DATASET_MARKS = ("source", "w_classifier", "rewriter", "rewrite_prompt", "w_strings")
_empty_told: set[Path] = set()


def _flat_kind(path: Path, depth: int = 0) -> str | None:
    """The folder a template of a flat folder belongs to, by its keys or those of the template
    it includes (None: neither)."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None  # found and reported when it is loaded by name, if ever
    if not isinstance(data, dict):
        return None
    if any(key in data for key in _SCORING_MARKS):
        return SCORING_FOLDER
    if any(key in data for key in _DATASET_MARKS):
        return DATASET_FOLDER
    included = data.get("include")
    if isinstance(included, str) and depth < 8:
        target = path.parent / (included if included.endswith(".yaml") else f"{included}.yaml")
        return _flat_kind(target, depth + 1) if target.is_file() else None
    return None


def _template_files(root: Path, folder: str, listed: bool) -> list[Path]:
    """``root/<folder>/*.yaml``; for a RATE_TEMPLATE_PATH entry (``listed``) without the two
    folders, its own YAML files of that kind (a flat folder); a listed entry with no template
    at all is named in the log, once."""
    d = root / folder
    if d.is_dir():
        return sorted(d.glob("*.yaml"))
    if not listed:
        return []
    if not (root / DATASET_FOLDER).is_dir() and not (root / SCORING_FOLDER).is_dir():
        files = sorted(root.glob("*.yaml")) if root.is_dir() else []
        if files:
            return [p for p in files if _flat_kind(p) == folder]
        if root not in _empty_told:
            _empty_told.add(root)
            log.warning(
                "RATE_TEMPLATE_PATH names %s, which holds no template (neither *.yaml files nor "
                "%s/ or %s/ folders); check the path",
                root,
                DATASET_FOLDER,
                SCORING_FOLDER,
            )
    return []


# The indexes already built, by what they were built from (:func:`_listing_state`): a config
# that names thousands of templates, each including the next, looks each one up by name, and
# listing (and, in a flat folder, parsing) every file at each lookup made that quadratic.
_indexes: dict[tuple, dict[str, Path]] = {}


def _listing_state(roots: list[Path], folder: str) -> tuple:
    """What an index of ``folder`` is built from: the roots in order, and the modification time
    of each folder it lists (adding, removing or renaming a template changes it)."""
    state: list[tuple[str, int | None]] = [(os.environ.get("RATE_TEMPLATE_PATH", ""), None)]
    for root in roots:
        for d in (root / folder, root):
            try:
                state.append((str(d), d.stat().st_mtime_ns))
            except OSError:
                state.append((str(d), None))
    return tuple(state)


def template_index(folder: str) -> dict[str, Path]:
    """name -> file, first root wins (a template of the current folder or RATE_TEMPLATE_PATH
    shadows a shipped one of the same name, and the log says so). A RATE_TEMPLATE_PATH entry
    may hold the two folders or the YAML files themselves (a flat folder). Built once for as
    long as the folders' listings stay the same."""
    roots = template_roots()
    state = (folder, _listing_state(roots, folder))
    if state not in _indexes:
        if len(_indexes) > 64:  # many folders over a long process (the tests): keep it small
            _indexes.clear()
        _indexes[state] = _build_index(roots, folder)
    return dict(_indexes[state])


def _build_index(roots: list[Path], folder: str) -> dict[str, Path]:
    found: dict[str, Path] = {}
    listed = {
        Path(p).resolve() for p in os.environ.get("RATE_TEMPLATE_PATH", "").split(":") if p.strip()
    }
    for root in roots:
        for p in _template_files(root, folder, root in listed):
            first = found.setdefault(p.stem, p)
            if first != p and (first, p) not in _shadowing_told:
                _shadowing_told.add((first, p))
                log.warning(
                    "template %s shadows %s (the first found wins: RATE_TEMPLATE_PATH, then the "
                    "current folder, then the checkout); rename it to use both",
                    first,
                    p,
                )
    return found


def dataset_template_names() -> list[str]:
    return sorted(template_index(DATASET_FOLDER))


def scoring_template_names() -> list[str]:
    return sorted(template_index(SCORING_FOLDER))


def find_template(folder: str, name: str, kind: str) -> Path:
    """The file of template ``name`` in ``folder``; an unknown name suggests close ones."""
    index = template_index(folder)
    if name not in index:
        roots = ", ".join(str(r / folder) for r in template_roots())
        raise TemplateError(
            unknown_name_message(kind, name, sorted(index)) + f" (searched {roots})"
        )
    return index[name]


def read_yaml(path: Path) -> dict:
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


def _merge(base: dict, over: dict, kind_keys: dict[str, str]) -> dict:
    """``over`` on top of ``base``: mappings merge key by key, unless ``kind_keys`` says the
    part's kind changed (then ``over``'s part replaces ``base``'s whole)."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            kind = kind_keys.get(key)
            same_kind = kind is None or value.get(kind, old.get(kind)) == old.get(kind)
            out[key] = _merge(old, value, {}) if same_kind else dict(value)
        else:
            out[key] = value
    return out


def _included_path(path: Path, name: Any, folder: str) -> Path:
    where = f"{path}: key 'include'"
    if not isinstance(name, str) or not name.strip():
        raise TemplateError(f"{where}: name a template of {folder}/ or a .yaml file")
    if name.endswith((".yaml", ".yml")) or "/" in name:
        target = (path.parent / name).resolve()
        if not target.is_file():
            raise TemplateError(f"{where}: no such file {target}")
        return target
    try:
        return find_template(folder, name, "template")
    except TemplateError as err:
        raise TemplateError(f"{where}: {err}") from None


# Templates include templates to share parts; no real chain is long, and each link is read
# recursively, so a generated chain of thousands would exhaust Python's stack.
MAX_INCLUDE_DEPTH = 32


def read_template(path: Path, folder: str, _seen: tuple[Path, ...] = ()) -> tuple[dict, list]:
    """The template's keys with its ``include:`` chain applied, and the chain's files."""
    data = read_yaml(path)
    if "include" not in data:
        return data, []
    if len(_seen) >= MAX_INCLUDE_DEPTH:
        raise TemplateError(
            f"{_seen[0]}: key 'include' chains more than {MAX_INCLUDE_DEPTH} templates (to "
            f"{path}); include a template that includes fewer"
        )
    target = _included_path(path, data.pop("include"), folder)
    if target.resolve() in (*_seen, path.resolve()):
        chain = " -> ".join(str(p) for p in (*_seen, path.resolve(), target.resolve()))
        raise TemplateError(f"{path}: key 'include' makes a loop ({chain}); break it")
    base, chain = read_template(target, folder, (*_seen, path.resolve()))
    base.pop("name", None)  # a template always names itself
    if folder == SCORING_FOLDER and "backend" in data and data["backend"] != base.get("backend"):
        base = {k: v for k, v in base.items() if k in SCORING_COMMON}
    return _merge(base, data, PART_KIND_KEYS), [str(target), *chain]


def _check_name(name: str, path: Path) -> None:
    if name != path.stem:
        raise TemplateError(
            f"{path}: key 'name' is {name!r} but the file is {path.name}; they must agree "
            "(templates are found by file name)"
        )
    if not _NAME.match(name):
        raise TemplateError(f"{path}: name {name!r}: use letters, digits, '_', '-' and '.'")


def _typed(cls: type, data: dict, where: str) -> Any:
    if "dataset_name" in data and "name" not in data:
        # The reference's configs call the dataset 'dataset_name'; a template calls it 'name'.
        raise TemplateError(f"{where}: a template names itself with 'name:', not 'dataset_name:'")
    try:
        return from_dict(cls, data, where)
    except ConfigError as err:
        raise TemplateError(str(err)) from None


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
    # Optional (off unless set: it is a third pass to pay for): the instruction of the placebo
    # pass, which rewrites each rewrite again with W kept, with {original_completion}.
    placebo_prompt: str | None = None
    # Optional: every example may have the same W (a bias profile's attributes are absent
    # from most texts); then only the ATU (or the ATT) is estimated.
    one_sided_w: bool = False
    # Filled in on load: the file, the files it includes, and the validated parts.
    path: str = field(default="", init=False)
    includes: list[str] = field(default_factory=list, init=False)
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
        _check_prompt(self.rewrite_prompt, "rewrite_prompt", PROMPT_FIELDS, where)
        if self.placebo_prompt is not None:
            _check_prompt(self.placebo_prompt, "placebo_prompt", {"original_completion"}, where)

    def instruction(self, text: str, target_w: bool) -> str:
        """The rewrite prompt for ``text``, asking for W = ``target_w``."""
        target = self.w_strings["w=1" if target_w else "w=0"]
        return self.rewrite_prompt.format(original_completion=text, w_counterfactual_string=target)

    def placebo_instruction(self, text: str) -> str:
        """The placebo prompt for ``text`` (rewrite it, W kept); the template must have one."""
        assert self.placebo_prompt is not None, "no placebo_prompt"
        return self.placebo_prompt.format(original_completion=text)

    def part(self, name: str) -> Any:
        """The validated options of a part (``source``, ``w_classifier``, ``rewriter``, ...)."""
        return self.parts[name][1]

    def record(self) -> dict:
        """The template as written (includes applied), for metadata records."""
        keys = ("name", "path", "includes", "description", "source", "w_classifier", "w_strings")
        keys += ("rewrite_prompt", "rewriter", "n_examples", "perturb", "rewrite_check")
        return {k: getattr(self, k) for k in (*keys, "placebo_prompt", "one_sided_w")}


def _check_prompt(prompt: str, key: str, fields: set[str], where: str) -> None:
    """Refuse a prompt that does not use exactly the placeholders ``fields``."""
    try:
        used = {f for _, f, _, _ in string.Formatter().parse(prompt) if f}
    except ValueError as err:
        raise ConfigError(f"{where}: key '{key}' is not a valid template ({err})") from None
    if used != fields:
        raise ConfigError(
            f"{where}: key '{key}' must use exactly the placeholders "
            f"{' and '.join('{' + f + '}' for f in sorted(fields))}; it uses "
            f"{sorted('{' + f + '}' for f in used) or 'none'}"
        )


@dataclass(frozen=True)
class DatasetKinds:
    """The registries a dataset template's parts are checked against."""

    sources: dict[str, Kind]
    rules: dict[str, Kind]
    rewriters: dict[str, Kind]
    perturbations: dict[str, Kind]


def parse_dataset_template(path: Path, kinds: DatasetKinds) -> DatasetTemplate:
    data, includes = read_template(path, DATASET_FOLDER)
    where = str(path)
    t = _typed(DatasetTemplate, data, where)
    _check_name(t.name, path)
    t.path, t.includes = str(path), includes
    t.parts = {
        "source": typed_part(kinds.sources, t.source, "kind", where, "source"),
        "w_classifier": typed_part(kinds.rules, t.w_classifier, "rule", where, "w_classifier"),
        "rewriter": typed_part(kinds.rewriters, t.rewriter, "backend", where, "rewriter"),
    }
    if t.perturb is not None:
        t.parts["perturb"] = typed_part(kinds.perturbations, t.perturb, "kind", where, "perturb")
    if t.rewrite_check is not None:
        # A check reads W with a scorer: the scorer_above rule's options, without 'rule:'.
        check = {"rule": "scorer_above", **t.rewrite_check}
        only = {"scorer_above": kinds.rules["scorer_above"]}
        t.parts["rewrite_check"] = typed_part(only, check, "rule", where, "rewrite_check")
    # Rules that span parts (e.g. the tiny rewriter needs a token W rule) are the parts' own.
    for _, options in t.parts.values():
        try:
            options.check_template(t, where)
        except ConfigError as err:
            raise TemplateError(str(err)) from None
    return t


# ---------------------------------------------------------------------------------------------
# Scoring templates


@dataclass
class ScoringTemplate:
    name: str
    reward_key: str  # the key the scores get in scored files
    backend: str
    description: str = ""
    batch_size: int = 64
    # Filled in on load: the backend's own keys as written, validated, and the files.
    options: dict[str, Any] = field(default_factory=dict, init=False)
    spec: Any = field(default=None, init=False)
    path: str = field(default="", init=False)
    includes: list[str] = field(default_factory=list, init=False)

    def record(self) -> dict:
        keys = ("name", "path", "includes", "reward_key", "backend", "description", "batch_size")
        return {**{k: getattr(self, k) for k in keys}, **self.options}


def parse_scoring_template(path: Path, scorers: dict[str, Kind]) -> ScoringTemplate:
    data, includes = read_template(path, SCORING_FOLDER)
    where = str(path)
    common = {k: v for k, v in data.items() if k in SCORING_COMMON}
    options = {k: v for k, v in data.items() if k not in SCORING_COMMON}
    t = _typed(ScoringTemplate, common, where)
    _check_name(t.name, path)
    if t.batch_size < 1:
        raise TemplateError(f"{where}: key 'batch_size' must be >= 1")
    if not t.reward_key.strip():
        raise TemplateError(f"{where}: key 'reward_key' must not be empty")
    if t.backend in scorers:
        # A misspelt key is told against every key the template may have, not the backend's.
        own = [f.name for f in dataclasses.fields(scorers[t.backend].options) if f.init]
        for key in options:
            if key not in own:
                raise TemplateError(
                    unknown_name_message("key", str(key), [*SCORING_COMMON, *own], where=where)
                    + f" (the {t.backend} backend's own keys: {', '.join(own) or 'none'})"
                )
    _, t.spec = typed_part(scorers, {"backend": t.backend, **options}, "backend", where, "")
    t.options, t.path, t.includes = options, str(path), includes
    return t
