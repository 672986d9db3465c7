"""The settings schema, fuzzed: every numeric key of every settings class declares its range,
and NaN, infinities, negatives, zero, huge and wrong-typed values get a one-line error naming
the key, or are inside the range the key declares (issue 45, items 1 and 9).

The classes are found, not listed: every dataclass of rate and the world whose fields are all
declared with ``opt`` (a config section, the settings of audit, certify and RL), and the options
of every kind of template part in rate's and the world's registries (what a template's
``source``, ``w_classifier``, ``rewriter``, ``perturb`` and a scoring template's backend are
parsed into; not the live objects built from them). A new setting without a range fails the
second test.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import pkgutil
import time
import types
import typing

import pytest

import rate
import tinyworld
from rate.errors import ConfigError
from rate.registry import Kind, LivePart, Part
from rate.schema import MISSING, Bound, from_dict
from tinyworld.vocab import SYLLABLES

PROBES = {
    "nan": math.nan,
    "+inf": math.inf,
    "-inf": -math.inf,
    "negative": -1,
    "zero": 0,
    "huge": 10**30,
    "huge float": 1e300,
    "wrong type": "12",
    "a bool": True,
}


def _modules() -> list[types.ModuleType]:
    return [
        importlib.import_module(module.name)
        for package in (rate, tinyworld)
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
    ]


def _kinds(value: object) -> list[Kind]:
    """The kinds of parts a module's variable holds: a Kind, or a registry {name: Kind}."""
    if isinstance(value, Kind):
        return [value]
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, Kind)]
    return []


def _settings_classes() -> list[type]:
    found = {}
    for mod in _modules():
        for obj in vars(mod).values():
            for kind in _kinds(obj):  # a part's options, as a template is parsed into
                found[f"{kind.options.__module__}.{kind.options.__qualname__}"] = kind.options
            if not (inspect.isclass(obj) and dataclasses.is_dataclass(obj)):
                continue
            if issubclass(obj, (Part, LivePart)):
                continue  # a part's options are its kind's; a live part is built, not parsed
            fields = [f for f in dataclasses.fields(obj) if f.init]
            if fields and all("help" in f.metadata for f in fields):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [found[k] for k in sorted(found)]


def _part_options() -> set[type]:
    """Every options class of a part defined in rate and the world (a live part excluded)."""
    return {
        obj
        for mod in _modules()
        for obj in vars(mod).values()
        if inspect.isclass(obj)
        and dataclasses.is_dataclass(obj)
        and issubclass(obj, Part)
        and not issubclass(obj, LivePart)
    }


def _number_type(tp: object) -> type | None:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        tp = args[0] if len(args) == 1 else None
    return tp if tp in (int, float) else None


def _numeric_keys(cls: type) -> list[tuple[str, type]]:
    hints = typing.get_type_hints(cls)
    return [
        (f.name, kind)
        for f in dataclasses.fields(cls)
        if f.init and (kind := _number_type(hints[f.name])) is not None
    ]


CLASSES = _settings_classes()
KEYS = [(cls, name, kind) for cls in CLASSES for name, kind in _numeric_keys(cls)]
CASES = [(cls, name, kind, probe) for cls, name, kind in KEYS for probe in PROBES]
# The classes fuzzed, and every part's options (ready for a numeric key to come).
BASED = [cls for cls in CLASSES if _numeric_keys(cls) or issubclass(cls, Part)]


# A valid base for the classes whose required keys need more than a name, or whose
# cross-field rules a lone probe would break: each probe then fails, if it does, for itself.
BASES: dict[str, dict] = {
    "JsonlSource": {"path": "x.jsonl", "text_field": "text", "prompt": ""},
    "HFDatasetSource": {"path": "x"},
    "TyposOptions": {"rate": 0.1},
    "FieldEqualsOptions": {"field": "x", "w1_values": [1]},
    "PythonRuleOptions": {"function": "rate.schema:from_dict"},
    "PythonScorerOptions": {"function": "rate.demos.planted_rm:score"},
    "RulesEnOptions": {"attribute": "sentiment"},
    "HFClassifierOptions": {"model": "x", "label": 1},  # minus_label 0 differs from it
    "TinyWorldSource": {"policies": {"policy": 1.0}},
    "TokenSwapOptions": {"token": SYLLABLES[0], "counterpart": SYLLABLES[1]},
    # The world config's sections (rate world build --config).
    "Habit": {"family": "anvil", "pair": SYLLABLES[:2], "rate": 0.1},
    "PairPremium": {"pair": SYLLABLES[:2], "bonus": 0.1},
}


def _base(cls: type) -> dict:
    """A valid configuration of ``cls``: its BASES entry, else a name for each required key."""
    if cls.__name__ in BASES:
        return dict(BASES[cls.__name__])
    hints = typing.get_type_hints(cls)
    data = {}
    for f in dataclasses.fields(cls):
        if f.init and f.default is MISSING and f.default_factory is MISSING:
            assert hints[f.name] is str, f"{cls.__name__}.{f.name}: give the fuzz a base (BASES)"
            data[f.name] = "x"
    return data


def test_the_schema_is_found_whole():
    names = {c.__name__ for c in CLASSES}
    assert {"EffectsConfig", "RewritesConfig", "ScoringConfig", "SlurmConfig"} <= names
    assert {"AuditSettings", "CertifySettings", "RLConfig"} <= names
    assert {"WorldConfig", "TrainConfig", "LabelConfig", "PoolConfig", "Habit"} <= names
    parts = {"DrugReviewSource", "TyposOptions", "ScorerAboveOptions", "HFGenerateOptions"}
    parts |= {"OpenAIChatOptions", "OpenAIBatchOptions", "HFClassifierOptions", "VaderOptions"}
    parts |= {"MiniLMSentimentOptions", "TinyWorldSource", "TinyRewriterOptions"}
    assert parts <= names, parts - names
    assert not any(issubclass(c, LivePart) for c in CLASSES)
    # Every part's options class is some kind's: none is parsed outside the registries.
    assert _part_options() <= set(CLASSES), _part_options() - set(CLASSES)
    assert len(KEYS) >= 95, len(KEYS)


@pytest.mark.parametrize("cls", BASED, ids=[c.__name__ for c in BASED])
def test_each_class_has_a_valid_base(cls):
    """A probe's error is then the probe's, not a rule the base data broke."""
    from_dict(cls, _base(cls), "fuzz.yaml")


@pytest.mark.parametrize(
    ("cls", "name", "kind"), KEYS, ids=[f"{c.__name__}.{n}" for c, n, _ in KEYS]
)
def test_every_numeric_setting_declares_a_range_with_an_upper_end(cls, name, kind):
    (f,) = [f for f in dataclasses.fields(cls) if f.name == name]
    bound = f.metadata.get("bound")
    assert isinstance(bound, Bound), f"{cls.__name__}.{name}: declare opt(..., bound=Bound(...))"
    assert bound.low is not None and bound.high is not None, f"{cls.__name__}.{name}: {bound}"


def _inside(bound: Bound, kind: type, value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if kind is int and not isinstance(value, int):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    low_ok = value > bound.low if bound.strict else value >= bound.low
    return low_ok and (value < bound.high if bound.below else value <= bound.high)


@pytest.mark.parametrize(
    ("cls", "name", "kind", "probe"), CASES, ids=[f"{c.__name__}.{n}={p}" for c, n, _, p in CASES]
)
def test_a_bad_value_is_one_line_naming_the_key(cls, name, kind, probe):
    (f,) = [f for f in dataclasses.fields(cls) if f.name == name]
    value = PROBES[probe]
    start = time.monotonic()
    try:
        from_dict(cls, {**_base(cls), name: value}, "fuzz.yaml")
    except ConfigError as err:
        message = str(err)
        assert "\n" not in message and message.startswith("fuzz.yaml"), message
        assert name in message, message
    else:
        assert _inside(f.metadata["bound"], kind, value), f"{cls.__name__}.{name}={value!r} taken"
    assert time.monotonic() - start < 10
