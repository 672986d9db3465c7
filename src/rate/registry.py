"""Kinds of template parts: the typed options a part is validated against, and its factory.

Every part of a template that has a kind (a dataset's ``source``, ``w_classifier``,
``rewriter`` and ``perturb``; a scoring template's ``backend``) names one entry of a registry:
``{name: Kind}``. This module is a leaf: the registries import it, and it imports none of them.

A kind names its factory as ``"module:attribute"``, imported when the part is built and not
when a template is parsed, so that validating a template stays light and the heavy libraries
a backend needs (transformers, openai, datasets) load only for the backend that is used. The
options classes live in light modules (``*/options.py``), apart from the live objects built
from them.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rate.errors import ConfigError, TemplateError
from rate.schema import from_dict
from rate.suggest import unknown_name_message


class Part:
    """Base of every part's options: the optional capabilities, declared with their defaults."""

    def check_template(self, template: Any, where: str) -> None:
        """Rules that involve other parts of the template (raise ConfigError); none by
        default."""

    def scoring_templates(self) -> list[str]:
        """The scoring templates this part reads W or rewrites with (checked on load)."""
        return []

    def inputs(self) -> dict[str, str]:
        """What the part reads besides its options, resolved now ({"world": path}): a step
        made from other inputs is not reused (the sweep's markers)."""
        return {}

    def example_fields(self) -> frozenset[str] | None:
        """A source's: the metadata fields each of its examples carries (None: not known
        before the data is read)."""
        return None


def local_folder_inputs(name: str, value: str) -> dict[str, str]:
    """``{name: folder}`` where ``value`` names a local folder (a model's weights: what the
    part reads, digested by content for reuse), else none (a hub id: its revision is pinned
    by the user, not read here)."""
    folder = Path(value).expanduser()
    return {name: str(folder.resolve())} if value and folder.is_dir() else {}


class LivePart:
    """Mixin for live objects that extend their options class with behaviour and state: each is
    built fresh from the parsed options, which stay as they were parsed."""

    @classmethod
    def from_options(cls, options: Any) -> Any:
        return cls(**{f.name: getattr(options, f.name) for f in dataclasses.fields(options)})


@dataclass(frozen=True)
class Kind:
    """One kind of part: its typed options (a dataclass) and the factory of its live object."""

    options: type
    factory: str  # "module:attribute"
    help: str = ""

    def resolve(self) -> Any:
        """The factory itself (imports its module)."""
        module, _, attribute = self.factory.partition(":")
        target: Any = importlib.import_module(module)
        for name in attribute.split("."):
            target = getattr(target, name)
        return target

    def build(self, *args: Any, **kwargs: Any) -> Any:
        """The live object for these options; the arguments depend on the registry."""
        return self.resolve()(*args, **kwargs)


def typed_part(
    registry: dict[str, Kind], data: Any, kind_key: str, where: str, path: str
) -> tuple[str, Any]:
    """Validate ``{kind_key: name, **options}`` against the registry -> (name, options)."""
    if not isinstance(data, dict):
        raise TemplateError(f"{where}: key '{path}' must be a mapping with '{kind_key}:'")
    data = dict(data)
    name = data.pop(kind_key, None)
    full_key = f"{path}.{kind_key}" if path else kind_key
    if name is None:
        raise TemplateError(f"{where}: key '{full_key}' is missing; one of {', '.join(registry)}")
    if name not in registry:
        raise TemplateError(
            unknown_name_message(kind_key, str(name), registry, where=f"{where}: key '{full_key}'")
        )
    try:
        options = from_dict(registry[name].options, data, where, path)
    except ConfigError as err:
        raise TemplateError(str(err)) from None
    return name, options
