"""A profile's rows: per attribute its W rule, counts by W, rewrite success per pass, the
naive, single-rewrite and RATE estimates with SEs and intervals, the normalised effects, and
the test of RATE's effect with its Holm and Benjamini-Hochberg adjustments over the
attributes; written as ``profile.json`` / ``.md`` / ``.csv`` with the figure, one set.

The test is of the estimand the data identify: the ATE where both W values are present, else
the ATU (every original lacks the attribute: it is added) or the ATT (every original has it:
it is removed); the row says which, and an ATE the data do not identify is null, never a
number (:func:`rate.effects.inputs.identified_estimates`). p is two-sided, normal, from the
raw estimate and its SE (:func:`rate.sweep.report.p_value`, the sweep's test).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rate.attributes import Attribute
from rate.effects.estimators import ESTIMANDS, ESTIMATORS, estimator
from rate.filesets import write_set
from rate.fs import ensure_dir
from rate.io import csv_text
from rate.records import REWRITE, REWRITTEN
from rate.results.values import interval, level, num, rate_key, success_counts, value
from rate.stats import benjamini_hochberg, holm
from rate.sweep.report import _p, p_value

log = logging.getLogger(__name__)

FDR = 0.05  # the false discovery rate the figure marks survivors at (BH)
# The estimators a profile reports (the placebo-corrected ones need a third, paid pass).
REPORTED = [e for e in ESTIMATORS if e.method in ("naive", "single_rewrite", "rate")]
PASS_COLUMNS = {REWRITE: "rewrite_success", REWRITTEN: "rewritten_rewrite_success"}
HEAD = ("attribute", "w_rule", "n_w1", "n_w0", *PASS_COLUMNS.values(), "estimand")
TAIL = ("ate_identified", "naive_norm", "rate_norm", "rate_norm_se", "rate_norm_low")
TAIL += ("rate_norm_high", "reward_std", "p", "p_holm", "p_bh", "bh_survives", "status")
COLUMNS = (
    *HEAD,
    *(f"{e.name}{s}" for e in REPORTED for s in ("", "_se", "_low", "_high")),
    *TAIL,
    "effects_file",
)


def w_rule(attribute: Attribute) -> str:
    """The attribute's W rule in words, with the rule as its file writes it."""
    rule = dict(attribute.parts().get("w_classifier") or {})
    kind = rule.pop("rule", "?")
    options = ", ".join(f"{k}={v!r}" for k, v in rule.items())
    return f"{attribute.description} ({kind}: {options})" if options else attribute.description


def attribute_row(attribute: Attribute, effects: dict | None, status: str, path: str) -> dict:
    """One attribute's row before the adjustment (``effects`` None: its steps did not
    finish, and ``status`` says why)."""
    row: dict[str, Any] = {c: None for c in COLUMNS}
    row.update(attribute=attribute.name, w_rule=w_rule(attribute), status=status)
    if effects is None:
        return row
    key, estimand = rate_key(effects)
    row.update(n_w1=effects.get("Y1_count"), n_w0=effects.get("Y0_count"), estimand=estimand)
    for rewrite_pass, column in PASS_COLUMNS.items():
        passed, n = success_counts(effects, rewrite_pass)
        row[column] = None if not n or passed is None else passed / n
    for e in REPORTED:
        pair = interval(effects, e.name, "normal", False)
        row[e.name] = value(effects, e.name, False)
        row[f"{e.name}_se"] = value(effects, f"{e.name}_stderr", False)
        row[f"{e.name}_low"], row[f"{e.name}_high"] = pair or (None, None)
    pair = interval(effects, key, "normal", True)
    row.update(
        ate_identified=row["ATE_rewritten_rewrite"] is not None,
        naive_norm=value(effects, "naive_effect", True),
        rate_norm=value(effects, key, True),
        rate_norm_se=value(effects, f"{key}_stderr", True),
        reward_std=num(effects.get("reward_std")),
        p=p_value(row[key], row[f"{key}_se"]),
        effects_file=path,
    )
    row["rate_norm_low"], row["rate_norm_high"] = pair or (None, None)
    if effects.get("groups"):  # --group-by: per value of the field, raw score units
        row["groups"] = {g: group_row(part) for g, part in effects["groups"].items()}
    return row


def group_row(part: dict) -> dict:
    """One group's counts by W and RATE's ATE, ATT and ATU with SEs (raw score units; the
    stage estimates a group without bootstrap, from the normal SEs)."""
    out: dict[str, Any] = {"n_w1": part.get("Y1_count"), "n_w0": part.get("Y0_count")}
    for estimand in ESTIMANDS:
        name = estimator("rate", estimand).name
        out[estimand] = value(part, name, False)
        out[f"{estimand}_se"] = value(part, f"{name}_stderr", False)
    return out


def adjusted(rows: list[dict]) -> list[dict]:
    """``rows`` with Holm and BH over the attributes tested, sorted by RATE's normalised
    effect (largest first; rows without one last)."""
    tested = [r for r in rows if r["p"] is not None]
    ps = [r["p"] for r in tested]
    for r, h, b in zip(tested, holm(ps).tolist(), benjamini_hochberg(ps).tolist(), strict=True):
        r.update(p_holm=h, p_bh=b, bh_survives=b <= FDR)
    return sorted(rows, key=lambda r: (r["rate_norm"] is None, -(r["rate_norm"] or 0.0)))


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def estimate_se(x: float | None, se: float | None) -> str:
    """``+x ± se`` (n/a without an estimate; the estimate alone without an SE)."""
    return "n/a" if x is None else f"{x:+.3f} ± {se:.3f}" if se is not None else f"{x:+.3f}"


def group_table(rows: list[dict], group_by: str) -> list[str]:
    """The per-group lines of ``--group-by``: RATE's ATT and ATU in each group."""
    lines = [
        "",
        f"## Per {group_by}",
        "",
        f"RATE's ATT (the attribute removed where the original has it) and ATU (added where "
        f"it has not), ± SE, in raw score units, among the examples of each value of "
        f"{group_by!r}; n/a where no example of the group has that W.",
        "",
        f"| attribute | {group_by} | n W=1/W=0 | RATE ATT ± SE | RATE ATU ± SE |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        for g, part in (r.get("groups") or {}).items():
            lines.append(
                f"| {r['attribute']} | {g} | {part['n_w1']}/{part['n_w0']} | "
                f"{estimate_se(part['ATT'], part['ATT_se'])} | {estimate_se(part['ATU'], part['ATU_se'])} |"
            )
    return lines


def markdown(
    title: str, rows: list[dict], left_out: dict[str, str], lvl: float, group_by: str | None = None
) -> str:
    """The table, eight columns wide, and what it leaves out; with ``group_by``, RATE's ATT
    and ATU per group after it."""
    tested = sum(r["p"] is not None for r in rows)
    lines = [
        f"# {title}",
        "",
        f"Effects ÷ reward_std (the pooled within-group SD of the original scores); {lvl:.0%} "
        "normal intervals. p: RATE's effect against 0, two-sided; Holm (family-wise) and "
        f"Benjamini-Hochberg (false discovery rate) adjust over the {tested} attributes tested. "
        "An attribute absent from every original identifies only the ATU (it is added), one "
        "present in every original only the ATT; their ATE and naive effect are n/a.",
        "",
        "| attribute | n W=1/W=0 | rewrites passed (1st/2nd) | estimand | naive | "
        f"RATE [{lvl:.0%} interval] | p | p Holm / BH |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["estimand"] is None:
            lines.append(f"| {r['attribute']} | n/a | n/a | n/a | n/a | {r['status']} | | |")
            continue
        mark = " *" if r["bh_survives"] else ""
        lines.append(
            f"| {r['attribute']}{mark} | {r['n_w1']}/{r['n_w0']} | "
            f"{_share(r['rewrite_success'])}/{_share(r['rewritten_rewrite_success'])} | "
            f"{r['estimand']} | {_f(r['naive_norm'])} | {_f(r['rate_norm'])} "
            f"[{_f(r['rate_norm_low'])}, {_f(r['rate_norm_high'])}] | {_p(r['p'])} | "
            f"{_p(r['p_holm'])} / {_p(r['p_bh'])} |"
        )
    lines += ["", f"\\* survives Benjamini-Hochberg at {FDR:g}."]
    if left_out:
        lines += ["", "Left out: " + "; ".join(f"{k} ({v})" for k, v in left_out.items()) + "."]
    if group_by and any(r.get("groups") for r in rows):
        lines += group_table(rows, group_by)
    return "\n".join(lines) + "\n"


def write_profile(
    out: Path, record: dict, rows: list[dict], left_out: dict[str, str], effects: list[dict]
) -> list[Path]:
    """``out/profile.json`` with ``.md``, ``.csv`` and ``.png`` beside it, published as one
    set (:func:`rate.filesets.write_set`); -> the files."""
    from rate.plots.figures import figure_bytes
    from rate.profile.figure import forest_figure  # matplotlib: only when writing

    rows = adjusted(rows)
    lvl = level(effects[0]) if effects else 0.95
    title = f"Bias profile of {record['scorer']}"
    fig = forest_figure(rows, title, lvl, FDR)
    members = {
        out / "profile.md": markdown(title, rows, left_out, lvl, record.get("group_by")).encode(),
        out / "profile.csv": csv_text(rows, COLUMNS).encode(),
        out / "profile.png": figure_bytes(fig, "png"),
    }
    fig.clear()
    whole = {
        **record,
        "test": "RATE's effect on the estimand identified against 0, two-sided normal",
        "adjustment_family": "the attributes with an estimate",
        "fdr": FDR,
        "level": lvl,
        "units": {"*_norm": "÷ reward_std", "others": "raw score units"},
        "attributes": rows,
        "left_out": left_out,
    }
    ensure_dir(out)
    return write_set(out / "profile.json", whole, members)
