"""Did-you-mean suggestions for unknown names (config keys, template names, backends)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """Return the candidate most similar to `name` (difflib ratio >= 0.6), or None."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def plural(noun: str) -> str:
    """``key`` -> ``keys``, ``family`` -> ``families``, ``class`` -> ``classes``."""
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def unknown_name_message(
    kind: str, name: str, candidates: Iterable[str], where: str | None = None
) -> str:
    """Build an error message for an unknown `kind` called `name`, with the nearest valid one.

    >>> unknown_name_message("key", "kl_coeff", ["kl_coef", "lr"], where="config.json")
    "config.json: unknown key 'kl_coeff'; did you mean 'kl_coef'? Valid keys: kl_coef, lr"
    """
    valid = list(dict.fromkeys(candidates))  # dedupe, keep the caller's order
    message = f"unknown {kind} {name!r}"
    if where:
        message = f"{where}: {message}"
    guess = closest(name, valid)
    message += f"; did you mean {guess!r}?" if guess is not None else "."
    message += f" Valid {plural(kind)}: {', '.join(valid) if valid else '(none)'}"
    return message
