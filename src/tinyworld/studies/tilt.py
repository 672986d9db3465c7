"""The tilt forecast's acceptance study: the forecast from gold against the oracle's pi_beta
(an acceptance harness: it reads the truth, the forecast never does).

Per family and beta, the true quality of pi_beta ~ pi_ref * exp(r / beta) is estimated by the
same self-normalised reweighting on fresh reference samples scored with the oracle's exact
quality, drawn in chunks until the ratio estimator's delta-method SE is under the target (or a
cap on the samples is reached, which is reported). Where the reward's tail is heavy, pi_beta
lives where the reference almost never goes and reweighting its samples rests on a handful of
them; a *proposal* (an RL run at kl_coef = beta, which heads for pi_beta) then draws as many
samples again, and both are weighed against the mixture of the two policies: the same target,
with exact likelihood ratios, on far more effective samples. The forecast's sign of change
(gold) is then compared with the oracle's, for the raw and the corrected reward.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import torch

from rate.errors import ConfigError
from rate.progress import progress
from tinyworld.data import require_world
from tinyworld.evaluate import load_oracle
from tinyworld.models import load_policy, load_reward_model
from tinyworld.sampling import response_logprobs, sample
from tinyworld.tilt.forecast import ess, ratio_se, reweighted_mean, sign, tilt_weights
from tinyworld.tilt.hill import weight_tail_index
from tinyworld.tilt.run import Rewards, check_betas, reference_samples, tilt_analysis
from tinyworld.vocab import FAMILIES

log = logging.getLogger(__name__)

SE_GOAL = 0.005  # the acceptance's precision of the oracle's pi_beta
ORACLE_SEED = 0x0AC1E  # fresh samples, apart from the forecast's
# The delta-method SE means something only with many effective samples: with one dominant
# weight it is ~0 (the ratio is that sample's quality), however wrong the estimate is.
ORACLE_ESS_MIN = 100


def precise(se: float, n_eff: float, se_goal: float) -> bool:
    """Whether an oracle estimate meets the goal: SE under it, on enough effective samples."""
    return se < se_goal and n_eff >= ORACLE_ESS_MIN


def proposal_log_weights(
    r: np.ndarray, beta: float, lp_ref: np.ndarray, lp_proposal: np.ndarray
) -> np.ndarray:
    """Log weights of pi_beta ~ pi_ref * exp(r / beta) for samples drawn half from pi_ref and
    half from a proposal (the deterministic mixture, or balance heuristic): the target over
    the mixture's density, so no weight exceeds twice the reference-only one."""
    mixture = np.logaddexp(lp_ref, lp_proposal) - math.log(2.0)
    return lp_ref + np.asarray(r, dtype=np.float64) / beta - mixture


def _normalised(log_w: np.ndarray) -> np.ndarray:
    return np.exp(log_w - log_w.max())


def oracle_tilt(
    world: Path,
    rewards: Rewards,
    betas: list[float],
    se_goal: float = SE_GOAL,
    max_n: int = 200_000,
    chunk: int = 20_000,
    families: tuple[str, ...] = FAMILIES,
    seed: int = ORACLE_SEED,
    proposals: dict[tuple[str, float], Path] | None = None,
) -> dict:
    """Per family: the reference's true quality and, per reward and beta, pi_beta's, with n, SE
    and ESS; sampling stops once every SE is under ``se_goal`` or ``max_n`` is reached.

    ``proposals`` ((reward kind, beta) -> a policy folder, e.g. an RL run at kl_coef = beta on
    that reward, which heads for pi_beta): that cell also draws as many samples from the
    proposal as from the reference and weighs both by the deterministic mixture, so its
    estimate rests on many more effective samples than reweighted reference samples alone.
    """
    oracle, _ = load_oracle(world)
    policy = load_policy(world / "policy")
    proposals = proposals or {}
    loaded = {key: load_policy(Path(d)) for key, d in proposals.items()}
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for fam in progress(families, "oracle tilt", len(families)):
        q: list[np.ndarray] = []
        r: dict[str, list[np.ndarray]] = {k: [] for k in rewards.kinds}
        # Per proposal cell: its samples' quality and reward, and the log-probabilities of the
        # reference's and the proposal's samples under both policies.
        mix: dict[tuple[str, float], dict[str, list[np.ndarray]]] = {
            key: {"q": [], "r": [], "lp_ref": [], "lp_prop": []} for key in loaded
        }
        n = 0
        while n < max_n:
            for pool, responses in reference_samples(policy, fam, min(chunk, max_n - n), gen):
                q.append(oracle.quality(pool.tokens, responses).double().numpy())
                reward = rewards(pool, responses)
                for k, v in reward.items():
                    r[k].append(v)
                for (kind, b), prop in loaded.items():
                    m = mix[(kind, b)]
                    drawn = sample(prop, pool.tokens, 1.0, gen).responses
                    m["q"] += [q[-1], oracle.quality(pool.tokens, drawn).double().numpy()]
                    m["r"] += [reward[kind], rewards(pool, drawn)[kind]]
                    for seqs in (responses, drawn):
                        m["lp_ref"].append(sequence_logprob(policy, pool.tokens, seqs))
                        m["lp_prop"].append(sequence_logprob(prop, pool.tokens, seqs))
                n += len(pool)
            cells = _estimates(np.concatenate(q), r, mix, rewards.kinds, betas)
            ses = [c["se"] for c in cells.values()]
            n_effs = [c["ess"] for c in cells.values()]
            log.info(
                "oracle tilt %s: n=%d, largest SE %.4f, smallest ESS %.0f",
                fam, n, max(ses), min(n_effs),
            )  # fmt: skip
            if all(precise(se, m, se_goal) for se, m in zip(ses, n_effs, strict=True)):
                break
        qq = np.concatenate(q)
        cells = _estimates(qq, r, mix, rewards.kinds, betas)
        row = {
            "n": n,
            "reference_quality": round(float(qq.mean()), 6),
            "reference_se": round(float(qq.std() / math.sqrt(n)), 6),
        }
        for k in rewards.kinds:
            rr = np.concatenate(r[k])
            row[k] = {}
            for b in betas:
                c = cells[(k, b)]
                row[k][str(b)] = {
                    "quality": round(c["quality"], 6),
                    "se": round(c["se"], 6),
                    "se_reached": precise(c["se"], c["ess"], se_goal),
                    "change": round(c["quality"] - float(qq.mean()), 6),
                    "ess": round(c["ess"], 1),
                    "proposal": str(proposals[(k, b)]) if (k, b) in proposals else None,
                    "weight_tail": weight_tail_index(rr, b).as_dict(),
                }
        out[fam] = row
    return out


def sequence_logprob(policy, prompts: torch.Tensor, responses: torch.Tensor) -> np.ndarray:
    """log policy(y | x) of whole responses, (B,) float64."""
    with torch.inference_mode():
        parts = [
            response_logprobs(policy, prompts[i : i + 4096], responses[i : i + 4096]).sum(-1)
            for i in range(0, len(prompts), 4096)
        ]
    return torch.cat(parts).double().numpy()


def _estimates(qq, r, mix, kinds, betas) -> dict[tuple[str, float], dict[str, float]]:
    """pi_beta's quality, SE and ESS per (reward kind, beta): by the mixture where a proposal
    was drawn, else by reweighting the reference samples."""
    out = {}
    for k in kinds:
        for b in betas:
            if (k, b) in mix:
                m = {key: np.concatenate(v) for key, v in mix[(k, b)].items()}
                w = _normalised(proposal_log_weights(m["r"], b, m["lp_ref"], m["lp_prop"]))
                y = m["q"]
            else:
                w, y = tilt_weights(np.concatenate(r[k]), b), qq
            out[(k, b)] = {"quality": reweighted_mean(y, w), "se": ratio_se(y, w), "ess": ess(w)}
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
                        **_model_columns(forecast["families"][fam], kind, b, o),
                    }
                )
    return rows


def _model_columns(row: dict, kind: str, b: str, o: dict) -> dict:
    """The model forecast's change, interval and ESS, and whether its sign matches (empty
    where the forecast ran without one: no wrapper, or no guided samples)."""
    fc = row.get("model", {}).get(kind, {}).get(b)
    if fc is None:
        return {}
    return {
        "model_change": fc["change"],
        "model_interval": fc["interval"],
        "model_ess": fc["ess"],
        "model_share_outside_gold": fc["share_outside_gold"],
        "model_unchecked": fc.get("unchecked"),
        "model_signs_match": sign(fc["change"]) == sign(o["change"]),
    }


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
    proposals: dict[tuple[str, float], Path] | None = None,
    model_samples: int = 10_000,
) -> dict:
    """The forecast (blind), the oracle's pi_beta, and their sign comparison."""
    world = require_world(Path(world))
    betas = check_betas(list(betas))
    forecast = tilt_analysis(world, wrapper, betas, tail_samples, n_boot, seed, model_samples)
    rewards = Rewards(load_reward_model(world / "reward_model"), wrapper)
    fams = tuple(forecast["families"])
    for kind, b in proposals or {}:
        if kind not in rewards.kinds or b not in betas:
            raise ConfigError(
                f"--proposal {kind}:{b:g}: no such cell (rewards {', '.join(rewards.kinds)}; "
                f"betas {', '.join(f'{x:g}' for x in betas)})"
            )
    oracle = oracle_tilt(world, rewards, betas, se_goal, max_n, chunk, fams, proposals=proposals)
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

    modelled = [r for r in rows if "model_change" in r]
    return {
        **study,
        "matches": sum(r["signs_match"] for r in rows),
        "model_matches": sum(r["model_signs_match"] for r in modelled),
        "model_comparisons": len(modelled),
        "where_model_checked": count(lambda r: r.get("model_unchecked") is False),
        "comparisons": len(rows),
        "where_oracle_met_goal": count(lambda r: r["oracle_se_reached"]),
        "where_oracle_sign_settled": count(lambda r: r["oracle_sign_settled"]),
        "where_forecast_made": count(lambda r: not r["forecast_abstains"]),
        "rows": rows,
    }


def _model_cell(r: dict) -> str:
    if "model_change" not in r:
        return "n/a"
    lo, hi = r["model_interval"]
    unchecked = ", unchecked" if r.get("model_unchecked") else ""
    return f"{r['model_change']:+.3f} [{lo:+.3f}, {hi:+.3f}] ({r['model_ess']:.0f}{unchecked})"


def _yes_no(match: bool | None) -> str:
    return "n/a" if match is None else ("yes" if match else "NO")


def study_table(study: dict) -> str:
    """The comparison as markdown, with the count of matching signs."""
    lines = [
        "| family | reward | beta | forecast change [95% interval] | ESS (gold) | model change "
        "[95% interval] (ESS) | oracle change (SE, n) | oracle ESS | signs match (gold; "
        "model) |",
        "|---|---|---|---|---|---|---|---|---|",
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
            f"| {_model_cell(r)} "
            f"| {r['oracle_change']:+.3f} ({r['oracle_se']:.4f}, {r['oracle_n']}{note}) "
            f"| {o['ess']:.0f} | {'yes' if r['signs_match'] else 'NO'}; "
            f"{_yes_no(r.get('model_signs_match'))} |"
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
    if study.get("model_comparisons"):
        checked = study["where_model_checked"]
        lines.append(
            f"The model forecast's signs match in {study['model_matches']} of "
            f"{study['model_comparisons']}; in {checked['matches']} of the {checked['rows']} "
            "where gold rows stand where pi_beta goes (n * exp(-KL) >= 15)."
        )
    return "\n".join(lines) + "\n"
