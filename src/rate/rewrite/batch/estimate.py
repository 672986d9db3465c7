"""Token and cost estimates for a dry run (no tokenizer library is installed: this is a rough
count, stated as such)."""

from __future__ import annotations

import math
from collections.abc import Sequence

CHARS_PER_TOKEN = 4  # OpenAI's rule of thumb for English text
MESSAGE_OVERHEAD_TOKENS = 4  # per message: role and separators
REPLY_PRIMING_TOKENS = 3  # every reply is primed with <|start|>assistant<|message|>
BATCH_DISCOUNT = 0.5  # the Batch API costs half the synchronous price

METHOD = {
    "input_tokens": (
        f"characters / {CHARS_PER_TOKEN} (rounded up) per message, plus "
        f"{MESSAGE_OVERHEAD_TOKENS} per message and {REPLY_PRIMING_TOKENS} per request: no "
        "tokenizer is used, so expect an error of 10-30%"
    ),
    "output_tokens_estimate": (
        "each rewrite is assumed about as long as the text it rewrites (characters / "
        f"{CHARS_PER_TOKEN}), capped at max_tokens (or max_completion_tokens) when one is set"
    ),
    "cost_usd": (
        "prices[model] per million input and output tokens (synchronous list prices), times "
        f"{BATCH_DISCOUNT} for the Batch API's 50% discount"
    ),
}


def text_tokens(text: str) -> int:
    """A rough token count of ``text``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def input_tokens(messages: Sequence[dict]) -> int:
    """A rough prompt token count of one chat request."""
    return REPLY_PRIMING_TOKENS + sum(
        MESSAGE_OVERHEAD_TOKENS + text_tokens(str(m.get("content", ""))) for m in messages
    )


def estimate(
    requests: Sequence[tuple[Sequence[dict], str]],
    model: str,
    max_tokens: int | None,
    prices: dict,
) -> dict:
    """Tokens and cost of ``requests`` ((messages, text to rewrite) each) at the batch price.
    -> {input_tokens, output_tokens_estimate, cost_usd, price, notes}"""
    tokens_in = sum(input_tokens(messages) for messages, _ in requests)
    cap = max_tokens if max_tokens is not None else float("inf")
    tokens_out = sum(int(min(cap, text_tokens(text))) for _, text in requests)
    price = prices.get(model) if isinstance(prices, dict) else None
    notes = [f"{name}: {how}" for name, how in METHOD.items()]
    cost = None
    if isinstance(price, dict) and {"input_per_1m", "output_per_1m"} <= price.keys():
        full = (
            tokens_in * float(price["input_per_1m"]) + tokens_out * float(price["output_per_1m"])
        ) / 1e6
        cost = round(full * BATCH_DISCOUNT, 6)
    else:
        known = ", ".join(sorted(prices)) if isinstance(prices, dict) and prices else "none"
        notes.append(
            f"cost_usd is None: no price for model {model!r} (prices given for: {known}); "
            'add prices[model] = {"input_per_1m": ..., "output_per_1m": ...} in USD'
        )
    return {
        "input_tokens": tokens_in,
        "output_tokens_estimate": tokens_out,
        "cost_usd": cost,
        "price": price if cost is not None else None,
        "notes": notes,
    }
