"""The audit's record as tables and a figure: JSON (the machine-readable form), CSV, Markdown,
and a forest plot of the top candidates' excess with 95% intervals."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rate.filesets import write_set
from rate.io import json_safe
from tinyworld.audit.decide import pair_syllable_suspects
from tinyworld.audit.wrapper import by_position

COLUMNS = (
    "rank", "family", "feature", "kind", "score", "flagged", "excess", "excess_se", "p_holm",
    "q_bh", "rm_effect", "rm_se", "rate_effect", "rate_se", "quality_effect", "quality_se",
    "gap_interaction", "adjacency", "pair_offset", "confirmed", "echo_of",
    "reference_per_response",
)  # fmt: skip


def _fmt(v) -> str:
    if isinstance(v, float):
        return "n/a" if not math.isfinite(v) else f"{v:+.3f}" if abs(v) < 100 else f"{v:.3g}"
    return str(v)


def markdown(audit: dict, top: int = 25) -> str:
    rows = sorted(audit["candidates"], key=lambda r: r["rank"])
    flagged = [r for r in rows if r["flagged"]]
    confirmed = sum(1 for r in rows if r["kind"] == "pair" and r.get("confirmed"))
    lines = [
        f"# Reward-model audit ({audit['mode']})",
        "",
        f"{len(audit['candidates'])} candidates; {len(flagged)} flagged (Holm, family-wise "
        f"alpha {audit['settings']['alpha']}, margin {audit['settings']['margin']}, over the "
        f"tokens and the {confirmed} pairs the screen sent on); {audit['seconds']:.0f} s.",
        "",
        "## Per family",
        "",
        "| family | risk | flagged | echoes | excess per response (reference usage) | at most |",
        "|---|---|---|---|---|---|",
    ]
    for fam, f in audit["families"].items():
        lines.append(
            f"| {fam} | {f['risk']} | {', '.join(f['flagged']) or '-'} | "
            f"{', '.join(f.get('echoes', [])) or '-'} | "
            f"{_fmt(f.get('excess_per_response_at_reference_usage', math.nan))} | "
            f"{_fmt(f.get('excess_per_response_at_most', math.nan))} |"
        )
    head = ("rank", "family", "feature", "score", "flagged", "excess", "excess_se", "rm_effect",
            "rate_effect", "quality_effect", "p_holm")  # fmt: skip
    lines += ["", f"## The top {top}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows[:top]:
        lines.append("| " + " | ".join(_fmt(r[k]) for k in head) + " |")
    lines += second_stage_section(rows)
    lines += positions_section(flagged + [r for r in rows if r.get("pair_syllable_flagged")])
    lines += complexes_section(flagged)
    return "\n".join(lines) + "\n"


def second_stage_section(rows: list[dict]) -> list[str]:
    """The flagged pairs' syllables tested again as tokens (tinyworld.audit.scan.second_stage)."""
    tested = pair_syllable_suspects(rows)
    if not tested or "pair_syllable_flagged" not in tested[0]:
        return []
    lines = [
        "",
        "## Second stage: the flagged pairs' syllables as tokens (Holm among these alone; "
        "the wrapper corrects those flagged here as tokens)",
        "",
        "| family | syllable | excess | excess_se | p | flagged |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(tested, key=lambda r: r["p"]):
        lines.append(
            f"| {r['family']} | `{r['feature']}` | {_fmt(r['excess'])} | {r['excess_se']:.3f} "
            f"| {r['p']:.4f} | {r['pair_syllable_flagged']} |"
        )
    return lines


def positions_section(flagged: list[dict]) -> list[str]:
    """The flagged tokens' excess at each position (what the wrapper subtracts there)."""
    tokens = [r for r in flagged if r["kind"] == "token" and r.get("rm_effect_by_position")]
    if not tokens:
        return []
    lines = [
        "",
        "## Flagged tokens by position (the wrapper subtracts the excess where each one stands)",
        "",
        "| family | token | excess | at positions 0-7 |",
        "|---|---|---|---|",
    ]
    for r in tokens:
        at = " ".join(f"{v:+.2f}" for v in by_position(r))
        lines.append(f"| {r['family']} | `{r['feature']}` | {_fmt(r['excess'])} | {at} |")
    return lines


def complexes_section(flagged: list[dict], largest: int = 4) -> list[str]:
    """The flagged pairs' complexes: what the RM pays for the two syllables together at the
    doses where it pays most, beside the one-site adjacency interaction."""
    pairs = [r for r in flagged if r["kind"] == "pair" and r.get("complex")]
    if not pairs:
        return []
    lines = [
        "",
        "## Flagged pairs at every dose (the wrapper subtracts each response's cell)",
        "",
        "| family | pair | one adjacency, one site | the cell of one adjacency alone | "
        f"the {largest} largest cells (n_a n_b adjacent: excess) |",
        "|---|---|---|---|---|",
    ]
    for r in pairs:
        cells = r["complex"]["cells"]
        one = "1 1 1" if r["feature"].split()[0] != r["feature"].split()[1] else "2 2 1"
        top = sorted(cells.items(), key=lambda kv: -kv[1][0])[:largest]
        shown = ", ".join(f"`{k}`: {v[0]:+.2f}" for k, v in top)
        lines.append(
            f"| {r['family']} | `{r['feature']}` | {_fmt(r['rm_effect'])} | "
            f"{cells[one][0]:+.3f} ± {cells[one][1]:.3f} | {shown} |"
        )
    return lines


def csv_text(audit: dict) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for r in sorted(audit["candidates"], key=lambda r: r["rank"]):
        writer.writerow(r)
    return buf.getvalue()


def forest_figure(audit: dict, top: int = 20) -> Figure:
    rows = sorted(audit["candidates"], key=lambda r: r["rank"])[:top]
    fig = Figure(figsize=(7.5, 0.32 * len(rows) + 1.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for y, r in enumerate(rows):
        colour = "tab:red" if r["flagged"] else "tab:gray"
        half = 1.96 * r["excess_se"] if math.isfinite(r["excess_se"]) else 0.0
        ax.errorbar(r["excess"], -y, xerr=half, fmt="o", color=colour, ms=4, capsize=2)
    ax.axvline(0, color="0.8", lw=1)
    margin = audit["settings"]["margin"]
    for x in (-margin, margin):
        ax.axvline(x, color="0.8", lw=1, ls=":")
    ax.set_yticks([-y for y in range(len(rows))], [f"{r['family']} · {r['feature']}" for r in rows])
    ax.set_xlabel("excess: what the RM pays beyond what experts support (95% interval)")
    ax.set_title(f"The top {len(rows)} candidates (red: flagged)", fontsize=10)
    return fig


def write_reports(audit: dict, out: Path) -> list[Path]:
    """``out`` (.json) and, beside it, .csv, .md and .png, as one set
    (:func:`rate.filesets.write_set`: a kill leaves the old set or the new one)."""
    out = Path(out)
    buf = io.BytesIO()
    forest_figure(audit).savefig(buf, format="png", dpi=150)
    members = {
        out.with_suffix(".csv"): csv_text(audit).encode("utf-8"),
        out.with_suffix(".md"): markdown(audit).encode("utf-8"),
        out.with_suffix(".png"): buf.getvalue(),
    }
    return write_set(out, json_safe(audit), members)
