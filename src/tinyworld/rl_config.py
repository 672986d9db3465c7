"""The RL recipe and what a run loads: the config, the user's reward wrapper, the checked inputs."""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rate.errors import ConfigError, RateError
from rate.schema import Bound, check_fields, flat_assignments, from_dict, opt
from rate.suggest import unknown_name_message
from tinyworld.data import PromptPool, load_prompts
from tinyworld.models import load_policy, load_reward_model
from tinyworld.policy import Policy
from tinyworld.reward_model import RewardModel
from tinyworld.sampling import (
    sample,
)
from tinyworld.vocab import FAMILIES, FAMILY_ID, decode_responses

# The weights are float32: a learning rate beyond float32's largest number cannot be applied.
LR = Bound(0, strict=True, high=3.4e38, why="the weights are float32")


def _memory(batch_prompts: int) -> str:
    return f"a step would hold {batch_prompts:,} prompts' samples and their graphs at once"


@dataclass
class RLConfig:
    """The RL recipe. Paths are relative to the world directory unless absolute."""

    policy: str = opt("policy", help="the starting policy")
    reference: str | None = opt(None, help="the KL anchor; null: the starting policy")
    reward_model: str = opt("reward_model", help="the reward model")
    prompts: str = opt("data/prompts_train.jsonl", help="the prompt pool")
    kl_coef: float = opt(
        0.1,
        help="shaped = reward - kl_coef * sum_t(log pi - log pi_ref), on the policy's samples",
        bound=Bound(0, high=10**6),
    )
    steps: int = opt(800, help="optimisation steps", bound=Bound(0, strict=True, high=10**7))
    batch_prompts: int = opt(
        16, help="prompts per step", bound=Bound(0, strict=True, high=65536, cost=_memory)
    )
    samples_per_prompt: int = opt(
        8,
        help="responses per prompt; the baseline is the mean of the prompt's group",
        bound=Bound(2, high=4096, why="the baseline is the mean of the prompt's other samples"),
    )
    lr: float = opt(3e-4, help="Adam's learning rate", bound=LR)
    temperature: float = opt(
        1.0, help="sampling temperature", bound=Bound(0, strict=True, high=1000)
    )
    seed: int = opt(
        0,
        help="the run's randomness",
        bound=Bound(0, high=2**64 - 1),  # torch's generators
    )
    log_every: int = opt(
        20,
        help="a line of log.jsonl every this many steps",
        bound=Bound(0, strict=True, high=10**7),
    )
    save_every: int = opt(
        0,
        help="a checkpoint under checkpoints/ every this many steps (0: none)",
        bound=Bound(0, high=10**7, why="0: no intermediate checkpoints"),
    )
    max_grad_norm: float = opt(
        1.0, help="gradient-norm clipping", bound=Bound(0, strict=True, high=10**12)
    )
    family_weights: dict[str, float] | None = opt(
        None, help="how often each family's prompts are drawn; null: uniform over those present"
    )
    reward_wrapper: str | None = opt(
        None,
        help="a .py file defining transform(records, response_tokens, rewards) -> rewards, "
        "applied to the RM's rewards before the KL term (its code runs)",
    )

    def validate(self, where: str) -> None:
        check_fields(self, where)  # again for a config built in Python
        if self.family_weights is not None:
            for fam, weight in self.family_weights.items():
                if fam not in FAMILY_ID:
                    raise ConfigError(
                        unknown_name_message(
                            "family", fam, FAMILIES, where=f"{where}: key 'family_weights'"
                        )
                    )
                if weight < 0 or not math.isfinite(weight):
                    raise ConfigError(
                        f"{where}: key 'family_weights.{fam}' must be a finite number >= 0"
                    )
            if sum(self.family_weights.values()) <= 0:
                raise ConfigError(
                    f"{where}: key 'family_weights' must give some family a weight > 0"
                )


def load_rl_config(path: Path | None, overrides: list[str] = ()) -> RLConfig:
    """Read a JSON config (or the defaults) and apply ``key=json_value`` overrides."""
    data: dict = {}
    where = "defaults"
    if path is not None:
        where = str(path)
        try:
            data = json.loads(Path(path).read_text())
        except OSError as err:
            raise ConfigError(f"{path}: cannot read the RL config ({err.strerror})") from err
        except json.JSONDecodeError as err:
            raise ConfigError(f"{path}:{err.lineno}: not valid JSON ({err.msg})") from err
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a JSON object of config keys")
    data.update(flat_assignments(overrides))
    if overrides:
        where = f"{where} with --set {' '.join(overrides)}"
    return from_dict(RLConfig, data, where)


# ---------------------------------------------------------------------------------------------
# Reward wrappers

RewardTransform = Callable[[list[dict], list[list[str]], np.ndarray], object]


def load_reward_wrapper(path: Path) -> RewardTransform:
    """Import ``transform`` from a Python file, with a clear error for each way it can be wrong."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"reward_wrapper: {path} does not exist; give the path of a .py file")
    spec = importlib.util.spec_from_file_location(
        f"rate_reward_wrapper_{abs(hash(str(path)))}", path
    )
    if spec is None or spec.loader is None:
        raise ConfigError(f"reward_wrapper: {path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        raise ConfigError(
            f"reward_wrapper: importing {path} raised {type(err).__name__}: {err}"
        ) from err
    transform = getattr(module, "transform", None)
    if not callable(transform):
        raise ConfigError(
            f"reward_wrapper: {path} defines no function 'transform'; add "
            "def transform(records, response_tokens, rewards) -> rewards"
        )
    return transform


def apply_reward_wrapper(
    transform: RewardTransform,
    path: str,
    records: list[dict],
    tokens: list[list[str]],
    rewards: torch.Tensor,
) -> torch.Tensor:
    """Call the wrapper and check what it returns: one finite number per response."""
    try:
        out = transform(records, tokens, rewards.numpy().astype(np.float64))
    except Exception as err:
        raise RateError(
            f"reward_wrapper {path}: transform raised {type(err).__name__}: {err}"
        ) from err
    try:
        arr = np.asarray(out, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as err:
        raise RateError(
            f"reward_wrapper {path}: transform must return numbers, got {type(out).__name__}"
        ) from err
    if arr.shape[0] != len(records):
        raise RateError(
            f"reward_wrapper {path}: transform returned {arr.shape[0]} rewards for {len(records)} responses"
        )
    if not np.isfinite(arr).all():
        raise RateError(f"reward_wrapper {path}: transform returned NaN or infinite rewards")
    return torch.from_numpy(arr).float()


# ---------------------------------------------------------------------------------------------
# A run's inputs


@dataclass
class RLInputs:
    """Everything a run needs, loaded and checked before training starts."""

    policy: Policy
    reference: Policy
    reward_model: RewardModel
    pool: PromptPool
    family_probs: torch.Tensor  # (F,) sampling weight of each family
    wrapper: RewardTransform | None


def resolve(world: Path, path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() else Path(world) / p


def prepare(config: RLConfig, world: Path) -> RLInputs:
    """Load models, prompts and wrapper; every input error is raised here, before any output."""
    policy = load_policy(resolve(world, config.policy))
    reference = load_policy(resolve(world, config.reference or config.policy))
    rm = load_reward_model(resolve(world, config.reward_model))
    pool = load_prompts(resolve(world, config.prompts))
    present = pool.families_present()
    weights = config.family_weights or {fam: 1.0 for fam in present}
    probs = torch.zeros(len(FAMILIES))
    for fam, w in weights.items():
        if w > 0 and fam not in present:
            raise ConfigError(
                f"family_weights gives {fam!r} weight {w} but {config.prompts} has no {fam} prompts "
                f"(present: {', '.join(present)})"
            )
        probs[FAMILY_ID[fam]] = w
    probs = probs / probs.sum()
    wrapper = None
    if config.reward_wrapper:
        wrapper = load_reward_wrapper(resolve(world, config.reward_wrapper))
        # A trial call on real samples, so a broken wrapper fails now and not mid-run.
        probe = pool.subset(torch.arange(min(4, len(pool))))
        samples = sample(policy, probe.tokens, config.temperature, torch.Generator().manual_seed(0))
        with torch.inference_mode():
            rewards = rm(probe.tokens, samples.responses)
        apply_reward_wrapper(
            wrapper,
            config.reward_wrapper,
            probe.records,
            decode_responses(samples.responses),
            rewards,
        )
    return RLInputs(policy, reference, rm, pool, probs, wrapper)
