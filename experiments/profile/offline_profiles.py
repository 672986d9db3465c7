"""The offline scorers' profiles side by side: MiniLM and VADER on the drug reviews.

Reads the two profiles `make profile-offline` writes (``PROFILES/minilm_sentiment`` and
``PROFILES/vader``, each ``rate profile --dataset drugreview_length --group-by rating``), copies
each one's table and figure into ``--to`` (``<scorer>.md``, ``<scorer>.png``) and writes
``comparison.md`` there: RATE's effect of each attribute for both scorers, their ATT and ATU,
and the ATT and ATU among the positive and the negative reviews (rating above 6 of 10, below 5).

    PYTHONPATH=src python experiments/profile/offline_profiles.py PROFILES --to DIR
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from rate.errors import DataFileError
from rate.io import atomic_write_text, read_json
from rate.profile.report import estimate_se
from rate.sweep.report import _p

SCORERS = {"minilm_sentiment": "MiniLM", "vader": "VADER"}
POLARITIES = ("positive", "negative")  # the drug reviews' rating classes (neutral: 5 or 6)


def _rows(profile: dict) -> dict[str, dict]:
    return {r["attribute"]: r for r in profile["attributes"]}


def comparison(profiles: dict[str, dict]) -> str:
    """The three tables of ``comparison.md``."""
    rows = {s: _rows(p) for s, p in profiles.items()}
    first = next(iter(profiles.values()))
    order = [r["attribute"] for r in first["attributes"]]
    names = [SCORERS[s] for s in profiles]
    sizes = {r["n_w1"] + r["n_w0"] for p in profiles.values() for r in p["attributes"]}
    n = " or ".join(str(x) for x in sorted(sizes))  # one size, unless a profile was cut short
    lines = [
        "# MiniLM and VADER: the drug reviews' profiles side by side",
        "",
        f"`rate profile --dataset drugreview_length --group-by rating`, {n} reviews; every "
        "attribute with offline rules. RATE's effect on the estimand the data identify (ATE "
        "where both W occur, else the ATU), ÷ each scorer's reward_std, ± SE; p adjusted by "
        "Benjamini-Hochberg over the attributes of each profile.",
        "",
        "| attribute | estimand | " + " | ".join(f"{x} RATE ± SE | {x} p BH" for x in names) + " |",
        "|---|---|" + "---|---|" * len(names),
    ]
    for a in order:
        cells = []
        for s in profiles:
            r = rows[s][a]
            cells += [estimate_se(r["rate_norm"], r["rate_norm_se"]), _p(r["p_bh"])]
        lines.append(f"| {a} | {rows[next(iter(profiles))][a]['estimand']} | {' | '.join(cells)} |")
    lines += [
        "",
        "## ATT and ATU",
        "",
        "RATE's ATT (the attribute removed where the original has it) and ATU (added where it "
        "has not), ± SE, in raw score units (MiniLM: a logit; VADER: compound, -1 to 1).",
        "",
        "| attribute | n W=1/W=0 | " + " | ".join(f"{x} ATT | {x} ATU" for x in names) + " |",
        "|---|---|" + "---|---|" * len(names),
    ]
    for a in order:
        r0 = rows[next(iter(profiles))][a]
        cells = []
        for s in profiles:
            r = rows[s][a]
            for e in ("ATT", "ATU"):
                cells.append(
                    estimate_se(r[f"{e}_rewritten_rewrite"], r[f"{e}_rewritten_rewrite_se"])
                )
        lines.append(f"| {a} | {r0['n_w1']}/{r0['n_w0']} | {' | '.join(cells)} |")
    lines += [
        "",
        "## Per polarity",
        "",
        "The same among the positive reviews (rating 7 to 10) and the negative ones (1 to 4), "
        "raw score units; the neutral ones (5, 6) are in each profile's own table.",
        "",
        "| attribute | rating | n W=1/W=0 | "
        + " | ".join(f"{x} ATT | {x} ATU" for x in names)
        + " |",
        "|---|---|---|" + "---|---|" * len(names),
    ]
    for a in order:
        for g in POLARITIES:
            parts = [(rows[s][a].get("groups") or {}).get(g) for s in profiles]
            if any(p is None for p in parts):
                raise DataFileError(f"{a}: no group {g!r}; run the profiles with --group-by rating")
            cells = [estimate_se(p[e], p[f"{e}_se"]) for p in parts for e in ("ATT", "ATU")]
            lines.append(
                f"| {a} | {g} | {parts[0]['n_w1']}/{parts[0]['n_w0']} | {' | '.join(cells)} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profiles", type=Path, help="the folder of <scorer>/profile.json")
    parser.add_argument("--to", type=Path, default=Path(__file__).parent / "offline")
    args = parser.parse_args()
    args.to.mkdir(parents=True, exist_ok=True)
    profiles = {}
    for scorer in SCORERS:
        folder = args.profiles / scorer
        profiles[scorer] = read_json(folder / "profile.json")
        for suffix in (".md", ".png"):
            shutil.copyfile(folder / f"profile{suffix}", args.to / f"{scorer}{suffix}")
    atomic_write_text(args.to / "comparison.md", comparison(profiles))
    print(f"wrote {args.to}/comparison.md, {', '.join(SCORERS)} .md and .png")


if __name__ == "__main__":
    main()
