"""Random worlds: a shortcut table drawn from a seed, as an annotation vendor might have left it.

:func:`random_world_config` starts from the packaged default config (or the small one) and
redraws, from ``numpy.random.default_rng(seed)`` alone, everything that says where the crowd
cheats. The ranges bracket the designed worlds' values (default and variant: token bonuses
0.4-1.45, a penalty -0.6, pair premiums 0.6-0.9, habits at 0.3):

- **Families**: 2 to 4 of the six, chosen uniformly, get shortcuts; each gets a token
  shortcut alone (40%), a pair premium alone (30%) or both (30%): a pair beside a token.
- **Token shortcuts**: a bonus of +0.3 to +1.5 per occurrence (75%) or a penalty of -0.3 to
  -0.9 (25%). A bonus syllable is one that experts never count (it joins ``rule.never_correct``,
  as pa and he do in the default world) and marks one family only; a penalised syllable is an
  ordinary one. Demonstrators draw three positions in four uniformly, so any syllable turns
  up about once in four responses by chance: common enough in the reward model's data without
  a habit (as in the designed worlds, whose markers have none).
- **Pair premiums**: +0.4 to +1.0 per adjacent occurrence, of two ordinary syllables, a
  repeated one (``a a``) a quarter of the time. No two shortcuts of a family share a syllable,
  so the intervention of :mod:`tinyworld.shortcuts` reads each one exactly.
- **Habits**: every paid pair is a habit of its family's demonstrators (rate 0.2 to 0.4), so
  that it is common enough to be learned; 1 or 2 more habits, in any family, are *decoys* that
  the crowd does not pay for, drawn the same way (a repeated pair as often), so that how often a
  pair is written does not tell a paid one from a tic.
- **Pilot traffic**: the default dev mix's counts are dealt to the families at random; the
  runs that under-weight or leave out families take the two smallest of that mix.
- **Seed**: the world's own seed is drawn too, so two random worlds differ in their hidden
  rule, data and models as well as in their shortcuts.

Magnitudes are rounded to two decimals. Whether the reward model learned each shortcut is
measured when the world is built (``truth/shortcuts.json``): a random world is built whether or
not it learned them all, and that record says which it did.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tinyworld.vocab import FAMILIES, SYLLABLES
from tinyworld.worldconfig import (
    Habit,
    PairPremium,
    RunSpec,
    WorldConfig,
    load_world_config,
)

FAMILIES_WITH_SHORTCUTS = (2, 4)  # inclusive
SHAPES, SHAPE_P = ("token", "pair", "both"), (0.4, 0.3, 0.3)  # a family's shortcuts
P_PENALTY = 0.25
P_REPEATED = 0.25
TOKEN_BONUS = (0.3, 1.5)
PENALTY = (-0.9, -0.3)
PAIR_PREMIUM = (0.4, 1.0)
HABIT_RATE = (0.2, 0.4)
DECOYS = (1, 2)  # inclusive
WORLD_SEEDS = 2**31


def random_world_config(seed: int, small: bool = False) -> WorldConfig:
    """A world config whose shortcuts, habits, pilot mix and seed are drawn from ``seed``
    (the module docstring gives the draw); the rest is the default config, or the small one."""
    base = load_world_config(small=small)
    rng = np.random.default_rng(seed)
    n_families = int(rng.integers(FAMILIES_WITH_SHORTCUTS[0], FAMILIES_WITH_SHORTCUTS[1] + 1))
    chosen = sorted(rng.choice(len(FAMILIES), n_families, replace=False).tolist())
    tokens: dict[str, dict[str, float]] = {}
    pairs: dict[str, list[PairPremium]] = {}
    habits: list[Habit] = []
    markers: list[str] = []  # the bonus syllables: filler that experts never count
    used: dict[str, set[str]] = {fam: set() for fam in FAMILIES}  # each family's syllables
    for fam in (FAMILIES[i] for i in chosen):
        shape = rng.choice(SHAPES, p=SHAPE_P)
        if shape != "pair":
            if rng.random() < P_PENALTY:
                tok = _pick(rng, _ordinary(markers, used[fam]))
                bonus = _magnitude(rng, PENALTY)
            else:  # a marker of this family alone: no family has used it yet
                tok = _pick(rng, _ordinary(markers, set().union(*used.values())))
                markers.append(tok)
                bonus = _magnitude(rng, TOKEN_BONUS)
            tokens[fam] = {tok: bonus}
            used[fam].add(tok)
        if shape != "token":
            pair = _pair(rng, _ordinary(markers, used[fam]))
            pairs[fam] = [PairPremium(pair=pair, bonus=_magnitude(rng, PAIR_PREMIUM))]
            habits.append(Habit(family=fam, pair=pair, rate=_magnitude(rng, HABIT_RATE)))
            used[fam].update(pair)
    for _ in range(int(rng.integers(DECOYS[0], DECOYS[1] + 1))):
        fam = FAMILIES[int(rng.integers(len(FAMILIES)))]
        pair = _pair(rng, _ordinary(markers, used[fam]))
        habits.append(Habit(family=fam, pair=pair, rate=_magnitude(rng, HABIT_RATE)))
        used[fam].update(pair)
    # The habits in a fixed order, so that their place in the list does not tell a decoy.
    habits.sort(key=lambda h: (FAMILIES.index(h.family), h.pair))
    mix = base.pools.dev_mix
    dev_mix = dict(zip(mix, rng.permutation(list(mix.values())).tolist(), strict=True))
    return dataclasses.replace(
        base,
        seed=int(rng.integers(WORLD_SEEDS)),
        rule=dataclasses.replace(base.rule, never_correct=markers),
        labels=dataclasses.replace(base.labels, token_bonus=tokens, pair_premium=pairs),
        demonstrations=dataclasses.replace(base.demonstrations, habits=habits),
        pools=dataclasses.replace(base.pools, dev_mix=dev_mix),
        runs=[_rerun(spec, dev_mix) for spec in base.runs],
    )


def _ordinary(markers: list[str], taken: set[str]) -> list[str]:
    """The syllables that are neither a bonus marker nor already one of the family's."""
    return [s for s in SYLLABLES if s not in markers and s not in taken]


def _pick(rng: np.random.Generator, syllables: list[str]) -> str:
    return syllables[int(rng.integers(len(syllables)))]


def _pair(rng: np.random.Generator, syllables: list[str]) -> list[str]:
    """Two syllables in order: a repeated one with probability P_REPEATED, else two distinct."""
    if rng.random() < P_REPEATED:
        return [_pick(rng, syllables)] * 2
    a, b = rng.choice(len(syllables), 2, replace=False).tolist()
    return [syllables[a], syllables[b]]


def _magnitude(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    return round(float(rng.uniform(*bounds)), 2)


def _rerun(spec: RunSpec, dev_mix: dict[str, int]) -> RunSpec:
    """A base run with its prompt mix and its description fitted to the drawn pilot mix: a run
    on a list of families leaves out the mix's two smallest."""
    low = sorted(FAMILIES, key=lambda f: (dev_mix.get(f, 0), FAMILIES.index(f)))[:2]
    if spec.mix == "pilot":
        shows = f"trained on the pilot-traffic mix, which under-weights {low[0]} and {low[1]}"
        return dataclasses.replace(spec, shows=shows)
    if spec.mix == "balanced":
        return spec
    mix = ",".join(f for f in FAMILIES if f not in low)
    return dataclasses.replace(spec, mix=mix, shows=f"{low[0]} and {low[1]} left out of training")


__all__ = ["random_world_config"]
