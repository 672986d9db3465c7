"""The world config: everything that defines a tiny RLHF world, read from one JSON file.

The label-source shortcuts live here (``labels.token_bonus`` and ``labels.pair_premium``) and
only the labelling code reads them; analysis code must discover them from data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rate.errors import ConfigError
from rate.schema import SEED, Bound, from_dict, opt
from rate.suggest import unknown_name_message
from tinyworld.rl_config import LR, RLConfig
from tinyworld.vocab import FAMILIES, N_SYLLABLES, SYLLABLES

SHARE = Bound(0, high=1, why="a share")
NOISE = Bound(0, high=10, why="an SD on the labels' scale")
# A bonus or penalty on the labels' scale (a label is a share of correct positions, 0 to 1).
BONUS = Bound(-10, high=10, why="on the labels' scale")
ROWS = Bound(1, high=10**6, why="rows per family")  # every world size ever built fits


@dataclass
class RuleConfig:
    """The hidden rule: how many syllables count as correct at each position."""

    correct_per_position: int = opt(
        3,
        help="syllables that count as correct at each position",
        bound=Bound(1, high=N_SYLLABLES - 1, why="one syllable at least is never correct"),
    )
    attr_groups: int = opt(
        2,
        help="distinct correct sets per (family, position), chosen by an attribute",
        bound=Bound(1, high=8),
    )
    never_correct: list[str] = opt(help="filler syllables that experts never count", factory=list)

    def validate(self, where: str) -> None:
        unknown = [s for s in self.never_correct if s not in SYLLABLES]
        if unknown:
            raise ConfigError(f"{where}: rule.never_correct: unknown syllable(s) {unknown}")
        if N_SYLLABLES - len(set(self.never_correct)) < self.correct_per_position:
            raise ConfigError(
                f"{where}: rule.never_correct leaves fewer than correct_per_position syllables"
            )


@dataclass
class PairPremium:
    """A crowd premium per adjacent occurrence of ``pair[0]`` followed by ``pair[1]``."""

    pair: list[str] = opt(help="two syllables, in order")
    bonus: float = opt(help="the crowd's premium per occurrence", bound=BONUS)


@dataclass
class LabelConfig:
    """Noise of expert and crowd labels and the crowd's label-source shortcuts, per family."""

    expert_noise: float = opt(0.02, help="SD of the experts' label noise", bound=NOISE)
    crowd_noise: float = opt(0.05, help="SD of the crowd's label noise", bound=NOISE)
    token_bonus: dict[str, dict[str, float]] = opt(
        help="{family: {syllable: the crowd's bonus per occurrence}}", factory=dict
    )
    pair_premium: dict[str, list[PairPremium]] = opt(help="{family: [pair premiums]}", factory=dict)

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
            for tok, bonus in bonuses.items():
                if tok not in SYLLABLES:
                    raise ConfigError(
                        f"{where}: labels.token_bonus.{fam}: unknown syllable {tok!r}"
                    )
                BONUS.check(bonus, f"{where}: key 'labels.token_bonus.{fam}.{tok}'")
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

    family: str = opt(help="the family whose demonstrators have the habit")
    pair: list[str] = opt(help="two syllables, in order")
    rate: float = opt(help="share of the family's demonstrations that carry it", bound=SHARE)

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


@dataclass
class DemoConfig:
    """Expert demonstrations that the reference policy is fine-tuned on."""

    per_family: int = opt(4000, help="demonstrations per family", bound=ROWS)
    correct_rate: float = opt(
        0.2, help="share of positions the demonstrator gets right on purpose", bound=SHARE
    )
    habits: list[Habit] = opt(help="the demonstrators' habits", factory=list)


@dataclass
class TrainConfig:
    """Optimisation settings of a supervised trainer."""

    epochs: int = opt(10, help="passes over the data", bound=Bound(1, high=10_000))
    lr: float = opt(1e-3, help="Adam's learning rate", bound=LR)
    batch_size: int = opt(256, help="rows per step", bound=Bound(1, high=65_536))
    seed: int = opt(0, help="the trainer's randomness", bound=SEED)


@dataclass
class RewardModelData:
    """How the RM's training batch is drawn (SPEC B.3)."""

    per_family: int = opt(2000, help="sampled responses per family", bound=ROWS)
    temperature: float = opt(
        1.2, help="the sampling temperature", bound=Bound(0, strict=True, high=1000)
    )
    qa_per_family: int = opt(
        200, help="responses per family kept aside to check the RM", bound=Bound(0, high=10**6)
    )


@dataclass
class PoolConfig:
    """Sizes of the prompt pools and the pilot-traffic mix of the dev pool."""

    train_per_family: int = opt(1500, help="RL training prompts per family", bound=ROWS)
    gold_per_family: int = opt(100, help="gold-labelled prompts per family", bound=ROWS)
    dev_mix: dict[str, int] = opt(
        help="{family: prompts} of the dev pool's pilot-traffic mix",
        factory=lambda: {
            "anvil": 444,
            "birch": 458,
            "cobalt": 433,
            "dune": 48,
            "ember": 195,
            "fjord": 422,
        },
    )

    def validate(self, where: str) -> None:
        for fam, n in self.dev_mix.items():
            if fam not in FAMILIES:
                raise ConfigError(f"{where}: pools.dev_mix: unknown family {fam!r}")
            Bound(0, high=10**6).check(n, f"{where}: key 'pools.dev_mix.{fam}'")


@dataclass
class RunSpec:
    """One of the earlier RL runs shipped with the world."""

    name: str = opt(help="the run's folder name under runs/")
    overrides: dict[str, Any] = opt(help="RL keys that differ from rl_default", factory=dict)
    mix: str = opt("balanced", help="balanced, pilot, or a comma list of families")
    shows: str = opt("", help="what the run shows, for the runs table")

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

    seed: int = opt(0, help="the world's randomness", bound=SEED)
    rule: RuleConfig = opt(help="the hidden rule", factory=RuleConfig)
    labels: LabelConfig = opt(help="label noise and the crowd's shortcuts", factory=LabelConfig)
    demonstrations: DemoConfig = opt(help="the experts' demonstrations", factory=DemoConfig)
    sft: TrainConfig = opt(help="fine-tuning the reference policy", factory=TrainConfig)
    reward_model_data: RewardModelData = opt(
        help="the reward model's training batch", factory=RewardModelData
    )
    reward_model_training: TrainConfig = opt(
        help="training the reward model",
        factory=lambda: TrainConfig(epochs=40, lr=2e-3, batch_size=128),
    )
    pools: PoolConfig = opt(help="the prompt pools", factory=PoolConfig)
    rl_default: dict[str, Any] = opt(help="the RL keys every run starts from", factory=dict)
    runs: list[RunSpec] = opt(help="the earlier RL runs shipped with the world", factory=list)

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
# Not a file: a world config drawn from a seed (tinyworld.random_world; --world-config random
# --seed N).
RANDOM_WORLD = "random"


def load_world_config(
    path: Path | None = None, small: bool = False, name: str | None = None
) -> WorldConfig:
    """Read a world config: from ``path``, or the packaged one called ``name`` (with neither,
    the packaged default, or its ``small`` variant)."""
    if path is None:
        name = name or ("small" if small else "default")
        if name == RANDOM_WORLD:
            raise ConfigError(
                "the random world config is drawn from a seed: "
                "tinyworld.random_world.random_world_config(seed), or "
                "`rate world build --world-config random --seed N`"
            )
        if name not in PACKAGED_WORLDS:
            raise ConfigError(
                unknown_name_message("world config", name, [*PACKAGED_WORLDS, RANDOM_WORLD])
            )
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
