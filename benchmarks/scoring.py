"""The scoring benchmark: real text through the MiniLM sentiment scorer on the CPU.

Four ways to score the same texts, timed in one run:

- *loop*: one text per forward pass, as the reference pipeline scores;
- *unsorted batches*: batches of 32 in the file's order (each padded to its longest text);
- *ours*: ``MiniLMSentimentScorer.score``, tokenising, sorting by length, padding, scoring;
- *bare forward*: the model alone on pre-tokenised, length-sorted, pre-padded batches: the
  limit for any scorer of this model at this batch size.

Ours and the bare forward alternate twice and the faster of each is kept, so a burst of noise
on this shared machine does not decide the ratio.
"""

from __future__ import annotations

import logging
import time

import torch

from rate.catalog import load_scoring_template
from rate.packaged import chatterbot_pairs, drug_reviews
from rate.score.backends import build_scorer

log = logging.getLogger(__name__)


def text_sets() -> dict[str, list[str]]:

    reviews = [r["review"] for split in ("train", "test") for r in drug_reviews(split)]
    return {"drug reviews": reviews, "chatterbot responses": [p[2] for p in chatterbot_pairs()]}


def _loop(scorer, texts: list[str]) -> list[float]:

    out = []
    for text in texts:
        ids = scorer.tokenizer(
            text, truncation=True, max_length=scorer.max_length, return_tensors="pt"
        )
        with torch.inference_mode():
            value = scorer._model_scores(ids["input_ids"], ids["attention_mask"], {})
        out.append(float(value[0]))
    return out


def _unsorted(scorer, texts: list[str], batch: int) -> None:

    for i in range(0, len(texts), batch):
        enc = scorer.tokenizer(
            texts[i : i + batch],
            truncation=True,
            max_length=scorer.max_length,
            padding=True,
            return_tensors="pt",
        )
        with torch.inference_mode():
            scorer._model_scores(enc["input_ids"], enc["attention_mask"], {})


def _bare_batches(scorer, texts: list[str], batch: int) -> list:
    ids = scorer.encode_pairs([""] * len(texts), texts)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    return [scorer.pad([ids[j] for j in order[i : i + batch]]) for i in range(0, len(ids), batch)]


def _bare(scorer, batches: list) -> None:

    with torch.inference_mode():
        for input_ids, mask, kwargs in batches:
            scorer._model_scores(input_ids, mask, kwargs)


def bench_scoring(batch: int = 32) -> dict:
    """texts/s of the four ways on both text sets, and the agreement of ours with the loop."""

    scorer = build_scorer(load_scoring_template("minilm_sentiment"))
    results: dict = {"scoring_batch_size": batch, "scoring_model": "minilm_sentiment"}
    for name, texts in text_sets().items():
        key = name.split()[0]
        n = len(texts)
        ids = scorer.encode_pairs([""] * n, texts)
        real = sum(len(s) for s in ids)
        padded = sum(
            max(len(s) for s in ids[i : i + batch]) * len(ids[i : i + batch])
            for i in range(0, n, batch)
        )
        log.info("scoring benchmark: %s (%d texts), one at a time", name, n)
        t0 = time.perf_counter()
        loop_scores = _loop(scorer, texts)
        loop_s = time.perf_counter() - t0
        log.info("scoring benchmark: %s, unsorted batches", name)
        t0 = time.perf_counter()
        _unsorted(scorer, texts, batch)
        unsorted_s = time.perf_counter() - t0
        batches = _bare_batches(scorer, texts, batch)
        ours_s, bare_s = float("inf"), float("inf")
        for _ in range(2):
            log.info("scoring benchmark: %s, ours and the bare forward", name)
            scorer.batch_size = batch
            t0 = time.perf_counter()
            ours_scores = scorer.score([""] * n, texts)
            ours_s = min(ours_s, time.perf_counter() - t0)
            t0 = time.perf_counter()
            _bare(scorer, batches)
            bare_s = min(bare_s, time.perf_counter() - t0)
        results[key] = {
            "texts": n,
            "mean_tokens": round(real / n, 1),
            "unsorted_padding": round(padded / real, 2),
            "loop_texts_per_s": n / loop_s,
            "unsorted_texts_per_s": n / unsorted_s,
            "ours_texts_per_s": n / ours_s,
            "bare_texts_per_s": n / bare_s,
            "ours_over_bare_time": ours_s / bare_s,
            "ours_over_loop_speed": loop_s / ours_s,
            "max_abs_diff_vs_loop": max(
                abs(a - b) for a, b in zip(ours_scores, loop_scores, strict=True)
            ),
        }
    return results


def render_scoring(r: dict) -> list[str]:
    """The BENCHMARKS.md section for :func:`bench_scoring`'s figures."""
    lines = [
        "## Scoring real text (issue: real reward models)",
        "",
        f"MiniLM sentiment scorer (all-MiniLM-L6-v2 + fitted head), fp32 on the CPU, batches of "
        f"{r['scoring_batch_size']}; texts/s:",
        "",
        "| text set | texts (mean tokens) | one at a time | unsorted batches (padding) | ours | "
        "bare forward | ours vs bare (time) | ours vs loop (speed) | max abs diff vs loop |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key in ("drug", "chatterbot"):
        s = r[key]
        lines.append(
            f"| {'drug reviews' if key == 'drug' else 'chatterbot responses'} | {s['texts']} "
            f"({s['mean_tokens']}) | {s['loop_texts_per_s']:.1f} | "
            f"{s['unsorted_texts_per_s']:.1f} ({s['unsorted_padding']:.2f}x) | "
            f"{s['ours_texts_per_s']:.1f} | {s['bare_texts_per_s']:.1f} | "
            f"{s['ours_over_bare_time']:.3f}x | {s['ours_over_loop_speed']:.1f}x | "
            f"{s['max_abs_diff_vs_loop']:.1e} |"
        )
    lines += [
        "",
        "Goals: ours within 1.15x of the bare forward's time, scores equal to the loop's to 1e-4.",
        "The bare forward is the model alone on batches tokenised, sorted and padded beforehand;",
        "ours does all of that inside the timing. Unsorted batches pad every text to the longest",
        "of its batch (the padding column is padded tokens over real tokens).",
        "",
    ]
    return lines
