"""The audit's figures: one world's full audit and its portable diagnostic, timed on a built
world (issue: rate audit; goals: under 60 s and under 20 s on 2 cores)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.timing import timed
from tinyworld.audit.complexes import rm_calls as complex_calls
from tinyworld.audit.run import load_inputs, run_audit
from tinyworld.audit.settings import DIAGNOSTIC, AuditSettings
from tinyworld.vocab import FAMILIES, N_SYLLABLES, RESPONSE_LEN


def bench_audit(world: Path) -> dict:
    """Time ``rate audit`` (gold labels, RATE beside the interventions) and the diagnostic (no
    gold, interventions only) on ``world``, with the number of reward-model calls of each."""

    full = AuditSettings()
    diagnostic = AuditSettings(**DIAGNOSTIC)
    secs, audit = timed(lambda: run_audit(load_inputs(world), full))
    results = {"audit_s": secs, "audit_rm_calls": rm_calls(full, flagged_pairs(audit))}
    secs, audit = timed(lambda: run_audit(load_inputs(world, use_gold=False), diagnostic))
    results["diagnostic_s"] = secs
    results["diagnostic_rm_calls"] = rm_calls(diagnostic, flagged_pairs(audit))
    return results


def flagged_pairs(audit: dict) -> list[str]:
    """The pairs an audit flagged (each gets its complex measured)."""
    return [r["feature"] for r in audit["candidates"] if r["kind"] == "pair" and r["flagged"]]


def rm_calls(st: AuditSettings, pairs: list[str] = ()) -> int:
    """Reward-model evaluations of one audit with settings ``st``, over the six families, when
    it flags ``pairs`` (names like ``"ka ra"``)."""

    s, L, k = N_SYLLABLES, RESPONSE_LEN, st.screen_top
    # The screen (single edits, then two edits per pair), the tokens, the confirmation.
    per = st.n_screen * (1 + L * s + 2 * s * s) + st.n_token * (1 + L * s)
    per += st.n_confirm * (1 + 5 * k)
    if st.with_rate:  # RATE: two calls per round trip
        ns = min(st.n_rate_screen, st.n_screen)
        per += 2 * (st.n_rate_token * L * s + ns * (L * s + s * s) + 3 * st.n_rate_confirm * k)
    complexes = sum(complex_calls(p.split()[0] == p.split()[1], st.n_complex) for p in pairs)
    return per * len(FAMILIES) + (complexes if st.n_complex > 0 else 0)


def render_audit(r: dict, date: str | None) -> list[str]:
    return [
        "## Audit (issue: rate audit and rate sweep)",
        "",
        f"Measured {date} on the world given with `--world` (default: the one the world section "
        "built), default settings (`rate world audit --settings`).",
        "",
        "| what | measured | reward-model calls | goal |",
        "|---|---|---|---|",
        f"| `rate world audit --world W` (3,600 candidates, interventions and RATE) | "
        f"{r['audit_s']:.0f} s | {r['audit_rm_calls']:,} | < 60 s |",
        f"| `rate world audit --world W --no-gold` (the portable diagnostic) | "
        f"{r['diagnostic_s']:.0f} s | {r['diagnostic_rm_calls']:,} | < 20 s |",
        "",
    ]
