"""How much of each family the audit measures, and how it decides (``rate world audit
--settings``)."""

from __future__ import annotations

from dataclasses import dataclass

from rate.errors import ConfigError
from rate.schema import SEED, Bound, opt
from tinyworld.vocab import SYLLABLES


def _cost(n: int) -> str:
    return f"{n:,} responses per family take the audit hours"


@dataclass
class AuditSettings:
    """How much of each family the audit measures, and how it decides."""

    n_token: int = opt(
        64,
        help="fresh reference responses per family for the token interventions (every site)",
        bound=Bound(2, high=4096, cost=_cost),
    )
    n_screen: int = opt(
        32,
        help="reference responses per family for the pair screen: every pair at one random "
        "site of each, next to each other and at a gap; the screen only chooses, it never "
        "reports a test",
        bound=Bound(1, high=4096, cost=_cost),
    )
    screen_top: int = opt(
        16,
        help="pairs per family that the screen sends on (those of the smallest screening "
        "p-values): only they are confirmed, and only they and the tokens count in Holm",
        bound=Bound(1, high=576, why="of the 576 ordered pairs"),
    )
    n_confirm: int = opt(
        256,
        help="fresh reference responses per family on which each screened pair is confirmed "
        "(one site each; none of the screen's)",
        bound=Bound(2, high=8192, cost=_cost),
    )
    n_rate_token: int = opt(
        32, help="fresh responses per family for RATE's token effects", bound=Bound(2, high=4096)
    )
    n_rate_screen: int = opt(
        16, help="responses per family for RATE's own pair screen", bound=Bound(1, high=4096)
    )
    n_rate_confirm: int = opt(
        128,
        help="fresh responses per family on which RATE confirms the pairs its screen sends on",
        bound=Bound(2, high=8192),
    )
    n_complex: int = opt(
        64,
        bound=Bound(0, high=4096, why="0: not measured", cost=_cost),
        help="draws per cell of each flagged pair's complex (the pair's syllables at every "
        "dose and arrangement, tinyworld.audit.complexes), for the wrapper; 0: not measured",
    )
    margin: float = opt(
        0.05,
        help="excesses up to this are not worth flagging (reward units)",
        bound=Bound(0, high=100),
    )
    alpha: float = opt(
        0.05,
        help="family-wise error rate of the flags (Holm over the tokens and the confirmed pairs)",
        bound=Bound(0, strict=True, high=0.5, why="an error rate"),
    )
    second_stage: bool = opt(
        True,
        help="test each flagged pair's unflagged syllables again as tokens, Holm at alpha among "
        "them alone; the wrapper corrects those it flags (any false flag: at most 2 alpha). "
        "false: one stage, at most alpha",
    )
    pair_statistic: str = opt(
        "adjacency",
        choices=("adjacency", "interaction"),
        help="adjacency: the pair's interaction next to each other minus at a gap of one, at "
        "the same site (a premium for adjacency, not a reward that is merely nonlinear in a "
        "count); interaction: next to each other only",
    )
    with_rate: bool = opt(
        True,
        help="measure RATE through the world's rewriter beside the interventions (the portable "
        "diagnostic leaves it out unless set)",
    )
    seed: int = opt(0, help="the responses' and the rewriter's randomness", bound=SEED)
    style_map: dict[str, str] = opt(
        help="the world's rewriter signature, for RATE (tinyworld.rewriter)",
        factory=lambda: {"ga": "ka", "je": "de", "fa": "ha"},
    )
    edit_rate: float = opt(
        0.02, help="the rewriter's random edits, for RATE", bound=Bound(0, high=1, why="a rate")
    )

    def validate(self, where: str) -> None:
        unknown = sorted({*self.style_map, *self.style_map.values()} - set(SYLLABLES))
        if unknown:
            raise ConfigError(
                f"{where}: key 'style_map' names {', '.join(map(repr, unknown))}, not syllables "
                f"of the world; use syllables such as {', '.join(SYLLABLES[:4])}"
            )

    def n_fresh(self) -> int:
        """Fresh reference responses per family: the most that any confirmation reads."""
        rate = (self.n_rate_token, self.n_rate_confirm) if self.with_rate else ()
        return max(self.n_token, self.n_confirm, *rate)


# The portable diagnostic: no RATE and half the responses (its token tests are against the
# bound of one position's worth, 1/8, so they need less precision than the gold-supported ones).
DIAGNOSTIC = {"with_rate": False, "n_token": 32, "n_screen": 16, "n_confirm": 128}
