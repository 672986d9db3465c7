"""Typed configs from plain dicts: dataclasses in, clear errors out, help beside each field.

``from_dict(Cls, data, where)`` builds a (possibly nested) dataclass from JSON/YAML data,
rejecting unknown keys (naming the closest valid one), missing required keys and values of the
wrong type. Every message starts with ``where`` (a file, optionally with a key path).

``opt(default, help=...)`` declares a field with its help text, as TRL's configs do;
``field_docs`` lists every key of a config with its type, default and help, so that the
command line and the documentation are generated from the code and cannot drift from it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar, Union

import yaml

from rate.errors import ConfigError
from rate.suggest import closest, unknown_name_message

T = TypeVar("T")
MISSING = dataclasses.MISSING


@dataclasses.dataclass(frozen=True)
class Bound:
    """The range of a numeric setting, declared beside it (``opt(..., bound=...)``) and
    checked by :func:`from_dict` before any work: a finite number (a NaN fails every
    comparison, so it is named as such), at least ``low`` (above it when ``strict``), at most
    ``high``. ``cost`` says what a value asks for (memory, time) when it is too large: every
    setting that sizes work has a ``high``."""

    low: float | None = None
    strict: bool = False
    high: float | None = None
    why: str = ""
    below: bool = False  # high excluded (a level, a share that cannot be whole)
    cost: Callable[[Any], str] | None = None

    def rule(self) -> str:
        parts = [] if self.low is None else [f"{'>' if self.strict else '>='} {self.low}"]
        if self.high is not None:
            parts.append(f"{'<' if self.below else '<='} {self.high}")
        return " and ".join(parts)

    def check(self, value: Any, key: str) -> None:
        """Raise a one-line ConfigError naming ``key``, the value and the range where
        ``value`` is outside it; None (an optional setting left out) passes."""
        problem = self.problem(value)
        if problem is not None:
            raise ConfigError(f"{key} {problem}")

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` ("must be ..., got ..."), or None where it is in range."""
        if value is None:
            return None
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = (
            number
            and (isinstance(value, int) or math.isfinite(value))  # a huge int overflows isfinite
            and (self.low is None or (value > self.low if self.strict else value >= self.low))
            and (self.high is None or (value < self.high if self.below else value <= self.high))
        )
        if ok:
            return None
        notes = ["a finite number"] if isinstance(value, float) else []
        notes += [self.why] if self.why else []
        if number and self.cost is not None and self.high is not None and value > self.high:
            notes.append(self.cost(value))
        said = f" ({'; '.join(notes)})" if notes else ""  # an integer without a why: none
        return f"must be {self.rule()}{said}, got {value!r}"


# numpy's random generators take seeds in this range; every seed setting declares it.
SEED = Bound(0, high=2**32 - 1, why="numpy's seeds")


def opt(
    default: Any = MISSING,
    *,
    help: str,
    factory: Any = MISSING,
    bound: Bound | None = None,
    choices: tuple[Any, ...] | None = None,
) -> Any:
    """A dataclass field with its help text, and for a number its range (``bound``) or for a
    value its ``choices``; ``factory`` makes a fresh mutable default."""
    metadata = {"help": help, "bound": bound, "choices": choices}
    if factory is not MISSING:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def check_declared(f: dataclasses.Field, value: Any, key: str) -> None:
    """The checks a field declares (:class:`Bound`, ``choices``) on ``value``; ``key`` names it."""
    bound = f.metadata.get("bound")
    if bound is not None:
        bound.check(value, key)
    elif isinstance(value, float) and not math.isfinite(value):  # no setting means NaN or inf
        raise ConfigError(f"{key} must be a finite number, got {value!r}")
    choices = f.metadata.get("choices")
    if choices is not None and value is not None and value not in choices:
        raise ConfigError(f"{key} must be one of {', '.join(map(str, choices))}, got {value!r}")


@dataclasses.dataclass(frozen=True)
class FieldDoc:
    """One key of a config: its full path, type, default (MISSING: required) and help."""

    key: str
    type: str
    default: Any
    help: str

    @property
    def required(self) -> bool:
        return self.default is MISSING


def field_default(f: dataclasses.Field) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def section_type(tp: Any) -> type | None:
    """The dataclass of a section annotated ``Section`` or ``Section | None`` (an optional
    section: a config may leave it out), else None."""
    if dataclasses.is_dataclass(tp):
        return tp
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and dataclasses.is_dataclass(args[0]):
            return args[0]
    return None


def field_docs(cls: type, prefix: str = "", defaults: Any = None) -> list[FieldDoc]:
    """Every key of ``cls``, nested dataclass sections expanded, in declaration order;
    ``defaults`` is the section's default instance where it differs from the class's."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        key = _join(prefix, f.name)
        tp = hints[f.name]
        default = getattr(defaults, f.name) if defaults is not None else field_default(f)
        section = section_type(tp)
        if section is not None:
            out += field_docs(section, key, default if default not in (MISSING, None) else None)
            continue
        out.append(FieldDoc(key, _type_name(tp), default, f.metadata.get("help", "")))
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _at(where: str, path: str) -> str:
    return f"{where}: key '{path}'" if path else where


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(tp))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return "null" if tp is type(None) else getattr(tp, "__name__", str(tp))


def _convert(tp: Any, value: Any, where: str, path: str) -> Any:
    """Check ``value`` against the annotation ``tp`` and convert nested dataclasses."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    section = section_type(tp)
    if section is not None and section is not tp:
        # An optional section: null, or the section itself (with its own precise errors).
        return None if value is None else from_dict(section, value, where, path)
    if origin in (Union, types.UnionType):
        for arg in typing.get_args(tp):
            try:
                return _convert(arg, value, where, path)
            except ConfigError:
                continue
        raise ConfigError(f"{_at(where, path)}: expected {_type_name(tp)}, got {value!r}")
    if tp is type(None):
        if value is not None:
            raise ConfigError(f"{_at(where, path)}: expected null, got {value!r}")
        return None
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, where, path)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{_at(where, path)}: expected a list, got {value!r}")
        (item,) = typing.get_args(tp)[:1] or (Any,)
        return [_convert(item, v, where, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{_at(where, path)}: expected a mapping, got {value!r}")
        ktp, vtp = typing.get_args(tp) or (Any, Any)
        return {
            _convert(ktp, k, where, path): _convert(vtp, v, where, _join(path, str(k)))
            for k, v in value.items()
        }
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{_at(where, path)}: expected true or false, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{_at(where, path)}: expected a number, got {value!r}")
        try:
            return float(value)
        except OverflowError:  # an integer beyond any float
            raise ConfigError(f"{_at(where, path)}: {value} is beyond any number") from None
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{_at(where, path)}: expected an integer, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{_at(where, path)}: expected a string, got {value!r}")
        return value
    raise TypeError(f"unsupported annotation {tp!r}")  # a bug in a schema, not user input


def from_dict(cls: type[T], data: Any, where: str, path: str = "") -> T:
    """Build dataclass ``cls`` from ``data``, validating keys and types."""
    if not isinstance(data, dict):
        raise ConfigError(f"{_at(where, path)}: expected a mapping of keys to values, got {data!r}")
    hints = typing.get_type_hints(cls)
    flds = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for key in data:
        if key not in flds:
            # Suggest among this section's keys, then name them by their full path.
            message = unknown_name_message("key", str(key), flds, where=where)
            if path:
                message = message.replace(f"'{key}'", f"'{_join(path, str(key))}'", 1)
                guess = closest(str(key), flds)
                if guess is not None:
                    message = message.replace(f"'{guess}'?", f"'{_join(path, guess)}'?", 1)
            raise ConfigError(message)
    kwargs = {}
    for name, f in flds.items():
        if name in data:
            kwargs[name] = _convert(hints[name], data[name], where, _join(path, name))
            check_declared(f, kwargs[name], f"{where}: key '{_join(path, name)}'")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{where}: missing required key '{_join(path, name)}'")
    obj = cls(**kwargs)
    check = getattr(obj, "validate", None)
    if callable(check):
        check(where)  # cross-field rules; raises ConfigError naming the file
    return obj


def check_argument(cls: type, name: str, value: Any, where: str) -> Any:
    """``value`` checked as the setting ``name`` of ``cls`` (its type, then its declared range
    or choices), for a Python API argument that means that setting; -> the value converted."""
    (f,) = [f for f in dataclasses.fields(cls) if f.name == name]
    converted = _convert(typing.get_type_hints(cls)[name], value, where, "")
    check_declared(f, converted, where)
    return converted


def check_fields(obj: Any, where: str, path: str = "") -> None:
    """The declared checks of every field of the dataclass ``obj`` (one built in Python, not
    read by :func:`from_dict`); ``path`` is its section's, as from_dict would name it."""
    for f in dataclasses.fields(obj):
        if f.init:
            check_declared(f, getattr(obj, f.name), f"{where}: key '{_join(path, f.name)}'")


def to_dict(obj: Any) -> Any:
    """Dataclass (possibly nested) -> plain JSON-able dict."""
    return dataclasses.asdict(obj)


def parse_value(raw: str) -> Any:
    """A value given on the command line: JSON where it parses as JSON (so 1e-3 is a number),
    else YAML (unquoted strings, {a: 1} mappings, '12:00:00' quoted); empty is ''."""
    if not raw.strip():
        return ""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        pass
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw


def parse_assignment(text: str, where: str) -> tuple[list[str], Any]:
    """``key=value`` or ``section.key=value`` -> (the key's parts, the parsed value)."""
    if "=" not in text:
        raise ConfigError(f"{where} {text!r}: expected section.key=value, e.g. effects.level=0.9")
    dotted, raw = text.split("=", 1)
    parts = [p.strip() for p in dotted.split(".")]
    if not all(parts):
        raise ConfigError(f"{where} {text!r}: empty key")
    return parts, parse_value(raw)


def flat_assignments(texts: list[str], where: str = "--set") -> dict[str, Any]:
    """``key=value`` overrides of a flat settings dataclass -> {dotted key: parsed value}
    (a dotted key is kept whole, for :func:`from_dict` to name as unknown)."""
    data: dict[str, Any] = {}
    for text in texts:
        parts, value = parse_assignment(text, where)
        data[".".join(parts)] = value
    return data
