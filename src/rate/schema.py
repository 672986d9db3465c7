"""Typed configs from plain dicts: dataclasses in, clear errors out.

``from_dict(Cls, data, where)`` builds a (possibly nested) dataclass from JSON/YAML data,
rejecting unknown keys (naming the closest valid one), missing required keys and values of the
wrong type. Every message starts with ``where`` (a file, optionally with a key path).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, TypeVar, Union

from rate.errors import ConfigError
from rate.suggest import closest, unknown_name_message

T = TypeVar("T")


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
        return float(value)
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
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{where}: missing required key '{_join(path, name)}'")
    obj = cls(**kwargs)
    check = getattr(obj, "validate", None)
    if callable(check):
        check(where)  # cross-field rules; raises ConfigError naming the file
    return obj


def to_dict(obj: Any) -> Any:
    """Dataclass (possibly nested) -> plain JSON-able dict."""
    return dataclasses.asdict(obj)


def parse_override(text: str, where: str = "--override") -> tuple[str, Any]:
    """Parse ``key=json_value`` (a bare word that is not JSON is taken as a string)."""
    import json

    if "=" not in text:
        raise ConfigError(f"{where}: expected key=value, got {text!r}")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"{where}: empty key in {text!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value
