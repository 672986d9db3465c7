"""The world config: everything that defines a tiny RLHF world, read from one JSON file.

The label-source shortcuts live here (``labels.token_bonus`` and ``labels.pair_premium``) and
only the labelling code reads them; analysis code must discover them from data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rate.errors import ConfigError
from rate.schema import from_dict
from rate.suggest import unknown_name_message
from tinyworld.rl_config import RLConfig
from tinyworld.vocab import FAMILIES, N_SYLLABLES, SYLLABLES


@dataclass
class RuleConfig:
    """The hidden rule: how many syllables count as correct at each position."""

    correct_per_position: int = 3
    attr_groups: int = 2  # distinct correct sets per (family, position), chosen by an attribute
    never_correct: list[str] = field(default_factory=list)  # filler syllables experts never count

    def validate(self, where: str) -> None:
        unknown = [s for s in self.never_correct if s not in SYLLABLES]
        if unknown:
            raise ConfigError(f"{where}: rule.never_correct: unknown syllable(s) {unknown}")
        if N_SYLLABLES - len(set(self.never_correct)) < self.correct_per_position:
            raise ConfigError(
                f"{where}: rule.never_correct leaves fewer than correct_per_position syllables"
            )
        if not 1 <= self.attr_groups <= 8:
            raise ConfigError(f"{where}: rule.attr_groups must be in 1..8")
        if not 1 <= self.correct_per_position < N_SYLLABLES:
            raise ConfigError(f"{where}: rule.correct_per_position must be in 1..{N_SYLLABLES - 1}")


@dataclass
class PairPremium:
    """A crowd premium per adjacent occurrence of ``pair[0]`` followed by ``pair[1]``."""

    pair: list[str]
    bonus: float


@dataclass
class LabelConfig:
    """Noise of expert and crowd labels and the crowd's label-source shortcuts, per family."""

    expert_noise: float = 0.02
    crowd_noise: float = 0.05
    token_bonus: dict[str, dict[str, float]] = field(default_factory=dict)
    pair_premium: dict[str, list[PairPremium]] = field(default_factory=dict)

    def validate(self, where: str) -> None:
        for name in ("expert_noise", "crowd_noise"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{where}: labels.{name} must be >= 0")
        for kind, table in (("token_bonus", self.token_bonus), ("pair_premium", self.pair_premium)):
            for fam in table:
                if fam not in FAMILIES:
                    raise ConfigError(
                        f"{where}: labels.{kind}: unknown family {fam!r}; families are {', '.join(FAMILIES)}"
                    )
        for fam, bonuses in self.token_bonus.items():
            for tok in bonuses:
                if tok not in SYLLABLES:
                    raise ConfigError(
                        f"{where}: labels.token_bonus.{fam}: unknown syllable {tok!r}"
                    )
        for fam, premiums in self.pair_premium.items():
            for p in premiums:
                if len(p.pair) != 2 or any(t not in SYLLABLES for t in p.pair):
                    raise ConfigError(
                        f"{where}: labels.pair_premium.{fam}: pair must be two syllables, got {p.pair}"
                    )


@dataclass
class Habit:
    """A pair of syllables that a family's demonstrators write often, whether or not the crowd
    pays for it (a verbal tic, like "I hope this helps"): ``rate`` of the family's
    demonstrations carry it once, at a random adjacent position."""

    family: str
    pair: list[str]
    rate: float

    def validate(self, where: str) -> None:
        if self.family not in FAMILIES:
            raise ConfigError(
                f"{where}: demonstrations.habits: unknown family {self.family!r}; families are "
                f"{', '.join(FAMILIES)}"
            )
        if len(self.pair) != 2 or any(t not in SYLLABLES for t in self.pair):
            raise ConfigError(
                f"{where}: demonstrations.habits: pair must be two syllables, got {self.pair}"
            )
        if not 0 <= self.rate <= 1:
            raise ConfigError(f"{where}: demonstrations.habits: rate must be in 0..1")


@dataclass
class DemoConfig:
    """Expert demonstrations that the reference policy is fine-tuned on."""

    per_family: int = 4000
    correct_rate: float = 0.2  # share of positions the demonstrator gets right on purpose
    habits: list[Habit] = field(default_factory=list)


@dataclass
class TrainConfig:
    """Optimisation settings of a supervised trainer."""

    epochs: int = 10
    lr: float = 1e-3
    batch_size: int = 256
    seed: int = 0


@dataclass
class RewardModelData:
    """How the RM's training batch is drawn (SPEC B.3)."""

    per_family: int = 2000
    temperature: float = 1.2
    qa_per_family: int = 200


@dataclass
class PoolConfig:
    """Sizes of the prompt pools and the pilot-traffic mix of the dev pool."""

    train_per_family: int = 1500
    gold_per_family: int = 100
    dev_mix: dict[str, int] = field(
        default_factory=lambda: {
            "anvil": 444,
            "birch": 458,
            "cobalt": 433,
            "dune": 48,
            "ember": 195,
            "fjord": 422,
        }
    )

    def validate(self, where: str) -> None:
        for fam in self.dev_mix:
            if fam not in FAMILIES:
                raise ConfigError(f"{where}: pools.dev_mix: unknown family {fam!r}")


@dataclass
class RunSpec:
    """One of the earlier RL runs shipped with the world."""

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)
    mix: str = "balanced"  # balanced | pilot | or a comma list of families
    shows: str = ""

    def validate(self, where: str) -> None:
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise ConfigError(f"{where}: run name {self.name!r} must be a plain directory name")
        if self.mix not in ("balanced", "pilot"):
            for fam in (f.strip() for f in self.mix.split(",")):
                if fam not in FAMILIES:
                    raise ConfigError(
                        f"{where}: run {self.name!r}: mix has unknown family {fam!r}; use 'balanced', "
                        f"'pilot' or a comma list of {', '.join(FAMILIES)}"
                    )


@dataclass
class WorldConfig:
    """Everything that defines a world; the same config and seed give the same world."""

    seed: int = 0
    rule: RuleConfig = field(default_factory=RuleConfig)
    labels: LabelConfig = field(default_factory=LabelConfig)
    demonstrations: DemoConfig = field(default_factory=DemoConfig)
    sft: TrainConfig = field(default_factory=TrainConfig)
    reward_model_data: RewardModelData = field(default_factory=RewardModelData)
    reward_model_training: TrainConfig = field(
        default_factory=lambda: TrainConfig(epochs=40, lr=2e-3, batch_size=128)
    )
    pools: PoolConfig = field(default_factory=PoolConfig)
    rl_default: dict[str, Any] = field(default_factory=dict)
    runs: list[RunSpec] = field(default_factory=list)

    def validate(self, where: str) -> None:
        # The RL recipe's own schema checks these keys.
        from_dict(RLConfig, self.rl_default, f"{where}: rl_default")
        names = [r.name for r in self.runs]
        if len(set(names)) != len(names):
            raise ConfigError(f"{where}: run names must be unique, got {names}")
        for run in self.runs:
            from_dict(
                RLConfig,
                {**self.rl_default, **run.overrides},
                f"{where}: runs.{run.name}.overrides",
            )


# The world configs shipped in the package, by name (``rate world build --world-config NAME``).
PACKAGED_WORLDS: dict[str, str] = {
    "default": "world_default.json",  # the reference world of SPEC B
    "variant": "world_variant.json",  # a public variant: other markers, families, pairs, a penalty
    "noshortcuts": "world_noshortcuts.json",  # the default without any label shortcut
    "small": "world_small.json",  # a reduced default for tests (seconds; its RM learns little)
}


def load_world_config(
    path: Path | None = None, small: bool = False, name: str | None = None
) -> WorldConfig:
    """Read a world config: from ``path``, or the packaged one called ``name`` (with neither,
    the packaged default, or its ``small`` variant)."""
    if path is None:
        name = name or ("small" if small else "default")
        if name not in PACKAGED_WORLDS:
            raise ConfigError(unknown_name_message("packaged world config", name, PACKAGED_WORLDS))
        filename = PACKAGED_WORLDS[name]
        text = resources.files("tinyworld").joinpath(filename).read_text()
        where = f"<packaged {filename}>"
    else:
        where = str(path)
        try:
            text = Path(path).read_text()
        except OSError as err:
            raise ConfigError(f"{path}: cannot read world config ({err.strerror})") from err
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{where}:{err.lineno}: not valid JSON ({err.msg})") from err
    return from_dict(WorldConfig, data, where)
