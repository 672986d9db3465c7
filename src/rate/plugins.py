"""Plugins: other packages that add template kinds and commands to rate.

A package plugs in the way pytest and MkDocs plugins do, through entry points in its own
metadata, so that rate imports nothing of it by name:

- ``rate.sources``, ``rate.w_rules``, ``rate.rewriters``, ``rate.scorers``: each entry is a
  :class:`rate.registry.Kind` (its options class and its factory as ``"module:attribute"``),
  named as templates name it;
- ``rate.commands``: a :class:`Commands`, whose ``register`` adds subcommands to ``rate`` and
  whose ``aliases`` map old command lines to new ones;
- ``rate.templates``: a folder holding ``dataset_templates/`` and ``scoring_templates/``, the
  templates the plugin ships (searched after rate's own, so a user's still shadow them).

The tiny RLHF world (package ``tinyworld``, in this repository) is such a plugin. A plugin
that fails to load is named in a warning and left out; rate works on without it.
"""

from __future__ import annotations

import argparse
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

KIND_GROUPS = ("rate.sources", "rate.w_rules", "rate.rewriters", "rate.scorers")
COMMAND_GROUP = "rate.commands"
TEMPLATE_GROUP = "rate.templates"


@dataclass(frozen=True)
class Commands:
    """What a plugin adds to the `rate` command line."""

    register: Callable[[argparse._SubParsersAction], None]
    # Old command words -> new ones (('tinyrlhf',) -> ('world',)): hidden, each use says the
    # new name once.
    aliases: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)


def _loaded(group: str) -> list[tuple[str, Any]]:
    found = []
    for point in sorted(entry_points(group=group), key=lambda p: p.name):
        try:
            found.append((point.name, point.load()))
        except Exception as err:  # a broken plugin must not take the core down with it
            log.warning(
                "plugin entry point %r of %s (%s) failed to load and is left out: %s",
                point.name, group, point.value, err,
            )  # fmt: skip
    return found


@functools.cache
def plugin_kinds(group: str) -> dict[str, Any]:
    """The kinds the installed plugins add to one registry: {name: Kind}."""
    from rate.registry import Kind  # here: rate.registry imports nothing of the registries

    assert group in KIND_GROUPS, group
    kinds = {}
    for name, kind in _loaded(group):
        if not isinstance(kind, Kind):
            log.warning("plugin entry point %r of %s is not a rate.registry.Kind", name, group)
            continue
        kinds[name] = kind
    return kinds


def with_plugins(core: dict[str, Any], group: str) -> dict[str, Any]:
    """A registry: rate's own kinds, then the plugins' (a plugin cannot replace a core kind)."""
    merged = dict(core)
    for name, kind in plugin_kinds(group).items():
        if name in merged:
            log.warning("plugin kind %r of %s is one of rate's own and is left out", name, group)
            continue
        merged[name] = kind
    return merged


@functools.cache
def plugin_template_roots() -> tuple[Path, ...]:
    """The template folders the installed plugins ship."""
    roots = []
    for name, folder in _loaded(TEMPLATE_GROUP):
        if not isinstance(folder, Path) or not folder.is_dir():
            log.warning(
                "plugin entry point %r of %s is not a folder: %r", name, TEMPLATE_GROUP, folder
            )
            continue
        roots.append(folder)
    return tuple(roots)


def plugin_commands() -> list[Commands]:
    """The command-line additions of the installed plugins."""
    return [c for _, c in _loaded(COMMAND_GROUP) if isinstance(c, Commands)]
