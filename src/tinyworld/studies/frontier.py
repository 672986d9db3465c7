"""The certifiable frontier: the highest true quality a policy can reach while the reference's
gold labels can still certify it (an acceptance harness: it reads the truth).

Certification (:mod:`tinyworld.certify`) answers for a family only when the gold set's weights
w = pi(y|x) / pi_ref(y|x) have a sample ESS of at least ``ESS_MIN`` and n * exp(-KL) >=
``SUPPORT_MIN``, n being the family's gold labels. Whatever the reward and the recipe, a
certified policy must meet both, so the best true quality under them bounds every certified
choice (the recipe sweep's, an assessment's ship).

The best policy under either floor depends on a response only through its true quality:
averaging the weights over the responses of one quality keeps E_ref[w q] and lowers both KL and
E_ref[w^2] (Jensen). With q the share of 8 correct positions, each prompt's reference is then
summarised by the distribution of its number of correct positions (9 values), estimated from
fresh reference samples, and the optimum is a reweighting of it:

- **under the KL floor** (KL <= log(n / SUPPORT_MIN)): the exponential tilt
  w = exp(lam q) / Z_x, with one lam for the whole family (the Gibbs variational principle);
  no policy that certification answers for can do better, up to the sampling error here;
- **under the ESS floor**: the chi-square optimum w = (a_x + s q)_+, water-filled per prompt
  (the KKT conditions of max E[w q] under E[w^2]); its strength s is raised as far as its KL
  stays under the KL floor and the sample ESS of n simulated gold rows stays >= ESS_MIN in a
  share of the gold sets such that, the families' gold sets being independent, every family
  passes in at least half of them: a policy that an ordinary gold set certifies.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from rate.errors import ConfigError
from rate.progress import progress
from tinyworld.certify.estimators import ESS_MIN, SUPPORT_MIN
from tinyworld.data import pool_from_records, require_world
from tinyworld.evaluate import evaluate_policy, load_oracle
from tinyworld.models import load_policy
from tinyworld.oracle import Oracle
from tinyworld.policy import Policy
from tinyworld.prompts import make_prompts
from tinyworld.sampling import sample
from tinyworld.vocab import FAMILIES, FAMILY_ID, RESPONSE_LEN

log = logging.getLogger(__name__)

FRONTIER_SEED = 0xF207  # fresh prompts and responses, apart from every other study's
QUALITY = np.arange(RESPONSE_LEN + 1) / RESPONSE_LEN  # the 9 values of the share correct
SIMULATED_GOLD_SETS = 2000


def correct_count_distribution(
    oracle: Oracle,
    reference: Policy,
    family: str,
    prompts: int,
    per_prompt: int,
    generator: torch.Generator,
) -> np.ndarray:
    """Per fresh prompt of ``family``: the reference's distribution of the number of correct
    positions, from ``per_prompt`` temperature-1 samples, shape (prompts, RESPONSE_LEN + 1)."""
    pool = pool_from_records(make_prompts({family: prompts}, "frontier", generator, shuffle=False))
    counts = np.zeros((prompts, RESPONSE_LEN + 1))
    rows = max(1, 32_768 // per_prompt)  # prompts per batch: ~32k responses at a time
    for start in range(0, prompts, rows):
        x = pool.tokens[start : start + rows].repeat_interleave(per_prompt, 0)
        y = sample(reference, x, 1.0, generator).responses
        k = oracle.correct(x, y).sum(-1).view(-1, per_prompt)
        for j, row in enumerate(k.numpy()):
            counts[start + j] = np.bincount(row, minlength=RESPONSE_LEN + 1)
    return counts / per_prompt


def exponential_tilt(p: np.ndarray, lam: float) -> np.ndarray:
    """Weights exp(lam q) / Z_x per (prompt, number correct), shape of ``p``."""
    log_w = lam * QUALITY[None, :]
    log_z = np.log((p * np.exp(log_w - log_w.max())).sum(1, keepdims=True)) + log_w.max()
    return np.exp(log_w - log_z)


def chi_square_tilt(p: np.ndarray, s: float, iterations: int = 80) -> np.ndarray:
    """Weights (a_x + s q)_+ with a_x set per prompt by bisection so that E_ref[w | x] = 1."""
    lo = np.full(len(p), -s * QUALITY[-1])  # every weight 0: the mean is 0
    hi = np.ones(len(p))  # every weight >= 1: the mean is >= 1
    for _ in range(iterations):
        a = (lo + hi) / 2
        mean = (p * np.maximum(a[:, None] + s * QUALITY[None, :], 0.0)).sum(1)
        low = mean < 1.0
        lo, hi = np.where(low, a, lo), np.where(low, hi, a)
    return np.maximum(hi[:, None] + s * QUALITY[None, :], 0.0)


def moments(p: np.ndarray, w: np.ndarray) -> dict[str, float]:
    """The policy's true quality, KL(pi || pi_ref) and E_ref[w^2], averaged over prompts."""
    pw = p * w
    # Where pw is 0 the term of the KL is 0 (0 log 0 = 0); the guard keeps log off zeros.
    kl_terms = np.where(pw > 0, pw * np.log(np.where(pw > 0, w, 1.0)), 0.0)
    return {
        "quality": float((pw * QUALITY).sum(1).mean()),
        "kl": float(kl_terms.sum(1).mean()),
        "mean_w2": float((pw * w).sum(1).mean()),
    }


def simulated_gold(
    p: np.ndarray, n: int, sets: int, generator: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``sets`` gold sets of ``n`` reference rows: each row's prompt (uniform over the sampled
    prompts) and number correct, two (sets, n) integer arrays."""
    x = generator.integers(0, len(p), size=(sets, n))
    cdf = np.cumsum(p, axis=1)
    u = generator.random((sets, n))
    k = (u[..., None] > cdf[x]).sum(-1).clip(max=p.shape[1] - 1)
    return x, k


def share_certifiable(w: np.ndarray, gold: tuple[np.ndarray, np.ndarray], ess_min: float) -> float:
    """Share of the simulated gold sets whose sample ESS of the policy's weights is >= ess_min."""
    ww = w[gold]
    sum_w2 = (ww**2).sum(1)
    # A set whose every row has weight 0 (the chi-square policy cuts weights at 0) has no
    # effective sample at all.
    sample_ess = np.divide(ww.sum(1) ** 2, sum_w2, out=np.zeros_like(sum_w2), where=sum_w2 > 0)
    return float((sample_ess >= ess_min).mean())


def strongest(feasible: Callable[[float], bool], hi: float, iterations: int = 50) -> float:
    """The largest strength in [0, hi] for which ``feasible`` holds (it holds at 0, and once it
    fails it fails for every stronger policy), by bisection."""
    if feasible(hi):
        return hi
    lo = 0.0
    for _ in range(iterations):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
    return lo


def family_frontier(
    p: np.ndarray,
    n_gold: int,
    ess_min: float = ESS_MIN,
    support_min: float = SUPPORT_MIN,
    sets: int = SIMULATED_GOLD_SETS,
    seed: int = 0,
    share: float = 0.5,
) -> dict:
    """One family's reference quality, the bound under the KL floor and the strongest
    chi-square policy whose ESS a gold set of ``n_gold`` rows passes with probability >=
    ``share`` (see the module docstring)."""
    kl_max = math.log(n_gold / support_min)
    gold = simulated_gold(p, n_gold, sets, np.random.default_rng(seed))

    def certifiable(s: float) -> bool:
        w = chi_square_tilt(p, s)
        return moments(p, w)["kl"] <= kl_max and share_certifiable(w, gold, ess_min) >= share

    s = strongest(certifiable, hi=1e4)
    w = chi_square_tilt(p, s)
    return {
        "reference_quality": moments(p, np.ones_like(p))["quality"],
        "kl_floor": kl_max,
        "kl_bound": best_at_kl(p, kl_max),
        "certifiable": {
            "strength": s,
            **moments(p, w),
            "share_certifiable": share_certifiable(w, gold, ess_min),
        },
    }


def best_at_kl(p: np.ndarray, kl_max: float) -> dict[str, float]:
    """The best true quality at KL <= ``kl_max``: the exponential tilt there, with its lam."""
    lam = strongest(lambda t: moments(p, exponential_tilt(p, t))["kl"] <= kl_max, hi=200.0)
    return {"lam": lam, **moments(p, exponential_tilt(p, lam))}


def bootstrap_kl_bound(
    p: np.ndarray, kl_max: float, reps: int, generator: np.random.Generator
) -> np.ndarray:
    """The KL bound's quality on ``reps`` resamples of the prompts (its sampling spread)."""
    out = []
    for _ in range(reps):
        resampled = p[generator.integers(0, len(p), len(p))]
        out.append(best_at_kl(resampled, kl_max)["quality"])
    return np.asarray(out)


def check_gold_rows(n_gold: int) -> None:
    """A one-line error when no policy at all is certifiable from ``n_gold`` rows a family."""
    if n_gold <= SUPPORT_MIN:
        # n * exp(-KL) >= SUPPORT_MIN is out of reach even at KL 0.
        raise ConfigError(
            f"--gold-per-family: certification needs more than {SUPPORT_MIN:g} gold rows per "
            f"family, got {n_gold}"
        )


def frontier_study(
    world: Path,
    prompts: int = 128,
    per_prompt: int = 4096,
    n_gold: int | None = None,
    families: tuple[str, ...] = FAMILIES,
    bootstrap: int = 200,
    seed: int = FRONTIER_SEED,
    policies: dict[str, Path] | None = None,
    per_family: int = 500,
) -> dict:
    """Per family and on the balanced mix: the reference, the bound under the KL floor (with a
    bootstrap SE over prompts) and a certifiable policy's true quality and KL; and each of
    ``policies`` (name -> folder) beside the best quality at its own KL.

    ``n_gold`` defaults to the world's gold labels per family (the smallest family's count)."""
    from tinyworld.certify.certify import load_gold

    require_world(world)
    policies = policies or {}
    loaded = {name: load_policy(folder) for name, folder in policies.items()}  # fail fast
    if n_gold is None:
        gold = load_gold(world)
        n_gold = min(int((gold.families == FAMILY_ID[f]).sum()) for f in families)
    check_gold_rows(n_gold)
    oracle, _ = load_oracle(world)
    reference = load_policy(world / "policy")
    generator = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    # Every family must pass for the balanced mix to be certified: each family's gold set
    # passing with probability 0.5 ** (1 / F) makes all F pass in half of the gold sets.
    share = 0.5 ** (1 / len(families))
    out: dict = {
        "world": str(world),
        "prompts": prompts,
        "per_prompt": per_prompt,
        "n_gold": n_gold,
        "ess_min": ESS_MIN,
        "support_min": SUPPORT_MIN,
        "families": {},
    }
    boots = []
    distributions = {}
    for fam in progress(families, "certifiable frontier", len(families)):
        p = distributions[fam] = correct_count_distribution(
            oracle, reference, fam, prompts, per_prompt, generator
        )
        row = family_frontier(p, n_gold, seed=seed, share=share)
        spread = bootstrap_kl_bound(p, row["kl_floor"], bootstrap, rng)
        row["kl_bound"]["se"] = float(spread.std(ddof=1)) if bootstrap > 1 else None
        boots.append(spread)
        out["families"][fam] = row
        log.info(
            "frontier %s: reference %.3f, KL bound %.3f, certifiable %.3f (KL %.2f)",
            fam, row["reference_quality"], row["kl_bound"]["quality"],
            row["certifiable"]["quality"], row["certifiable"]["kl"],
        )  # fmt: skip
    rows = out["families"].values()
    out["balanced"] = {
        "reference_quality": float(np.mean([r["reference_quality"] for r in rows])),
        "kl_bound": float(np.mean([r["kl_bound"]["quality"] for r in rows])),
        "kl_bound_se": float(np.mean(boots, axis=0).std(ddof=1)) if bootstrap > 1 else None,
        "certifiable": float(np.mean([r["certifiable"]["quality"] for r in rows])),
        "share_all_certify": float(np.prod([r["certifiable"]["share_certifiable"] for r in rows])),
    }
    out["policies"] = {
        name: {
            "folder": str(policies[name]),
            **place_policy(oracle, reference, policy, distributions, per_family),
        }
        for name, policy in loaded.items()
    }
    return out


def place_policy(
    oracle: Oracle,
    reference: Policy,
    policy: Policy,
    distributions: dict[str, np.ndarray],
    per_family: int,
) -> dict:
    """Per family: the policy's true quality and KL to the reference (``per_family`` fresh
    prompts), and the best true quality any policy reaches at that KL: how much of the room its
    KL buys, whatever certifies it."""
    report = evaluate_policy(policy, oracle, reference=reference, per_family=per_family)
    rows = {}
    for fam, p in distributions.items():
        r = report["per_family"][fam]
        rows[fam] = {
            "quality": r["true_quality"],
            "kl": r["kl"],
            # A sampled KL can come out a hair below 0 for a policy at the reference.
            "best_at_kl": best_at_kl(p, max(r["kl"], 0.0))["quality"],
        }
    return {
        "families": rows,
        "quality": float(np.mean([r["quality"] for r in rows.values()])),
        "best_at_kl": float(np.mean([r["best_at_kl"] for r in rows.values()])),
    }


def markdown(study: dict) -> str:
    """The study as a table per family and a balanced line."""
    n = study["n_gold"]
    lines = [
        f"Certifiable frontier of `{study['world']}`: {study['prompts']} prompts per family, "
        f"{study['per_prompt']} reference samples each; gold rows per family n = {n}; floors: "
        f"ESS >= {study['ess_min']:g}, n exp(-KL) >= {study['support_min']:g}.",
        "",
        "| family | reference | bound under the KL floor (KL <= "
        f"{math.log(n / study['support_min']):.2f}) | certifiable policy | its KL | its E[w^2] "
        "| gold sets that certify it |",
        "|---|---|---|---|---|---|---|",
    ]
    for fam, r in study["families"].items():
        b, c = r["kl_bound"], r["certifiable"]
        se = f" (SE {b['se']:.3f})" if b["se"] is not None else ""
        lines.append(
            f"| {fam} | {r['reference_quality']:.3f} | {b['quality']:.3f}{se} | "
            f"{c['quality']:.3f} | {c['kl']:.2f} | {c['mean_w2']:.1f} | "
            f"{c['share_certifiable']:.0%} |"
        )
    bal = study["balanced"]
    se = f" (SE {bal['kl_bound_se']:.3f})" if bal["kl_bound_se"] is not None else ""
    lines.append(
        f"| **balanced** | {bal['reference_quality']:.3f} | **{bal['kl_bound']:.3f}**{se} | "
        f"**{bal['certifiable']:.3f}** | | | {bal['share_all_certify']:.0%} (every family) |"
    )
    if study.get("policies"):
        floor = math.log(n / study["support_min"])
        lines += [
            "",
            "Policies beside the best true quality at their own KL (per family, then averaged):",
            "",
            "| policy | true quality | best at its KL | its KL per family | families past the "
            "KL floor |",
            "|---|---|---|---|---|",
        ]
        for name, r in study["policies"].items():
            kls = [f["kl"] for f in r["families"].values()]
            past = sum(k > floor for k in kls)
            lines.append(
                f"| {name} | {r['quality']:.3f} | {r['best_at_kl']:.3f} | "
                f"{min(kls):.2f}-{max(kls):.2f} | {past} |"
            )
    return "\n".join(lines) + "\n"
