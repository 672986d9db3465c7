"""A sweep's report: the headline figure and the ranked table of cells with adjusted p-values.

Each cell's test is RATE's ATE against 0, two-sided, by the normal approximation that its
normal interval uses (z = estimate / SE; the paired SE of the effect file). Where the data
identify only the ATT or the ATU (a W rule that is always true), that estimand is tested and
named. The family of the multiple-testing corrections is every cell of the grid that has an
estimate: Holm's step-down adjustment controls the family-wise error rate (any false finding),
Benjamini-Hochberg's the false discovery rate (the share of false findings among those made),
which is the looser and more useful one when many cells are scanned. Both are reported; a
reader picks one before looking.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from statistics import NormalDist

from rate.effects.estimators import FLAG_SE, beyond_se, estimator
from rate.io import atomic_directory, csv_text, json_text, read_json
from rate.plots.figures import effects_figure, figure_bytes
from rate.results.values import ALL_SD, interval, num, rate_key, truth, units, value
from rate.stats import benjamini_hochberg, holm

log = logging.getLogger(__name__)

COLUMNS = (
    "rank",
    "dataset",
    "concept",
    "scorer",
    "estimand",
    "n_w1",
    "n_w0",
    "naive",
    "rate",
    "rate_se",
    "rate_all",
    "low",
    "high",
    "truth",
    "rate_raw",
    "rate_se_raw",
    "p",
    "p_holm",
    "p_bh",
    "effects_file",
)


def p_value(estimate: float | None, se: float | None) -> float | None:
    """Two-sided normal p-value of ``estimate`` against 0; an SE of 0 gives 1 for an estimate
    of exactly 0 (every pair scored alike) and 0 otherwise; None when either is missing."""
    if estimate is None or se is None or se < 0:
        return None
    if se == 0:
        return 1.0 if estimate == 0 else 0.0
    return 2 * (1 - NormalDist().cdf(abs(estimate) / se))


def cell_row(cell, effects: dict, path: Path) -> dict:
    """One cell's row, before ranking: effects divided by reward_std (the pooled within-group
    SD of the original scores, as the reference normalises), RATE also by the SD of all
    original scores (``rate_all``), raw beside."""
    key, estimand = rate_key(effects)
    naive = estimator("naive", "ATE").name
    normal = interval(effects, key, "normal", True)
    est, se = value(effects, key, False), value(effects, f"{key}_stderr", False)
    return {
        "dataset": cell.dataset,
        "concept": cell.concept,
        "scorer": cell.scorer,
        "estimand": estimand,
        "n_w1": effects.get("Y1_count"),
        "n_w0": effects.get("Y0_count"),
        "naive": value(effects, naive, True),
        "rate": value(effects, key, True),
        "rate_se": value(effects, f"{key}_stderr", True),
        "rate_all": value(effects, key, "all"),
        "low": normal[0] if normal else None,
        "high": normal[1] if normal else None,
        "truth": truth(effects, estimand, True),  # known in the tiny world only
        "rate_raw": est,
        "rate_se_raw": se,
        "p": p_value(est, se),
        "effects_file": str(path),
    }


def ranked(rows: list[dict]) -> list[dict]:
    """Rows with Holm and BH p-values over the rows that have a p-value, ranked by p (then by
    the size of the effect); rows without one come last, unranked."""
    tested = [r for r in rows if r["p"] is not None]
    ps = [r["p"] for r in tested]
    for r, h, b in zip(tested, holm(ps).tolist(), benjamini_hochberg(ps).tolist(), strict=True):
        r["p_holm"], r["p_bh"] = h, b
    tested.sort(key=lambda r: (r["p"], -abs(num(r["rate"]) or 0.0)))
    rest = [{**r, "p_holm": None, "p_bh": None} for r in rows if r["p"] is None]
    for i, r in enumerate(tested, 1):
        r["rank"] = i
    for r in rest:
        r["rank"] = None
    return [{c: r.get(c) for c in COLUMNS} for r in tested + rest]


def _f(x, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:+.{digits}f}"


def _se(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _p(x) -> str:
    if x is None:
        return "n/a"
    if x == 0:
        return "<1e-16"  # below what a double's normal tail resolves
    return f"{x:.2e}" if x < 1e-3 else f"{x:.4f}"


def _off(row: dict) -> str:
    """Whether RATE's estimate is more than FLAG_SE of its SEs from the truth (blank where
    the truth or the SE is unknown)."""
    est, se, t = num(row["rate"]), num(row["rate_se"]), num(row["truth"])
    off = beyond_se((est - t) / se) if None not in (est, se, t) and se > 0 else None
    return "" if off is None else ("yes" if off else "no")


def markdown(name: str, rows: list[dict], missing: list[str], level: float) -> str:
    known = any(r["truth"] is not None for r in rows)
    lines = [
        f"# Sweep {name}: RATE effects, ranked",
        "",
        f"Effects {units(True)} (as the reference normalises); RATE {ALL_SD} beside. "
        f"{level:.0%} normal intervals. p: RATE's effect "
        "against 0, two-sided; Holm (family-wise) and Benjamini-Hochberg (false discovery "
        f"rate) adjust over the {sum(r['p'] is not None for r in rows)} cells tested.",
        "",
        "| rank | dataset | concept | scorer | n W=1/W=0 | naive | RATE (SE) | interval | "
        + "RATE ÷ SD of all originals | "
        + (f"true effect | off by > {FLAG_SE:g} SE | " if known else "")
        + "p | p Holm | p BH |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if known else ""),
    ]
    for r in rows:
        estimand = "" if r["estimand"] == "ATE" else f" {r['estimand']}"
        lines.append(
            f"| {r['rank'] or '-'} | {r['dataset']} | {r['concept']} | {r['scorer']} | "
            f"{r['n_w1']}/{r['n_w0']} | {_f(r['naive'])} | {_f(r['rate'])}{estimand} "
            f"({_se(r['rate_se'])}) | "
            f"[{_f(r['low'])}, {_f(r['high'])}] | {_f(r['rate_all'])} | "
            + (f"{_f(r['truth'])} | {_off(r)} | " if known else "")
            + f"{_p(r['p'])} | {_p(r['p_holm'])} | "
            f"{_p(r['p_bh'])} |"
        )
    if missing:
        lines += ["", f"Not in this report (their steps did not finish): {', '.join(missing)}."]
    return "\n".join(lines) + "\n"


def write_report(
    sweep, cells: list[tuple], missing: list[str], folder: Path, formats: Sequence[str]
) -> list[Path]:
    """The report of ``cells`` [(cell, effect file)] into ``folder``, built aside and renamed
    into place; -> its files."""
    effects = [read_json(path) for _, path in cells]
    rows = ranked([cell_row(c, e, p) for (c, p), e in zip(cells, effects, strict=True)])
    level = num((effects[0].get("intervals") or {}).get("level")) if effects else None
    level = level or 0.95
    names = []
    with atomic_directory(folder, overwrite=True) as tmp:
        (tmp / "ranked.md").write_text(markdown(sweep.name, rows, missing, level))
        (tmp / "ranked.csv").write_text(csv_text(rows, COLUMNS))
        record = {
            "sweep": sweep.name,
            "grid": str(sweep.path),
            "smoke": sweep.grid.smoke,
            "test": "RATE's effect against 0, two-sided normal (estimate / SE)",
            "adjustment_family": "every cell with an estimate",
            "level": level,
            "cells": rows,
            "missing": missing,
        }
        (tmp / "ranked.json").write_text(json_text(record, indent=2) + "\n")
        names += ["ranked.md", "ranked.csv", "ranked.json"]
        if effects:
            fig = effects_figure(
                effects,
                normalized=True,
                title=f"Sweep {sweep.name}: naive against RATE, ÷ reward_std (within-group SD)",
            )
            for fmt in formats:
                (tmp / f"headline.{fmt}").write_bytes(figure_bytes(fig, fmt))
                names.append(f"headline.{fmt}")
            fig.clear()
    log.info("sweep %s: report in %s", sweep.name, folder)
    return [folder / n for n in names]
