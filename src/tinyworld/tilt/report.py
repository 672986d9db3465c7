"""The tilt analysis as files: JSON, a markdown table and a Q-Q figure per family."""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rate.filesets import write_set
from rate.io import json_safe


def _alpha(h: dict | None) -> str:
    return "n/a" if not h else f"{h['alpha']:.2f}"


def markdown(analysis: dict) -> str:
    """One row per family, reward and beta: the forecast, its interval and ESS, and the tails."""
    lines = [
        f"# Tilt forecast: {analysis['world']}",
        "",
        f"Rewards: {', '.join(analysis['rewards'])}"
        + (f" (wrapper {analysis['wrapper']})" if analysis["wrapper"] else "")
        + f". Abstain when ESS < {analysis['ess_min']:g}; heavy weights when Hill's xi of "
        f"exp(r/beta) > {analysis['xi_max']:g}; abstain too when more than "
        f"{analysis['beyond_max']:g} of pi_beta's mass (on reference samples) lies at rewards "
        f"above the gold rows' largest. Tails on "
        f"{analysis['tail_samples_per_family']} reference samples per family.",
        "",
        "| family | reward | beta | gold mean | forecast | change | 95% interval | ESS | "
        "mass beyond gold | "
        "alpha of weights (ref.; gold) | alpha of reward (ref.) | alpha of error (gold) | "
        "verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fam, row in analysis["families"].items():
        for kind, by_beta in row["forecast"].items():
            tail = row["tail"][kind]
            err = row["gold_error_tail"][kind]
            for b, fc in by_beta.items():
                verdict = "abstain" if fc["abstain"] else "forecast"
                if fc["heavy_weights"]:
                    verdict += ", heavy weights"
                lo, hi = fc["interval"]
                lines.append(
                    f"| {fam} | {kind} | {b} | {fc['gold_mean']:.3f} | {fc['forecast']:.3f} "
                    f"| {fc['change']:+.3f} | [{lo:+.3f}, {hi:+.3f}] | {fc['ess']:.1f} "
                    f"| {fc['mass_beyond_gold']:.2f} "
                    f"| {_alpha(tail['weights'][b])}; {_alpha(fc['weight_tail'])} "
                    f"| {_alpha(tail['hill_reward'])} | {_alpha(err if 'alpha' in err else None)} "
                    f"| {verdict} |"
                )
    lines += model_table(analysis)
    lines += [
        "",
        "alpha of weights: Hill's tail index of exp(r/beta) (alpha <= 2: the weights have no "
        "finite variance near the top of the sample, and the reweighted mean converges slowly "
        "if at all). "
        "Q-Q figures: the top excesses of the reward (reference samples) and of the error "
        "reward - label (gold) against exponential quantiles; a straight line is an exponential "
        "tail, an upward bend a heavier one.",
    ]
    return "\n".join(lines) + "\n"


def model_table(analysis: dict) -> list[str]:
    """The model forecast's rows (none without a wrapper or guided samples)."""
    rows = [(f, r["model"]) for f, r in analysis["families"].items() if "model" in r]
    if not rows:
        return []
    lines = [
        "",
        f"Model forecast: the gold-calibrated corrected reward, kept in the gold labels' range, "
        f"averaged over {analysis['model_samples_per_rung']} guided samples of pi_beta per rung "
        f"(token-tilted proposals, lambda in {analysis['ladder']}) against reference samples. "
        "Its interval covers the line's and the samples' error, not the model's: where "
        "pi_beta's corrected rewards lie outside the gold's, the line extrapolates, and where "
        "fewer than 15 gold rows stand where pi_beta goes (n exp(-KL), certification's floor) "
        "nothing checks the model there (unchecked).",
        "",
        "| family | reward | beta | line a + b s | forecast | change | 95% interval | ESS "
        "(samples) | pi_beta's mass outside the gold's rewards | KL to the reference | gold "
        "rows there (n exp(-KL)) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fam, model in rows:
        for kind, by_beta in model.items():
            for b, fc in by_beta.items():
                a, slope = fc["line"]
                lo, hi = fc["interval"]
                lines.append(
                    f"| {fam} | {kind} | {b} | {a:.3f} + {slope:.3f} s | {fc['forecast']:.3f} "
                    f"| {fc['change']:+.3f} | [{lo:+.3f}, {hi:+.3f}] | {fc['ess']:.0f} of "
                    f"{fc['n']} | {fc['share_outside_gold']:.2f} | {_kl(fc)} |"
                )
    return lines


def _kl(fc: dict) -> str:
    if "kl" not in fc:
        return "n/a | n/a"
    flag = " (unchecked)" if fc["unchecked"] else ""
    return f"{fc['kl']:.2f} | {fc['gold_support']:.1f}{flag}"


def qq_figure(fam: str, row: dict) -> Figure:
    """Two panels: the reward's tail on reference samples, and the gold error's tail."""
    fig = Figure(figsize=(9, 4))
    FigureCanvasAgg(fig)
    panels = (
        ("reward, reference samples", {k: t["qq_exponential"] for k, t in row["tail"].items()}),
        ("reward - label, gold", {k: t["qq"] for k, t in row["gold_error_tail"].items()}),
    )
    for ax, (title, data) in zip(fig.subplots(1, 2), panels, strict=True):
        top = 0.0
        for kind, qq in data.items():
            ax.plot(qq["theoretical"], qq["empirical"], "o", ms=3, label=kind, alpha=0.7)
            top = max(top, max(qq["theoretical"], default=0.0))
        ax.set_title(f"{fam}: {title}", fontsize=10)
        ax.set_xlabel("standard exponential quantile")
        ax.set_ylabel("excess over the (k+1)-th largest")
        ax.set_xlim(0, top * 1.05 if top else 1)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def write_report(analysis: dict, out: Path) -> list[Path]:
    """``out``/tilt.json, tilt.md and qq_<family>.png, as one set
    (:func:`rate.filesets.write_set`)."""
    out = Path(out)
    members = {out / "tilt.md": markdown(analysis).encode("utf-8")}
    for fam, row in analysis["families"].items():
        buf = io.BytesIO()
        qq_figure(fam, row).savefig(buf, format="png", dpi=120)
        members[out / f"qq_{fam}.png"] = buf.getvalue()
    return write_set(out / "tilt.json", json_safe(analysis), members)
