"""From gathered inputs to a certificate: intervals, verdict, gold plan and table."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from rate.schema import SEED, Bound, opt
from tinyworld.certify.estimators import (
    ESS_MIN,
    PLAN_MOST,
    PLAN_PASS,
    SUPPORT_MIN,
    Interval,
    abstains,
    bootstrap_counts,
    dr_covariates,
    dr_replicates,
    ess,
    gold_needed,
    snips,
    snips_replicates,
    split_folds,
)

# Guardrails of a release: the balanced mix must gain at least this much over the reference,
# and no family may lose more than this, both judged by the lower end of the 95% interval.
MIN_BALANCED_GAIN = 0.03
MAX_FAMILY_LOSS = 0.03


def _cost(n: int) -> str:
    return f"{n:,} per family would take the certificate hours"


@dataclass
class CertifySettings:
    """How the certification samples, resamples and abstains."""

    fresh_per_family: int = opt(
        500,
        help="fresh samples of the new policy per family, drawn twice: once for the DR's "
        "outcome model, once for the KL that decides abstention (see gather)",
        bound=Bound(2, high=10**6, cost=_cost),
    )
    replicates: int = opt(2000, help="bootstrap replicates", bound=Bound(2, high=10**6, cost=_cost))
    folds: int = opt(2, help="cross-fitting folds of the DR estimate", bound=Bound(2, high=100))
    fold_splits: int = opt(
        20,
        help="the point estimate is the mean over this many random fold splits (a single split "
        "adds its own noise, 0.5-9% of the estimate's variance measured at kl 0.07-0.1); the "
        "bootstrap draws a new split for each replicate, so that its SE holds the split's "
        "variance too",
        bound=Bound(1, high=10_000, cost=_cost),
    )
    ess_min: float = opt(
        ESS_MIN, help="abstain below this effective sample size", bound=Bound(0, high=10**6)
    )
    support_min: float = opt(
        SUPPORT_MIN,
        help="abstain below this support (see tinyworld.certify.estimators.abstains)",
        bound=Bound(0, high=10**6),
    )
    seed: int = opt(0, help="the certification's randomness", bound=SEED)
    plan_per_family: int = opt(
        1000,
        help="where a family abstains, unlabelled samples per family of the reference and of "
        "the new policy, from which the gold set that would let it answer is sized "
        "(plan_gold); 0: none",
        bound=Bound(0, high=10**6, cost=_cost),
    )


DEFAULTS = CertifySettings()


@dataclass
class CertifyFamilyInputs:
    """One family's gold set (labels, log weights, corrected rewards) and fresh samples."""

    y: np.ndarray
    log_w: np.ndarray
    s: np.ndarray
    s_fresh: np.ndarray
    log_w_fresh: np.ndarray  # log pi_new / pi_ref on the new policy's own samples
    log_w_kl: np.ndarray  # the same on a second, independent draw: the KL for abstention


def certify_inputs(
    inputs: dict[str, CertifyFamilyInputs], settings: CertifySettings = DEFAULTS
) -> dict:
    """Per family and on the balanced mix: SNIPS and DR with intervals, the gain over the
    reference (paired on the same gold set), ESS, KL, abstentions and the guardrail verdict."""
    rng = np.random.default_rng([settings.seed, 0xCE27])
    report: dict = {"per_family": {}, "settings": dataclasses.asdict(settings)}
    reps: dict[str, dict[str, np.ndarray]] = {}
    ess_values: dict[str, float] = {}
    for fam, x in inputs.items():
        n, m = len(x.y), len(x.s_fresh)
        counts = bootstrap_counts(n, settings.replicates, rng)
        fresh_counts = bootstrap_counts(m, settings.replicates, rng)
        point_folds = split_folds(n, settings.folds, settings.fold_splits, rng)
        replicate_folds = split_folds(n, settings.folds, settings.replicates, rng)
        ones, fresh_ones = np.ones((settings.fold_splits, n)), np.ones((settings.fold_splits, m))
        ref_reps = (counts @ x.y) / n
        snips_reps = snips_replicates(x.y, x.log_w, counts)
        cov, fresh_cov = dr_covariates(x.s, x.log_w), dr_covariates(x.s_fresh, x.log_w_fresh)
        dr_point = float(
            dr_replicates(x.y, x.log_w, cov, fresh_cov, point_folds, ones, fresh_ones).mean()
        )
        dr_reps = dr_replicates(x.y, x.log_w, cov, fresh_cov, replicate_folds, counts, fresh_counts)
        ref_point, snips_point = float(x.y.mean()), snips(x.y, x.log_w)
        kl = float(x.log_w_kl.mean())
        ess_value = ess_values[fam] = ess(x.log_w)
        reps[fam] = {
            "reference": ref_reps,
            "snips": snips_reps,
            "dr": dr_reps,
            "dr_gain": dr_reps - ref_reps,
        }
        report["per_family"][fam] = {
            "n_gold": n,
            "ess": round(ess_value, 2),
            "kl": round(kl, 4),
            "abstain": abstains(ess_value, n, kl, settings.ess_min, settings.support_min),
            "reference": Interval.of(ref_point, ref_reps).as_dict(),
            "snips": Interval.of(snips_point, snips_reps).as_dict(),
            "dr": Interval.t(dr_point, dr_reps, ess_value - 1).as_dict(),
            "dr_gain": Interval.t(
                dr_point - ref_point, dr_reps - ref_reps, ess_value - 1
            ).as_dict(),
            "snips_gain": Interval.of(snips_point - ref_point, snips_reps - ref_reps).as_dict(),
        }
    fams = list(inputs)
    if fams:
        rows = report["per_family"]

        def mean_of(key: str) -> float:
            return float(np.mean([rows[f][key]["estimate"] for f in fams]))

        def mean_reps(key: str) -> np.ndarray:
            return np.mean([reps[f][key] for f in fams], axis=0)

        def pooled(key: str, point: float) -> dict:
            # Each family's interval is widened by its own t; the balanced mix keeps that.
            return Interval.pooled(
                point, [reps[f][key] for f in fams], [ess_values[f] - 1 for f in fams]
            ).as_dict()

        ref_b = mean_reps("reference")
        report["balanced"] = {
            "families": fams,
            "min_ess": round(min(rows[f]["ess"] for f in fams), 2),
            "abstain": [f"{f}: {rows[f]['abstain']}" for f in fams if rows[f]["abstain"]] or None,
            "reference": Interval.of(mean_of("reference"), ref_b).as_dict(),
            "snips": Interval.of(mean_of("snips"), mean_reps("snips")).as_dict(),
            "dr": pooled("dr", mean_of("dr")),
            "dr_gain": pooled("dr_gain", mean_of("dr") - mean_of("reference")),
            "snips_gain": Interval.of(
                mean_of("snips") - mean_of("reference"), mean_reps("snips") - ref_b
            ).as_dict(),
        }
        report["verdict"] = verdict(report)
    return report


def verdict(report: dict) -> dict:
    """The guardrails, on the DR intervals' lower ends: ``ship`` when both hold, ``abstain``
    when a family's weights cannot support an answer, else ``hold``, with the reasons."""
    reasons = []
    balanced_ = report["balanced"]
    if balanced_["abstain"]:
        return {"decision": "abstain", "reasons": balanced_["abstain"]}
    low = balanced_["dr_gain"]["low"]
    if not low >= MIN_BALANCED_GAIN:
        reasons.append(
            f"balanced gain's lower bound {low:+.3f} < {MIN_BALANCED_GAIN:+.2f} (estimate "
            f"{balanced_['dr_gain']['estimate']:+.3f})"
        )
    for fam, row in report["per_family"].items():
        if not row["dr_gain"]["low"] >= -MAX_FAMILY_LOSS:
            reasons.append(
                f"{fam}: gain's lower bound {row['dr_gain']['low']:+.3f} < {-MAX_FAMILY_LOSS:+.2f}"
            )
    return {"decision": "hold" if reasons else "ship", "reasons": reasons}


# The plan's draws are their own: planning leaves the certificate's numbers as they were.
_PLAN_SEED = 0x9A1D


def plan_gold(
    report: dict, plans: dict[str, tuple[np.ndarray, np.ndarray]], settings: CertifySettings
) -> None:
    """Size the gold set that would let an abstaining certificate answer: per family, the
    fewest gold rows with which its floors pass in 90% of gold sets simulated from ``plans``
    (:func:`plan_log_ratios`, :func:`~tinyworld.certify.estimators.gold_needed`), more than it has
    where it abstains; for the mix,
    the largest of them. Adds ``gold_plan`` to each row and to the balanced mix, and the
    plan's sentence to the verdict. Reads no label: a release that cannot be certified learns
    what would certify it."""
    rng = np.random.default_rng([settings.seed, _PLAN_SEED])
    sizes = []
    for fam, row in report["per_family"].items():
        rows, share = gold_needed(
            *plans[fam],
            row["kl"],
            row["n_gold"],
            rng,
            settings.ess_min,
            settings.support_min,
            larger=bool(row["abstain"]),
        )
        row["gold_plan"] = {"rows": rows, "pass_share": round(share, 3)}
        sizes.append(rows)
    largest = None if None in sizes else max(sizes)
    now = max(row["n_gold"] for row in report["per_family"].values())
    report["balanced"]["gold_plan"] = {
        "rows": largest,
        "samples_per_policy": settings.plan_per_family,
        "pass_share": PLAN_PASS,
    }
    if largest is None:
        beyond = [f for f, row in report["per_family"].items() if row["gold_plan"]["rows"] is None]
        said = (
            f"more than {PLAN_MOST * now} gold rows per family (now {now}) would be needed for "
            f"{', '.join(beyond)} to answer"
        )
    else:
        said = f"about {largest} gold rows per family (now {now}) would let every family answer"
    report["verdict"]["gold_plan"] = (
        f"{said} (each family in {PLAN_PASS:.0%} of gold sets simulated from "
        f"{settings.plan_per_family} unlabelled samples per family of each policy)"
    )


def note(row: dict) -> str:
    """A family's abstention, with the gold rows that would let it answer where planned."""
    if not row["abstain"]:
        return ""
    plan = row.get("gold_plan")
    if plan is None:
        return f"abstains: {row['abstain']}"
    rows = plan["rows"]
    needs = f"{rows} gold rows would answer" if rows else "no planned gold set answers"
    return f"abstains: {row['abstain']}; {needs}"


def markdown(report: dict) -> str:
    """One table: per family and balanced, the DR and SNIPS estimates with intervals."""

    def cell(iv: dict) -> str:
        return f"{iv['estimate']:.3f} [{iv['low']:.3f}, {iv['high']:.3f}]"

    lines = [
        "| family | ESS | KL | reference | DR | DR gain | SNIPS | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fam, r in report["per_family"].items():
        lines.append(
            f"| {fam} | {r['ess']:.1f} | {r['kl']:.2f} | {cell(r['reference'])} | "
            f"{cell(r['dr'])} | {cell(r['dr_gain'])} | {cell(r['snips'])} | {note(r)} |"
        )
    b = report["balanced"]
    lines.append(
        f"| **balanced** | {b['min_ess']:.1f} (min) | | {cell(b['reference'])} | {cell(b['dr'])} | "
        f"{cell(b['dr_gain'])} | {cell(b['snips'])} | |"
    )
    v = report["verdict"]
    lines += [
        "",
        f"Verdict: **{v['decision']}**" + (f" ({'; '.join(v['reasons'])})" if v["reasons"] else ""),
    ]
    if v.get("gold_plan"):
        lines += ["", f"More gold labels: {v['gold_plan']}."]
    return "\n".join(lines) + "\n"
