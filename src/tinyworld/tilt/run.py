"""The tilt analysis of a world: per family, the reward's tail and the forecast of pi_beta.

It reads what an analyst has (the reference policy, the reward model, the gold labels and an
optional reward wrapper) and never the world's truth.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from rate.errors import ConfigError
from rate.progress import progress
from tinyworld.data import PromptPool, load_labelled, pool_from_records, require_world
from tinyworld.models import load_policy, load_reward_model
from tinyworld.policy import Policy
from tinyworld.prompts import make_prompts
from tinyworld.reward_model import RewardModel
from tinyworld.rl_config import RewardTransform, apply_reward_wrapper, load_reward_wrapper
from tinyworld.sampling import sample, score
from tinyworld.tilt.forecast import (
    BEYOND_MAX,
    ESS_MIN,
    XI_MAX,
    add_coverage,
    model_forecast,
    tilt_forecast,
)
from tinyworld.tilt.guided import LADDER, additive_fit, sample_tilt
from tinyworld.tilt.hill import exponential_qq, hill, weight_tail_index
from tinyworld.vocab import FAMILIES, decode_responses

log = logging.getLogger(__name__)

RAW, CORRECTED = "raw", "corrected"
CHUNK = 20_000  # responses sampled and scored at a time (memory stays small)


class Rewards:
    """The raw reward (the RM's score) and, with a wrapper, the corrected one."""

    def __init__(self, rm: RewardModel, wrapper: Path | None = None) -> None:
        self.rm = rm
        self.wrapper = None if wrapper is None else str(wrapper)
        self.transform: RewardTransform | None = (
            None if wrapper is None else load_reward_wrapper(wrapper)
        )

    @property
    def kinds(self) -> tuple[str, ...]:
        return (RAW,) if self.transform is None else (RAW, CORRECTED)

    def __call__(self, pool: PromptPool, responses: torch.Tensor) -> dict[str, np.ndarray]:
        """Each kind of reward of ``responses`` (N, 8) to the prompts of ``pool``, as float64."""
        raw = score(self.rm, pool.tokens, responses)
        out = {RAW: raw.double().numpy()}
        if self.transform is not None:
            out[CORRECTED] = (
                apply_reward_wrapper(
                    self.transform,
                    self.wrapper,
                    pool.records,
                    decode_responses(responses),
                    raw,
                )
                .double()
                .numpy()
            )
        return out


def reference_samples(
    policy: Policy, family: str, n: int, generator: torch.Generator, prefix: str = "tilt"
):
    """``n`` fresh prompts of ``family`` (attributes uniform, as the world draws them) with one
    temperature-1 response each from ``policy``, in chunks: yields (pool, responses)."""
    for start in range(0, n, CHUNK):
        m = min(CHUNK, n - start)
        pool = pool_from_records(make_prompts({family: m}, prefix, generator, shuffle=False))
        yield pool, sample(policy, pool.tokens, 1.0, generator).responses


def reward_tail(r: np.ndarray, betas: list[float]) -> dict:
    """The tail of one reward's sample: Hill on the reward (when its top is positive), the
    exponential Q-Q data of its excesses, and per beta Hill on the tilt's weights."""
    out: dict = {"n": int(r.size)}
    try:
        out["hill_reward"] = hill(r).as_dict()
    except ValueError as err:
        out["hill_reward"] = None
        out["hill_reward_note"] = str(err)
    out["weights"] = {str(b): weight_tail_index(r, b).as_dict() for b in betas}
    out["qq_exponential"] = exponential_qq(r)
    return out


def check_betas(betas: list[float]) -> list[float]:
    if not betas or any(not (b > 0) for b in betas):
        raise ConfigError(f"--beta: give one or more numbers > 0, got {betas}")
    return [float(b) for b in betas]


def tilt_analysis(
    world: Path,
    wrapper: Path | None = None,
    betas: list[float] = (0.1, 0.05),
    tail_samples: int = 10_000,
    n_boot: int = 2000,
    seed: int = 0,
    model_samples: int = 10_000,
) -> dict:
    """Per family of the gold file: the tails (reference samples and gold errors) and the
    forecasts of pi_beta's quality for each beta, with the raw and (with a wrapper) the
    corrected reward: the gold labels reweighted and, with a wrapper and ``model_samples`` > 0,
    the corrected reward's gold calibration averaged over ``model_samples`` guided samples of
    pi_beta per rung of the ladder (:func:`model_forecasts`)."""
    world = require_world(Path(world))
    betas = check_betas(list(betas))
    if tail_samples < 20:
        raise ConfigError(f"--tail-samples must be >= 20, got {tail_samples}")
    if model_samples < 0:
        raise ConfigError(f"--model-samples must be >= 0, got {model_samples}")
    rewards = Rewards(load_reward_model(world / "reward_model"), wrapper)
    policy = load_policy(world / "policy")
    gold = load_labelled(world / "data" / "gold_calib.jsonl")
    gold_r = rewards(gold, gold.responses)
    gen = torch.Generator().manual_seed(seed)
    families = {}
    for f, fam in progress(list(enumerate(FAMILIES)), "tilt forecast", len(FAMILIES)):
        m = (gold.families == f).numpy()
        if not m.any():
            continue
        y = gold.labels.double().numpy()[m]
        ref = {k: [] for k in rewards.kinds}
        ref_responses = []
        for pool, responses in reference_samples(policy, fam, tail_samples, gen):
            ref_responses.append(responses)
            for k, v in rewards(pool, responses).items():
                ref[k].append(v)
        row: dict = {"gold_n": int(m.sum()), "gold_mean": round(float(y.mean()), 6)}
        ref = {k: np.concatenate(v) for k, v in ref.items()}
        row["tail"] = {k: reward_tail(ref[k], betas) for k in rewards.kinds}
        row["gold_error_tail"] = {}
        for k in rewards.kinds:
            err = gold_r[k][m] - y  # what the reward pays beyond the expert's label
            try:
                row["gold_error_tail"][k] = {**hill(err).as_dict(), "qq": exponential_qq(err)}
            except ValueError as e:
                row["gold_error_tail"][k] = {"note": str(e), "qq": exponential_qq(err)}
        row["forecast"] = {
            k: {
                str(b): add_coverage(
                    tilt_forecast(gold_r[k][m], y, b, n_boot, seed), ref[k], gold_r[k][m]
                )
                for b in betas
            }
            for k in rewards.kinds
        }
        if rewards.transform is not None and model_samples > 0:
            row["model"] = model_forecasts(
                policy, fam, rewards, torch.cat(ref_responses), ref, gold_r, m, y, betas,
                model_samples, gen, n_boot, seed,
            )  # fmt: skip
        families[fam] = row
        log.info("tilt: %s done", fam)
    return {
        "world": str(world),
        "wrapper": rewards.wrapper,
        "betas": betas,
        "rewards": list(rewards.kinds),
        "tail_samples_per_family": tail_samples,
        "model_samples_per_rung": model_samples if rewards.transform is not None else 0,
        "ladder": list(LADDER),
        "n_boot": n_boot,
        "seed": seed,
        "ess_min": ESS_MIN,
        "xi_max": XI_MAX,
        "beyond_max": BEYOND_MAX,
        "families": families,
    }


def model_forecasts(
    policy: Policy,
    fam: str,
    rewards: Rewards,
    ref_responses: torch.Tensor,
    ref: dict[str, np.ndarray],
    gold_r: dict[str, np.ndarray],
    gold_rows: np.ndarray,
    y: np.ndarray,
    betas: list[float],
    n_per_rung: int,
    gen: torch.Generator,
    n_boot: int,
    seed: int,
) -> dict:
    """Per reward kind and beta, :func:`model_forecast` of one family: the tilt is sampled
    with proposals leaned by that reward's additive fit on the reference samples."""
    out: dict = {}
    for kind in rewards.kinds:
        effects = additive_fit(ref_responses, ref[kind])
        out[kind] = {}
        for b in betas:
            drawn = sample_tilt(policy, fam, rewards, kind, b, effects, n_per_rung, gen)
            out[kind][str(b)] = model_forecast(
                y, gold_r[CORRECTED][gold_rows], drawn.rewards[CORRECTED], drawn.weights(),
                ref[CORRECTED], b, n_boot, seed, kl=drawn.kl_to_reference(kind, b),
            )  # fmt: skip
    return out
