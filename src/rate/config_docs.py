"""The config's reference, generated from the code: every key with its type, default and help.

``rate config`` prints it; ``rate config --yaml`` writes a complete, commented config (the
experiment configs in experiments/ are exactly that, so their comments and defaults cannot
drift from the code; a test regenerates them); ``rate config --markdown`` is the docs'
config reference (docs/hooks/generated.py writes it when the site is built). A value that
differs from the code's default says so in its comment.
"""

from __future__ import annotations

import dataclasses
import textwrap
import typing
from typing import Any

import yaml

from rate.config import Config
from rate.schema import MISSING, field_default, field_docs, section_type

WIDTH = 96


def _flow(value: Any) -> str:
    """A value as one line of YAML (flow style)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000, sort_keys=False)
    return text.strip().removesuffix("...").strip()


def _default_text(default: Any) -> str:
    return "required" if default is MISSING else _flow(default)


def reference_markdown(cls: type = Config) -> str:
    """A Markdown table of every key of ``cls``."""
    lines = ["| key | type | default | what it does |", "|---|---|---|---|"]
    for doc in field_docs(cls):
        help_text = doc.help.replace("|", "\\|")
        default = _default_text(doc.default).replace("|", "\\|")
        lines.append(f"| `{doc.key}` | {doc.type} | `{default}` | {help_text} |")
    return "\n".join(lines) + "\n"


def reference_text(cls: type = Config) -> str:
    """Every key of ``cls``, one block each, for the terminal."""
    out = []
    for doc in field_docs(cls):
        out.append(f"{doc.key}  ({doc.type}; default {_default_text(doc.default)})")
        out += textwrap.wrap(doc.help, WIDTH - 4, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(out) + "\n"


def _comment(text: str, indent: str) -> list[str]:
    return textwrap.wrap(
        text, WIDTH - len(indent), initial_indent=f"{indent}# ", subsequent_indent=f"{indent}# "
    )


def _render(obj: Any, indent: str, defaults: Any = None) -> list[str]:
    """``obj``'s keys; ``defaults`` is the section's default instance (a section's defaults
    can differ from its class's, e.g. each SLURM stage's resources)."""
    hints = typing.get_type_hints(type(obj))
    lines: list[str] = []
    for f in dataclasses.fields(obj):
        if not f.init:
            continue
        value = getattr(obj, f.name)
        default = getattr(defaults, f.name) if defaults is not None else field_default(f)
        section = section_type(hints[f.name])
        if section is not None:
            doc = (section.__doc__ or "").strip().splitlines()[0]
            lines += _comment(f.metadata.get("help") or doc, indent)
            if value is None:  # a section this config leaves out
                lines.append(f"{indent}{f.name}: null")
                continue
            lines.append(f"{indent}{f.name}:")
            section_default = default if default not in (MISSING, None) else None
            lines += _render(value, indent + "  ", section_default)
            continue
        note = f.metadata.get("help", "")
        if default is not MISSING and value != default:
            note += f" (default: {_flow(default)})"
        lines += _comment(note, indent)
        if isinstance(value, dict) and value:
            lines.append(f"{indent}{f.name}:")
            lines += [f"{indent}  {_flow(k)}: {_flow(v)}" for k, v in value.items()]
        else:
            lines.append(f"{indent}{f.name}: {_flow(value)}")
    return lines


GUIDE = "# Every key: `rate config`; any key on the command line: --set section.key=value."


def config_yaml(config: Config, title: str) -> str:
    """``config`` as a complete YAML file: every key, its value and its help as a comment."""
    head = [f"# {line}".rstrip() for line in title.splitlines()]
    return "\n".join([*head, GUIDE, *_render(config, "")]) + "\n"


def title_of(text: str) -> str:
    """The title of a config file written by :func:`config_yaml`: its comment lines before
    the guide line (empty when it has none)."""
    lines = []
    for line in text.splitlines():
        if line == GUIDE or not line.startswith("#"):
            break
        lines.append(line.removeprefix("#").removeprefix(" "))
    return "\n".join(lines)
