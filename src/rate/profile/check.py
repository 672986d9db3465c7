"""Known-answer validation of ``rate profile`` on real text, with the planted reward model.

The planted model (:mod:`rate.demos.planted_rm`) is the MiniLM sentiment logit plus a fixed
bonus for each of three attributes, read by its own detectors. So on the same texts, planted
minus MiniLM is exactly the sum of the bonuses of the attributes the detectors see, and the
difference of the two profiles' RATE estimates, on the same rewrites, is known: for an attribute
``a``, the mean over the examples RATE compares of ``sum_b bonus_b * (detect_b(W=1 text) -
detect_b(W=0 text))``; its own part ``bonus_a * share_a`` (``share_a``: the signed share of
rewrite pairs that flipped ``a`` as the planted detector sees it) is what the profile should
attribute to ``a``, and 0 for an attribute without a bonus.

:func:`run_profiles` runs one sweep generated from the catalogue (every rule attribute on the
drug reviews) with both scorers: the cells of a dataset share its rewrite step, so the two
profiles are of the very same rewritten texts (not merely of rewrites made by the same
deterministic rules). :func:`compare` reads both scored files of an attribute, takes the rows the
effects stage kept, applies the planted detectors to the texts that were scored, and checks:

- every planted attribute survives Benjamini-Hochberg at 0.05 in the planted profile;
- ``|RATE(planted) - RATE(MiniLM) - bonus_a * share_a| <= 2 SE`` (the SE of the paired
  per-example difference; 0 for an attribute without a bonus), with :data:`FLOAT_TOL` added
  for the float32 logits;

and shows the naive estimate's difference and its error beside RATE's. Written as
``check.json`` and ``check.md`` (one set) beside the two profiles' folders.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rate.demos.planted_rm import DETECTORS, PLANTED
from rate.effects.estimators import FLAG_SE, _mean_se_paired
from rate.errors import RateError
from rate.filesets import write_set
from rate.records import INDEX, REWRITE, REWRITTEN, TEXTS, W, check_labels, read_examples
from rate.results.values import num, rate_key
from rate.rewrite.checks import PASSING

log = logging.getLogger(__name__)

PLANTED_SCORER, PLAIN_SCORER = "planted_minilm", "minilm_sentiment"
DATASET = "drugreview_length"  # its source: every drug review (offline), its n_examples
# Both scorers compute the MiniLM logit in float32, in batches made up differently (the planted
# one through the python backend): the same text's two logits may differ in the last bits.
FLOAT_TOL = 1e-5
SE_LIMIT = FLAG_SE  # 2 SE: the tolerance of every known-answer table
GROUPS = {"ATE": "every example", "ATT": "W=1 originals", "ATU": "W=0 originals"}


@dataclass
class Pairs:
    """The examples one RATE estimate averages over, per example: its W=1 and W=0 texts and
    each scorer's RATE difference (W=1 minus W=0)."""

    text1: list[str]
    text0: list[str]
    planted: np.ndarray  # (n,)
    plain: np.ndarray  # (n,)


def kept_rows(rows: list[dict], effects: dict) -> list[dict]:
    """The rows the effects stage estimated from: those whose rewrites passed their checks,
    where it kept only those (its ``input.only_successful_rewrites``)."""
    if "only_successful_rewrites" not in (effects.get("input") or {}):
        return rows
    return [r for r in rows if all(x in PASSING for x in (check_labels(r) or {}).values())]


def _difference(row: dict, reward_key: str) -> float:
    """RATE's per-example difference, W=1 minus W=0: the rewrite of the rewrite against the
    rewrite (:data:`rate.effects.estimators.QUANTITIES`'s ``rate``)."""
    s = row[reward_key]
    sign = 1.0 if row[W] else -1.0
    return sign * (float(s[REWRITTEN]) - float(s[REWRITE]))


def pairs(planted: list[dict], plain: list[dict], keys: tuple[str, str], estimand: str) -> Pairs:
    """The examples ``estimand`` averages over, the planted and the plain rows joined by index
    (the same rewritten texts, or an error)."""
    by_index = {r[INDEX]: r for r in plain}
    if set(by_index) != {r[INDEX] for r in planted}:
        raise RateError("the two scorers' kept rows differ: were they scored from one dataset?")
    text1, text0, d_planted, d_plain = [], [], [], []
    for row in planted:
        other = by_index[row[INDEX]]
        if row[TEXTS] != other[TEXTS] or row[W] != other[W]:
            raise RateError(f"example {row[INDEX]}: the two scorers were given different texts")
        if (estimand == "ATT" and not row[W]) or (estimand == "ATU" and row[W]):
            continue
        texts = row[TEXTS]
        w1, w0 = (REWRITTEN, REWRITE) if row[W] else (REWRITE, REWRITTEN)
        text1.append(texts[w1])
        text0.append(texts[w0])
        d_planted.append(_difference(row, keys[0]))
        d_plain.append(_difference(other, keys[1]))
    return Pairs(text1, text0, np.array(d_planted), np.array(d_plain))


def _same_as_file(mine: np.ndarray, effects: dict, key: str, what: str) -> None:
    """The scored rows give the effects file's estimate (else they are not its rows)."""
    theirs = num(effects.get(key))
    if (
        theirs is None
        or mine.size == 0
        or not math.isclose(float(mine.mean()), theirs, rel_tol=1e-9, abs_tol=1e-9)
    ):
        raise RateError(
            f"{what}: the scored rows give {key} = {mine.mean() if mine.size else 'nothing'}, "
            f"the effects file {theirs}; rerun the check (its steps are redone when stale)"
        )


def compare(
    attribute: str,
    effects: tuple[dict, dict],
    rows: tuple[list[dict], list[dict]],
    keys: tuple[str, str],
    profile_row: Mapping[str, Any],
    bonuses: Mapping[str, float] = PLANTED,
) -> dict[str, Any]:
    """One attribute's check: the planted profile against the plain one on the same rewrites
    (``effects``, ``rows`` and reward ``keys`` in that order), ``bonuses`` the planted ones
    (a test passes wrong ones to see the check fail)."""
    key, estimand = rate_key(effects[0])
    if rate_key(effects[1]) != (key, estimand):
        raise RateError(f"{attribute}: the two profiles test different estimands")
    p = pairs(kept_rows(rows[0], effects[0]), kept_rows(rows[1], effects[1]), keys, estimand)
    _same_as_file(p.planted, effects[0], key, f"{attribute} ({PLANTED_SCORER})")
    _same_as_file(p.plain, effects[1], key, f"{attribute} ({PLAIN_SCORER})")
    # Per example and planted attribute: did the pair flip it (+1 added, -1 removed, 0 not)?
    change = {
        b: np.array(
            [int(found(t1)) - int(found(t0)) for t1, t0 in zip(p.text1, p.text0, strict=True)]
        )
        for b, found in DETECTORS.items()
    }
    share = {b: float(c.mean()) for b, c in change.items()}
    bonus = float(bonuses.get(attribute, 0.0))
    expected = bonus * share.get(attribute, 0.0)
    every = sum(float(bonuses.get(b, 0.0)) * c for b, c in change.items())  # (n,)
    diff, se = _mean_se_paired(p.planted - p.plain)  # the paired estimators' SE
    error = diff - expected
    naive = [num(e.get("naive_effect")) for e in effects]
    naive_diff = None if None in naive else naive[0] - naive[1]
    within = abs(error) <= SE_LIMIT * se + FLOAT_TOL if math.isfinite(se) else False
    flagged = bool(profile_row.get("bh_survives"))
    return {
        "attribute": attribute,
        "estimand": estimand,
        "n": int(p.planted.size),
        "planted_bonus": bonus,
        "share_flipped": share.get(attribute),
        "shares": share,
        "expected": expected,
        "expected_all_bonuses": float(every.mean()),
        # planted - MiniLM per text is the sum of the bonuses its detectors see: how far not
        "identity_residual": float(np.abs(p.planted - p.plain - every).max()),
        "rate_planted": float(p.planted.mean()),
        "rate_plain": float(p.plain.mean()),
        "rate_diff": diff,
        "rate_diff_se": se,
        "rate_error": error,
        "rate_error_in_se": error / se if se > 0 else (0.0 if abs(error) <= FLOAT_TOL else None),
        "within": within,
        "naive_diff": naive_diff,
        "naive_error": None if naive_diff is None else naive_diff - expected,
        "p_bh": profile_row.get("p_bh"),
        "bh_survives": flagged,
        "passed": within and (flagged or bonus == 0.0),
    }


def _f(x: float | None, spec: str = "+.4f") -> str:
    return "n/a" if x is None else format(x, spec)


def markdown(record: dict) -> str:
    """The check's table and its verdict."""
    rows = record["attributes"]
    lines = [
        f"# Known-answer check of rate profile: {PLANTED_SCORER} against {PLAIN_SCORER}",
        "",
        f"{record['data']}, {record['n_examples']} examples per attribute"
        f"{' (smoke size)' if record['smoke'] else ''}, the offline rules; the two profiles "
        "score the same rewrites. Raw logit units. expected = planted bonus x share flipped "
        "(the signed share of RATE's pairs whose W=1 and W=0 texts differ in the attribute as "
        "the planted detector reads it); all bonuses: the same sum over every planted "
        f"attribute (what planted - MiniLM is, text by text). Within: |RATE diff - expected| <= "
        f"{SE_LIMIT:g} SE (+{FLOAT_TOL:g}). A planted attribute must also survive BH at 0.05 in "
        "the planted profile.",
        "",
        "| attribute | estimand (n) | bonus | share flipped | expected | all bonuses | "
        "RATE diff ± SE | RATE error | within 2 SE | naive diff | naive error | p BH | pass |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['attribute']} | {r['estimand']} ({r['n']}) | {r['planted_bonus']:+.2f} | "
            f"{_f(r['share_flipped'], '+.3f')} | {r['expected']:+.4f} | "
            f"{r['expected_all_bonuses']:+.4f} | {r['rate_diff']:+.4f} ± {r['rate_diff_se']:.4f}"
            f" | {r['rate_error']:+.4f} | {'yes' if r['within'] else 'NO'} | "
            f"{_f(r['naive_diff'])} | {_f(r['naive_error'])} | {_f(r['p_bh'], '.2g')}"
            f"{' *' if r['bh_survives'] else ''} | {'yes' if r['passed'] else 'NO'} |"
        )
    failed = [r["attribute"] for r in rows if not r["passed"]]
    verdict = "every check holds" if not failed else f"FAILED: {', '.join(failed)}"
    lines += ["", f"\\* survives BH at 0.05 in the planted profile. Result: {verdict}."]
    return "\n".join(lines) + "\n"


def write_check(out: Path, record: dict) -> list[Path]:
    """``out/check.json`` and ``out/check.md``, one set; -> the files."""
    record = {**record, "passed": all(r["passed"] for r in record["attributes"])}
    members = {out / "check.md": markdown(record).encode()}
    return write_set(out / "check.json", record, members)


@dataclass
class Run:
    """The two profiles' sweep, done: its state, the profile's inputs and the grid file."""

    state: Any  # rate.sweep.steps.State
    inputs: Any  # rate.profile.plan.Inputs
    grid: Path


def run_profiles(out: Path, attributes: str, n_examples: int | None, smoke: bool) -> Run:
    """Profile both scorers on the same rewrites of the drug reviews (one sweep: each
    attribute's rewrite step shared by its two cells); the profiles go to ``out/<scorer>/``."""
    from rate.profile import RULES
    from rate.profile.cli import profile_record, profile_rows
    from rate.profile.plan import Inputs, choose_attributes, template_source, write_plan
    from rate.profile.report import adjusted, write_profile
    from rate.store import Layout
    from rate.sweep.grid import Sweep
    from rate.sweep.steps import State, run_sweep

    source, n, where = template_source(DATASET)
    chosen, left_out = choose_attributes(attributes, RULES)
    inputs = Inputs(source, n_examples or n, where, PLANTED_SCORER, chosen, left_out)
    grid = write_plan(inputs, out, smoke, also=(PLAIN_SCORER,))
    state = State(Sweep(grid), Layout.from_env())
    outcome = run_sweep(state)
    if outcome.errors:
        lines = "\n".join(f"  {k}: {v}" for k, v in outcome.errors.items())
        raise RateError(f"profile check {out}: {len(outcome.errors)} step(s) failed:\n{lines}")
    for scorer in (PLANTED_SCORER, PLAIN_SCORER):
        rows, effects = profile_rows(state, inputs, scorer, {})
        record = profile_record(state, inputs, scorer, grid)
        write_profile(out / scorer, record, adjusted(rows), left_out, effects)
    return Run(state, inputs, grid)


def check_run(run: Run, out: Path, bonuses: Mapping[str, float] = PLANTED) -> dict[str, Any]:
    """Every attribute's :func:`compare`, the planted profile's rows read from its
    ``profile.json``; -> the check's record (not yet written)."""
    from rate.catalog import load_scoring_template
    from rate.io import read_json

    profile = {
        r["attribute"]: r for r in read_json(out / PLANTED_SCORER / "profile.json")["attributes"]
    }
    keys = tuple(load_scoring_template(s).reward_key for s in (PLANTED_SCORER, PLAIN_SCORER))
    state, rows = run.state, []
    for attribute, dataset in zip(run.inputs.attributes, state.sweep.grid.datasets, strict=True):
        effects, scored = [], []
        for scorer in (PLANTED_SCORER, PLAIN_SCORER):
            effects.append(read_json(state.outputs(f"effects:{dataset}:{scorer}")[0]))
            scored.append(read_examples(Path(state.outputs(f"score:{dataset}:{scorer}")[0])))
        rows.append(
            compare(
                attribute.name,
                tuple(effects),
                tuple(scored),
                keys,
                profile[attribute.name],
                bonuses,
            )
        )
    return {
        "data": run.inputs.where,
        "n_examples": run.inputs.n_examples,
        "smoke": state.sweep.grid.smoke,
        "profiles": {s: str(out / s / "profile.json") for s in (PLANTED_SCORER, PLAIN_SCORER)},
        "grid": str(run.grid),
        "bonuses": dict(bonuses),
        "se_limit": SE_LIMIT,
        "float_tol": FLOAT_TOL,
        "attributes": rows,
    }
