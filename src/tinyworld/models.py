"""Saving and loading the policy and the reward model: safetensors weights, a JSON config."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, fields
from pathlib import Path

import torch
from safetensors.torch import load_file, save
from torch import nn

from rate.errors import RateError
from rate.io import atomic_directory, atomic_write_bytes, atomic_write_json
from tinyworld.policy import Policy, PolicyConfig
from tinyworld.reward_model import RewardModel, RewardModelConfig

log = logging.getLogger(__name__)


# <dir>/<weights>.safetensors + <dir>/config.json, written atomically.

_FILES = {
    Policy: ("policy.safetensors", PolicyConfig),
    RewardModel: ("rm.safetensors", RewardModelConfig),
}
_KIND = {Policy: "policy", RewardModel: "reward_model"}


def check_finite(model: nn.Module, what: str, fix: str) -> None:
    """Raise a RateError naming ``what`` and saying ``fix`` if a weight is NaN or infinite."""
    weights = {k: t for k, t in model.state_dict().items() if t.is_floating_point()}
    bad = [name for name, t in weights.items() if not bool(torch.isfinite(t).all())]
    if bad:
        raise RateError(
            f"{what}: {len(bad)} of {len(weights)} weight tensors hold NaN or infinite values "
            f"(the first: {bad[0]}); {fix}"
        )


def save_model(model: Policy | RewardModel, directory: Path, extra: dict | None = None) -> None:
    """Write weights and config to ``directory`` atomically (a kill leaves the old one or none).

    Non-finite weights are refused: a model that diverged must never look like a finished one.
    """
    weights_name, _ = _FILES[type(model)]
    kind = _KIND[type(model)]
    check_finite(model, f"not saving the {kind} to {directory}", "its training diverged")
    meta = {"kind": kind, **asdict(model.config), **(extra or {})}
    with atomic_directory(Path(directory), overwrite=True) as tmp:
        state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
        # Through rate.io like every file: the mode and group a finished file gets (safetensors
        # itself writes 0600, whatever the umask).
        atomic_write_bytes(tmp / weights_name, save(state))
        atomic_write_json(tmp / "config.json", meta)


def _load(cls: type, directory: Path) -> nn.Module:
    weights_name, config_cls = _FILES[cls]
    directory = Path(directory)
    kind = _KIND[cls]
    weights, config_path = directory / weights_name, directory / "config.json"
    for path in (weights, config_path):
        if not path.is_file():
            raise RateError(
                f"{directory}: not a {kind} directory ({path.name} is missing); point to a folder "
                f"holding {weights_name} and config.json, e.g. the world's {kind}/ or a run's checkpoint/"
            )
    try:
        meta = json.loads(config_path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise RateError(f"{config_path}: cannot read model config ({err})") from err
    if meta.get("kind", kind) != kind:
        raise RateError(f"{config_path}: this is a {meta.get('kind')} model, expected a {kind}")
    names = {f.name for f in fields(config_cls)}
    config = config_cls(**{k: v for k, v in meta.items() if k in names})
    model = cls(config)
    try:
        state = load_file(str(weights))
        model.load_state_dict(state)
    except Exception as err:  # safetensors raises several types for corrupt files
        raise RateError(
            f"{weights}: cannot load weights ({err}); rebuild or re-copy the model"
        ) from err
    # Every command that reads a model comes through here, so none reports on NaN weights.
    check_finite(
        model,
        f"{directory}: not a usable {kind}",
        "its training diverged; retrain it (for an RL run: a lower lr or kl_coef)",
    )
    model.eval()
    return model


def load_policy(directory: Path) -> Policy:
    """Load a policy saved by :func:`save_model`."""
    return _load(Policy, directory)  # type: ignore[return-value]


def load_reward_model(directory: Path) -> RewardModel:
    """Load a reward model saved by :func:`save_model`."""
    return _load(RewardModel, directory)  # type: ignore[return-value]


__all__ = [
    "check_finite",
    "load_policy",
    "load_reward_model",
    "save_model",
]
