"""The tilt forecast's acceptance study: the forecast from gold against the oracle's pi_beta
(an acceptance harness: it reads the truth, the forecast never does).

Per family and beta, the true quality of pi_beta ~ pi_ref * exp(r / beta) is estimated by the
same self-normalised reweighting on fresh reference samples scored with the oracle's exact
quality, drawn in chunks until the ratio estimator's delta-method SE is under the target (or a
cap on the samples is reached, which is reported). The forecast's sign of change (gold) is then
compared with the oracle's, for the raw and the corrected reward.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import torch

from rate.tilt.forecast import ess, ratio_se, reweighted_mean, sign, tilt_weights
from rate.tilt.hill import weight_tail_index
from rate.tilt.run import Rewards, check_betas, reference_samples, tilt_analysis
from rate.tinyrlhf.data import require_world
from rate.tinyrlhf.evaluate import load_oracle
from rate.tinyrlhf.models import load_policy, load_reward_model
from rate.tinyrlhf.vocab import FAMILIES

log = logging.getLogger(__name__)

SE_GOAL = 0.005  # the acceptance's precision of the oracle's pi_beta
ORACLE_SEED = 0x0AC1E  # fresh samples, apart from the forecast's
# The delta-method SE means something only with many effective samples: with one dominant
# weight it is ~0 (the ratio is that sample's quality), however wrong the estimate is.
ORACLE_ESS_MIN = 100


def precise(se: float, n_eff: float, se_goal: float) -> bool:
    """Whether an oracle estimate meets the goal: SE under it, on enough effective samples."""
    return se < se_goal and n_eff >= ORACLE_ESS_MIN


def oracle_tilt(
    world: Path,
    rewards: Rewards,
    betas: list[float],
    se_goal: float = SE_GOAL,
    max_n: int = 200_000,
    chunk: int = 20_000,
    families: tuple[str, ...] = FAMILIES,
    seed: int = ORACLE_SEED,
) -> dict:
    """Per family: the reference's true quality and, per reward and beta, pi_beta's, with n, SE
    and ESS; sampling stops once every SE is under ``se_goal`` or ``max_n`` is reached."""
    oracle, _ = load_oracle(world)
    policy = load_policy(world / "policy")
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for fam in families:
        q: list[np.ndarray] = []
        r: dict[str, list[np.ndarray]] = {k: [] for k in rewards.kinds}
        n = 0
        while n < max_n:
            for pool, responses in reference_samples(policy, fam, min(chunk, max_n - n), gen):
                q.append(oracle.quality(pool.tokens, responses).double().numpy())
                for k, v in rewards(pool, responses).items():
                    r[k].append(v)
                n += len(pool)
            qq = np.concatenate(q)
            weights = [tilt_weights(np.concatenate(r[k]), b) for k in rewards.kinds for b in betas]
            ses = [ratio_se(qq, w) for w in weights]
            n_effs = [ess(w) for w in weights]
            log.info(
                "oracle tilt %s: n=%d, largest SE %.4f, smallest ESS %.0f",
                fam, n, max(ses), min(n_effs),
            )  # fmt: skip
            if all(precise(se, m, se_goal) for se, m in zip(ses, n_effs, strict=True)):
                break
        qq = np.concatenate(q)
        row = {
            "n": n,
            "reference_quality": round(float(qq.mean()), 6),
            "reference_se": round(float(qq.std() / math.sqrt(n)), 6),
        }
        for k in rewards.kinds:
            rr = np.concatenate(r[k])
            row[k] = {}
            for b in betas:
                w = tilt_weights(rr, b)
                quality = reweighted_mean(qq, w)
                se, n_eff = ratio_se(qq, w), ess(w)
                row[k][str(b)] = {
                    "quality": round(quality, 6),
                    "se": round(se, 6),
                    "se_reached": precise(se, n_eff, se_goal),
                    "change": round(quality - float(qq.mean()), 6),
                    "ess": round(n_eff, 1),
                    "weight_tail": weight_tail_index(rr, b).as_dict(),
                }
        out[fam] = row
    return out


def compare(forecast: dict, oracle: dict) -> list[dict]:
    """One row per family, reward and beta: the two changes and whether their signs agree."""
    rows = []
    for fam, orow in oracle.items():
        for kind, by_beta in forecast["families"][fam]["forecast"].items():
            for b, fc in by_beta.items():
                o = orow[kind][b]
                rows.append(
                    {
                        "family": fam,
                        "reward": kind,
                        "beta": float(b),
                        "forecast_change": fc["change"],
                        "forecast_interval": fc["interval"],
                        "forecast_ess": fc["ess"],
                        "forecast_abstains": fc["abstain"],
                        "oracle_change": o["change"],
                        "oracle_se": o["se"],
                        "oracle_n": orow["n"],
                        "oracle_se_reached": o["se_reached"],
                        # The oracle's sign is settled when its change is 2 SE away from 0, on
                        # enough effective samples for the SE to mean something.
                        "oracle_sign_settled": bool(
                            abs(o["change"]) > 2 * o["se"] and o["ess"] >= ORACLE_ESS_MIN
                        ),
                        "signs_match": sign(fc["change"]) == sign(o["change"]),
                    }
                )
    return rows


def tilt_study(
    world: Path,
    wrapper: Path | None = None,
    betas: list[float] = (0.1, 0.05),
    se_goal: float = SE_GOAL,
    max_n: int = 200_000,
    chunk: int = 20_000,
    tail_samples: int = 10_000,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict:
    """The forecast (blind), the oracle's pi_beta, and their sign comparison."""
    world = require_world(Path(world))
    betas = check_betas(list(betas))
    forecast = tilt_analysis(world, wrapper, betas, tail_samples, n_boot, seed)
    rewards = Rewards(load_reward_model(world / "reward_model"), wrapper)
    fams = tuple(forecast["families"])
    oracle = oracle_tilt(world, rewards, betas, se_goal, max_n, chunk, fams)
    return summarise(
        {
            "world": str(world),
            "wrapper": forecast["wrapper"],
            "betas": betas,
            "se_goal": se_goal,
            "max_n": max_n,
            "oracle": oracle,
            "forecast": forecast,
        }
    )


def summarise(study: dict) -> dict:
    """``study`` (its forecast and oracle) with the comparison rows and the counts of matches:
    in all, where the oracle met its goal, where its sign is settled, where the forecast speaks."""
    rows = compare(study["forecast"], study["oracle"])

    def count(keep) -> dict:
        kept = [r for r in rows if keep(r)]
        return {"rows": len(kept), "matches": sum(r["signs_match"] for r in kept)}

    return {
        **study,
        "matches": sum(r["signs_match"] for r in rows),
        "comparisons": len(rows),
        "where_oracle_met_goal": count(lambda r: r["oracle_se_reached"]),
        "where_oracle_sign_settled": count(lambda r: r["oracle_sign_settled"]),
        "where_forecast_made": count(lambda r: not r["forecast_abstains"]),
        "rows": rows,
    }


def study_table(study: dict) -> str:
    """The comparison as markdown, with the count of matching signs."""
    lines = [
        "| family | reward | beta | forecast change [95% interval] | ESS (gold) | oracle change "
        "(SE, n) | oracle ESS | signs match |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in study["rows"]:
        o = study["oracle"][r["family"]][r["reward"]][str(r["beta"])]
        lo, hi = r["forecast_interval"]
        note = "" if r["oracle_se_reached"] else ", goal not reached"
        if not r["oracle_sign_settled"]:
            note += ", sign not settled"
        lines.append(
            f"| {r['family']} | {r['reward']} | {r['beta']:g} | {r['forecast_change']:+.3f} "
            f"[{lo:+.3f}, {hi:+.3f}] | {r['forecast_ess']:.1f}"
            f"{' (abstains)' if r['forecast_abstains'] else ''} "
            f"| {r['oracle_change']:+.3f} ({r['oracle_se']:.4f}, {r['oracle_n']}{note}) "
            f"| {o['ess']:.0f} | {'yes' if r['signs_match'] else 'NO'} |"
        )
    lines.append("")
    goal, settled, made = (
        study[k]
        for k in ("where_oracle_met_goal", "where_oracle_sign_settled", "where_forecast_made")
    )
    lines.append(
        f"Signs match in {study['matches']} of {study['comparisons']}; in {goal['matches']} of "
        f"the {goal['rows']} where the oracle met its goal (SE < {study['se_goal']} on >= "
        f"{ORACLE_ESS_MIN} effective samples); in {settled['matches']} of the {settled['rows']} "
        f"where the oracle's sign is settled (2 SE from 0 on >= {ORACLE_ESS_MIN} effective "
        f"samples); in {made['matches']} of the {made['rows']} where the forecast does not abstain."
    )
    return "\n".join(lines) + "\n"
