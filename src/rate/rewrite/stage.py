"""Stage 1, create_dataset: classify W, keep exactly n examples, rewrite twice (three times
with a placebo pass), save.

The output is the reference pipeline's JSON: ``{index: {"w_original", "completions":
{"original", "rewrite", "rewritten rewrite"}, "reward_question"}}``, plus our ``key`` and
``metadata`` per example, and ``"perfect rewrite"`` where the rewriter knows the true
counterfactual (the tiny world), ``"placebo rewrite"`` where the template has a
``placebo_prompt`` (each rewrite rewritten again with W kept: a third pass, off unless the
template asks for it), and ``checks``: for each rewrite, whether it reached its target W
(:mod:`rate.rewrite.checks`). Every pass goes through the same rewriter, so a rerun resumes
each of them alike (the Batch API's cache answers what was bought). A ``.meta.json`` beside it records the template, the
config, the W counts, the rewriter and the check counts of each pass.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from rate.config import Config, config_record
from rate.datasets.base import Example, SourceContext
from rate.datasets.registry import PERTURBATIONS, RULES, SOURCES
from rate.datasets.w_classifiers import WRule
from rate.errors import ConfigError, DataFileError, TemplateError
from rate.io import json_writer
from rate.progress import progress
from rate.records import (
    ORIGINAL,
    PERFECT,
    PLACEBO,
    REWRITE,
    REWRITTEN,
    rewritten_example,
    rewritten_writer,
)
from rate.rewrite.backends import build_rewriter
from rate.rewrite.base import Rewriter, RewriteRequest, checked_outputs
from rate.rewrite.checks import label_outputs, summarize
from rate.store import Layout, dataset_stem, publish
from rate.templates import DatasetTemplate

log = logging.getLogger(__name__)

TYPOS = "typos"  # the field that counts an example's typos (metadata)


def select_examples(
    chunks, classify, n: int, need_both: bool = True
) -> tuple[list[tuple[Example, bool]], dict]:
    """Exactly ``n`` examples with W defined, in source order; both W values present whenever
    the source has both. -> (examples with W, counts)"""
    kept: list[tuple[Example, bool]] = []
    seen = undefined = 0
    for chunk in chunks:
        for ex in chunk:
            seen += 1
            w = classify(ex)
            if w is None:
                undefined += 1
                continue
            kept.append((ex, w))
        values = {w for _, w in kept}
        if len(kept) >= n and (not need_both or len(values) == 2 or len(kept) >= 50 * n):
            break
    if len(kept) < n:
        raise DataFileError(
            f"only {len(kept)} examples with W defined ({seen} drawn, {undefined} undefined); "
            f"asked for {n}: lower n_examples or widen the source"
        )
    chosen = kept[:n]
    if need_both:
        present = {w for _, w in chosen}
        for value in (True, False):
            if value not in present:
                extra = next((e for e in kept[n:] if e[1] == value), None)
                if extra is not None:
                    # Replace the last example of the majority value.
                    i = max(i for i, (_, w) in enumerate(chosen) if w != value)
                    chosen[i] = extra
    counts = {
        "drawn": seen,
        "undefined_skipped": undefined,
        "w_1": sum(1 for _, w in chosen if w),
        "w_0": sum(1 for _, w in chosen if not w),
    }
    return chosen, counts


def _rewrite_all(
    rewriter: Rewriter, requests: list[RewriteRequest], batch: int, desc: str
) -> tuple[list[str], list[bool]]:
    """The outputs of one pass, and which of them stopped at a length limit."""
    if rewriter.whole_pass:
        batch = max(1, len(requests))
    out: list[str] = []
    cut: list[bool] = []
    for i in progress(range(0, len(requests), batch), desc, total=-(-len(requests) // batch)):
        part = requests[i : i + batch]
        out.extend(checked_outputs(rewriter, part, rewriter.rewrite(part)))
        cut.extend(rewriter.stopped_at_limit(part))
    return out, cut


def _perturbed(template: DatasetTemplate, chunks, rule: WRule, seed: int):
    """The source's chunks with the template's perturbation applied to the examples whose W
    (read before it) it applies to, as the reference adds its typos to the whole dataset
    before W is classified; W is read again afterwards. The chunks unchanged without one."""
    if "perturb" not in template.parts:
        return chunks
    kind, options = template.parts["perturb"]
    perturb = PERTURBATIONS[kind].build(options)

    def one(ex: Example) -> Example:
        w = rule(ex)
        if w is None or not perturb.applies(w):
            return ex
        text, n = perturb(ex.text, ex.key, seed)
        return Example(ex.key, text, ex.prompt, {**ex.fields, TYPOS: n})

    return ([one(ex) for ex in chunk] for chunk in chunks)


def _perturb_counts(chosen) -> dict:
    """How many of the chosen examples were perturbed, and the edits made in them."""
    edits = [ex.fields[TYPOS] for ex, _ in chosen if TYPOS in ex.fields]
    log.info("perturbation: %d edits in %d examples", sum(edits), len(edits))
    return {"examples": len(edits), "edits": sum(edits)}


def _check_rule(template: DatasetTemplate, rule: WRule) -> WRule:
    """How rewrites are re-read for W: the template's check scorer, else its (fitted) W rule."""
    if "rewrite_check" in template.parts:
        kind, options = template.parts["rewrite_check"]
        return RULES[kind].build(options)
    return rule


@dataclass
class Chosen:
    """The examples a dataset is made of, with W, and how they were chosen."""

    examples: list[tuple[Example, bool]]
    counts: dict  # drawn, undefined_skipped, w_1, w_0 (and perturbed)
    rule: WRule  # the live W rule, fitted on the source
    fitted: dict  # what the rule computed (e.g. a median threshold)


def choose_examples(template: DatasetTemplate, n: int, seed: int) -> Chosen:
    """Exactly ``n`` examples with W, perturbed if the template says so."""
    kind, source_options = template.parts["source"]
    ctx = SourceContext(seed=seed, template_path=template.path)
    source = SOURCES[kind].build(source_options, ctx)
    rule_kind, rule_options = template.parts["w_classifier"]
    rule = RULES[rule_kind].build(rule_options)
    chunks = source.chunks()
    fitted: dict = {}
    try:
        if source.finite:
            everything = [ex for chunk in chunks for ex in chunk]
            fitted = rule.fit(everything)
            chunks = iter([everything])
        chosen, counts = select_examples(_perturbed(template, chunks, rule, seed), rule, n)
    except TemplateError as err:  # e.g. a python rule's function failed: name the template
        if str(err).startswith(template.path):
            raise
        raise TemplateError(f"{template.path}: {err}") from None
    if counts["w_1"] == 0 or counts["w_0"] == 0:
        only = int(counts["w_1"] > 0)
        if rule_kind != "always" and not template.one_sided_w:
            raise DataFileError(
                f"{template.path}: the W rule ({rule_kind}) gives W={only} to every one of the "
                f"{counts['drawn'] - counts['undefined_skipped']} examples with W defined, so "
                "nothing can be compared; check w_classifier against the data (fitted: "
                f"{fitted or 'nothing'}), or set one_sided_w: true (or rule: always) for a "
                f"dataset meant for the {'ATT' if only else 'ATU'} alone"
            )
        log.info("every example has W=%d: only the %s is estimated", only, "ATT" if only else "ATU")
    if "perturb" in template.parts:
        counts["perturbed"] = _perturb_counts(chosen)
    return Chosen(chosen, counts, rule, fitted)


def first_requests(template: DatasetTemplate, chosen) -> list[RewriteRequest]:
    """The first pass: each original toward the opposite W."""
    return [
        RewriteRequest(f"{ex.key}/rewrite", ex.text, not w, template.instruction(ex.text, not w))
        for ex, w in chosen
    ]


def placebo_requests(
    template: DatasetTemplate, chosen, rewrites: list[str]
) -> list[RewriteRequest]:
    """The placebo pass: each rewrite rewritten again with W kept as it is in the rewrite (the
    opposite of the original's), so that it has had two rounds of the rewriter's edits, as
    the rewrite of the rewrite has."""
    return [
        RewriteRequest(f"{ex.key}/placebo", r, not w, template.placebo_instruction(r))
        for (ex, w), r in zip(chosen, rewrites, strict=True)
    ]


def build_dataset(
    template: DatasetTemplate, n: int, seed: int, batch_size: int = 512
) -> tuple[dict, dict]:
    """The rewritten dataset's examples (:func:`rate.records.rewritten_example`) and a summary
    for the metadata."""
    t0 = time.perf_counter()
    picked = choose_examples(template, n, seed)
    chosen = picked.examples
    rewriter = build_rewriter(template, seed, picked.rule)
    check = _check_rule(template, picked.rule)
    classify = check.classify_texts
    first = first_requests(template, chosen)
    rewrites, cut = _rewrite_all(rewriter, first, batch_size, "rewrite (W flipped)")
    second = [
        RewriteRequest(f"{ex.key}/rewritten_rewrite", r, w, template.instruction(r, w))
        for (ex, w), r in zip(chosen, rewrites, strict=True)
    ]
    rewritten, cut_back = _rewrite_all(
        rewriter, second, batch_size, "rewrite of the rewrite (W back)"
    )
    perfect = rewriter.counterfactual(first)
    labels = {
        REWRITE: label_outputs(
            [r.text for r in first], rewrites, [r.target_w for r in first], classify, cut
        ),
        REWRITTEN: label_outputs(
            [r.text for r in second], rewritten, [r.target_w for r in second], classify, cut_back
        ),
    }
    placebo = None
    if template.placebo_prompt is not None:
        third = placebo_requests(template, chosen, rewrites)
        placebo, cut_p = _rewrite_all(rewriter, third, batch_size, "placebo rewrite (W kept)")
        labels[PLACEBO] = label_outputs(
            rewrites, placebo, [r.target_w for r in third], classify, cut_p, unchanged_ok=True
        )
    checks = {name: summarize(pass_labels) for name, pass_labels in labels.items()}
    for name, c in checks.items():
        log.info(
            "%s: %d ok, %d unchecked, %d missed the target, %d undefined, %d cut at a length "
            "limit, %d empty, %d refusals, %d unchanged (of %d)",
            name,
            c["ok"],
            c["unchecked"],
            c["missed_target"],
            c["undefined"],
            c["length_limit"],
            c["empty"],
            c["refusal"],
            c["unchanged"],
            c["n"],
        )

    examples = []
    for i, (ex, w) in enumerate(chosen):
        completions = {ORIGINAL: ex.text, REWRITE: rewrites[i], REWRITTEN: rewritten[i]}
        if perfect is not None:
            completions[PERFECT] = perfect[i]
        if placebo is not None:
            completions[PLACEBO] = placebo[i]
        checks_of_example = {name: pass_labels[i] for name, pass_labels in labels.items()}
        examples.append(
            rewritten_example(w, completions, ex.prompt, ex.key, ex.fields, checks_of_example)
        )
    summary = {
        "n_examples": len(examples),
        "counts": picked.counts,
        "w_classifier_fitted": picked.fitted,
        "rewriter": rewriter.describe(),
        "rewrite_checks": checks,
        # Texts cut to a scorer's limit by the W rule or the rewrite check (e.g. VADER's
        # max_chars), as score_dataset counts them.
        "truncated_texts": {
            "w_classifier": picked.rule.truncated_texts(),
            "rewrite_check": check.truncated_texts() if check is not picked.rule else 0,
        },
        "has_true_counterfactual": perfect is not None,
        "has_placebo": placebo is not None,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    return examples, summary


def _size(config: Config, template: DatasetTemplate) -> int:
    if config.smoke_test:
        return config.rewrites.smoke_n_examples
    return config.rewrites.n_examples or template.n_examples


def plan_dataset(config: Config, layout: Layout, template: DatasetTemplate) -> Path:
    """The dry run: choose the examples, write the first pass's request files with the
    backend's estimate of tokens and cost, and stop. -> the written estimate"""
    n = _size(config, template)
    picked = choose_examples(template, n, config.rewrites.seed)
    rewriter = build_rewriter(template, config.rewrites.seed, picked.rule)
    try:
        first = rewriter.plan(first_requests(template, picked.examples), config.rewrites.prices)
    except ConfigError as err:
        raise ConfigError(f"{template.path}: {err}") from None
    passes = 2 if template.placebo_prompt is None else 3

    def times(k: int) -> dict:
        return {
            key: (k * first[key] if isinstance(first.get(key), (int, float)) else None)
            for key in ("requests", "input_tokens", "output_tokens_estimate", "cost_usd")
        }

    both, every = times(2), times(passes)
    estimate = {
        "template": template.name,
        "n_examples": n,
        "counts": picked.counts,
        "w_classifier_fitted": picked.fitted,
        "first_pass": first,
        "both_passes": both,
        "passes": passes,
        "all_passes": every,
        "note": (
            "the second pass (and the placebo pass, where the template has a placebo_prompt) "
            "rewrites the first pass's outputs, which do not exist yet; each is estimated as "
            "the first pass again"
        ),
    }
    out = publish(
        layout.root / "data" / "batch_api",
        f"{template.name}_dry_run",
        ".json",
        config.smoke_test,
        json_writer(estimate),
        "create_dataset",
        None,
    )
    cost = every["cost_usd"]
    log.info(
        "dry run: %d requests in %d file(s) for the first pass, about %s input tokens; %s "
        "passes about %s (estimate in %s; request files under %s)",
        first["requests"],
        first["files"],
        f"{first['input_tokens']:,}",
        "both" if passes == 2 else "all three (with the placebo pass)",
        "an unknown cost (no price for the model)" if cost is None else f"${cost:,.2f}",
        out,
        first.get("run_dir"),
    )
    return out


def create_dataset(config: Config, layout: Layout, template: DatasetTemplate) -> Path:
    """Run stage 1 with ``config`` and its dataset template; -> the written dataset file (the
    estimate in a dry run)."""
    if config.rewrites.dry_run:
        return plan_dataset(config, layout, template)
    smoke = config.smoke_test
    n = _size(config, template)
    log.info(
        "create_dataset: %s, %d examples%s", template.name, n, " (smoke test)" if smoke else ""
    )
    examples, summary = build_dataset(template, n, config.rewrites.seed, config.rewrites.batch_size)
    out = publish(
        layout.rewrites,
        dataset_stem(template.name),
        ".json",
        smoke,
        rewritten_writer(examples),
        "create_dataset",
        {"template": template.record(), "config": config_record(config), **summary},
    )
    c = summary["counts"]
    log.info(
        "wrote %s: %d examples (W=1: %d, W=0: %d; %d undefined skipped)",
        out,
        summary["n_examples"],
        c["w_1"],
        c["w_0"],
        c["undefined_skipped"],
    )
    return out
