"""The audit's figures: one world's full audit and its portable diagnostic, timed on a built
world (issue: rate audit; goals: under 60 s and under 20 s on 2 cores)."""

from __future__ import annotations

from pathlib import Path

from rate.audit.run import load_inputs, run_audit
from rate.audit.scan import DIAGNOSTIC, AuditSettings
from rate.bench.timing import timed
from rate.tinyrlhf.vocab import FAMILIES, N_SYLLABLES, RESPONSE_LEN


def bench_audit(world: Path) -> dict:
    """Time ``rate audit`` (gold labels, RATE beside the interventions) and the diagnostic (no
    gold, interventions only) on ``world``, with the number of reward-model calls of each."""

    full = AuditSettings()
    diagnostic = AuditSettings(**DIAGNOSTIC)
    results = {"audit_rm_calls": rm_calls(full), "diagnostic_rm_calls": rm_calls(diagnostic)}
    secs, _ = timed(lambda: run_audit(load_inputs(world), full))
    results["audit_s"] = secs
    secs, _ = timed(lambda: run_audit(load_inputs(world, use_gold=False), diagnostic))
    results["diagnostic_s"] = secs
    return results


def rm_calls(st: AuditSettings) -> int:
    """Reward-model evaluations of one audit with settings ``st``, over the six families."""

    s, L = N_SYLLABLES, RESPONSE_LEN
    per = st.n_token * (1 + L * s) + 2 * st.n_pair * s * s
    if st.with_rate:
        per += 2 * st.n_rate_token * L * s + 2 * st.n_rate_pair * s * s
    return per * len(FAMILIES)


def render_audit(r: dict, date: str | None) -> list[str]:
    return [
        "## Audit (issue: rate audit and rate sweep)",
        "",
        f"Measured {date} on the world given with `--world` (default: the one the world section "
        "built), default settings (`rate audit --settings`).",
        "",
        "| what | measured | reward-model calls | goal |",
        "|---|---|---|---|",
        f"| `rate audit --world W` (3,600 candidates, interventions and RATE) | "
        f"{r['audit_s']:.0f} s | {r['audit_rm_calls']:,} | < 60 s |",
        f"| `rate audit --world W --no-gold` (the portable diagnostic) | "
        f"{r['diagnostic_s']:.0f} s | {r['diagnostic_rm_calls']:,} | < 20 s |",
        "",
    ]
