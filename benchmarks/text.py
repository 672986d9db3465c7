"""The text-side benchmark of create_dataset: building rewrite requests at the reference's
scale, and the offline rule-based rewriter on the real drug reviews."""

from __future__ import annotations

import random
import time

from rate.catalog import load_dataset_template
from rate.datasets.base import Example
from rate.datasets.w_classifiers import FieldAbove
from rate.packaged import drug_reviews
from rate.rewrite.base import RewriteRequest
from rate.rewrite.options import RulesEnOptions
from rate.rewrite.rules_en import RulesEnRewriter
from rate.rewrite.stage import select_examples


def bench_requests(n: int = 25_000) -> dict:
    """Seconds to classify W and build both passes' rewrite requests (the filled-in prompts)
    for ``n`` IMDB-sized examples with the imdb_sentiment template."""

    template = load_dataset_template("imdb_sentiment")
    _, rule = template.parts["w_classifier"]
    rng = random.Random(0)
    words = ["the", "film", "was", "great", "awful", "plot", "actor", "scene", "fun", "boring"]
    examples = [
        Example(f"row{i}", " ".join(rng.choices(words, k=230)), "Write a movie review: ", {
            "label": i % 2
        })
        for i in range(n)
    ]  # fmt: skip
    t0 = time.perf_counter()
    chosen, _ = select_examples(iter([examples]), rule, n)
    first = [
        RewriteRequest(f"{ex.key}/rewrite", ex.text, not w, template.instruction(ex.text, not w))
        for ex, w in chosen
    ]
    second = [
        RewriteRequest(f"{ex.key}/rewritten_rewrite", ex.text, w, template.instruction(ex.text, w))
        for ex, w in chosen
    ]
    seconds = time.perf_counter() - t0
    assert len(first) == len(second) == n
    return {"requests_n": n, "requests_s": seconds}


def bench_rules_rewriter() -> dict:
    """Seconds for both passes of the rule-based rewriter over the 979 drug reviews, for
    sentiment and for length (threshold: the median word count)."""

    reviews = [r["review"] for split in ("train", "test") for r in drug_reviews(split)]
    out: dict = {"rules_reviews": len(reviews)}
    rule = FieldAbove("text_words", "median")
    rule.fit([Example(str(i), t, "", {}) for i, t in enumerate(reviews)])
    for attribute in ("sentiment", "length"):
        rewriter = RulesEnRewriter(RulesEnOptions(attribute), rule)
        targets = [i % 2 == 0 for i in range(len(reviews))]
        t0 = time.perf_counter()
        first = rewriter.rewrite(
            [
                RewriteRequest(str(i), t, w, "")
                for i, (t, w) in enumerate(zip(reviews, targets, strict=True))
            ]
        )
        rewriter.rewrite(
            [
                RewriteRequest(str(i), t, not w, "")
                for i, (t, w) in enumerate(zip(first, targets, strict=True))
            ]
        )
        out[f"rules_{attribute}_s"] = time.perf_counter() - t0
    return out


def bench_text() -> dict:
    return {**bench_requests(), **bench_rules_rewriter()}


def render_text(r: dict, date: str | None) -> list[str]:
    return [
        "## Datasets and rewriters (issue: real datasets and rewriters)",
        "",
        f"Measured {date}.",
        "",
        "| what | measured | goal |",
        "|---|---|---|",
        f"| W classified and both passes' rewrite requests built for {r['requests_n']:,} "
        f"IMDB-sized examples (imdb_sentiment template) | {r['requests_s']:.2f} s | < 2 s |",
        f"| rule-based rewriter, both passes over the {r['rules_reviews']} drug reviews: "
        f"sentiment / length | {r['rules_sentiment_s']:.2f} s / {r['rules_length_s']:.2f} s "
        "| < 10 s |",
        "",
    ]
