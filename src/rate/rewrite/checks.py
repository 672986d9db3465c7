"""Did each rewrite do its job? Every pass of create_dataset is checked, output by output.

An output is, in this order of precedence:

- ``length_limit``: the output stopped at a length limit (finish_reason 'length': the cap the
  request sent, or the model's own), so it is cut short;
- ``empty``: nothing but whitespace;
- ``refusal``: it opens like a model declining ("I'm sorry, but ...", "As an AI ...");
- ``unchanged``: identical to its input (up to surrounding whitespace), except in the placebo
  pass, whose job is to keep W and may leave a text as it was;
- ``missed_target``: W, re-read from the output by the template's rule (or its check scorer),
  is not the target (``undefined`` when the rule cannot tell);
- ``ok``; or ``unchecked`` when W cannot be read off text and no check scorer is named.

The effects stage can keep only the examples whose rewrites are ``ok`` or ``unchecked``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

LABELS = (
    "ok",
    "unchecked",
    "length_limit",
    "empty",
    "refusal",
    "unchanged",
    "missed_target",
    "undefined",
)
PASSING = ("ok", "unchecked")
REFUSAL = re.compile(
    r"^\W*(I'?m sorry|I am sorry|sorry, but|I apologi[sz]e|I can(?:no|')t (?:help|assist|"
    r"comply|do that|fulfil|provide|rewrite|create)|I won'?t be able|I'm (?:not able|unable)|"
    r"I am (?:not able|unable)|As an AI)",
    re.IGNORECASE,
)


def label_outputs(
    inputs: list[str],
    outputs: list[str],
    targets: list[bool],
    classify_texts: Callable[[list[str]], list[bool | None] | None] | None,
    stopped_at_limit: list[bool] | None = None,
    unchanged_ok: bool = False,
) -> list[str]:
    """One label of :data:`LABELS` per output (``stopped_at_limit``: which outputs the
    rewriter says were cut at a length limit; ``unchanged_ok``: an output identical to its
    input is checked for W like any other, as the placebo pass's may be)."""
    labels: list[str | None] = []
    cut = stopped_at_limit or [False] * len(outputs)
    for src, out, at_limit in zip(inputs, outputs, cut, strict=True):
        if at_limit:
            labels.append("length_limit")
        elif not out.strip():
            labels.append("empty")
        elif REFUSAL.search(out):
            labels.append("refusal")
        elif out.strip() == src.strip() and not unchanged_ok:
            labels.append("unchanged")
        else:
            labels.append(None)
    todo = [i for i, lab in enumerate(labels) if lab is None]
    read = classify_texts([outputs[i] for i in todo]) if (todo and classify_texts) else None
    for k, i in enumerate(todo):
        if read is None:
            labels[i] = "unchecked"
        elif read[k] is None:
            labels[i] = "undefined"
        else:
            labels[i] = "ok" if read[k] == targets[i] else "missed_target"
    return [lab or "unchecked" for lab in labels]


def summarize(labels: list[str]) -> dict:
    """Counts per label and the share that passed (of all the pass's rewrites)."""
    counts = Counter(labels)
    passed = sum(counts[k] for k in PASSING)
    return {
        "n": len(labels),
        **{k: counts.get(k, 0) for k in LABELS},
        "passing": round(passed / len(labels), 4) if labels else None,
    }


# The one rewrite-success figure: rewrites that passed their checks (ok, or unchecked where W
# cannot be read off text) out of all the pass's rewrites, failures of every kind (unchanged,
# empty, cut short ...) in the denominator. Every table that prints it says so.
SUCCESS_LABEL = "passed checks (of all rewrites)"


def success_text(passed: int | None, n: int | None) -> str:
    """The rewrite-success figure as tables print it: ``41/60 (68.3%)``."""
    if passed is None or not n:
        return "n/a"
    return f"{passed}/{n} ({passed / n:.1%})"
