"""A profile's scoring cost: texts scored grow with the distinct texts, not with the attributes.

One `rate profile` of the MiniLM sentiment scorer on N drug reviews over every attribute that
the offline rules rewrite, sentiment's weak rules included (one process, one project, so one
score cache: the originals are scored once for the whole profile), against the same attributes as separate pipeline runs: one
`rate profile --attributes A` per attribute, each in a fresh PROJECT_DIR (its own process and
model load, its own empty cache, as a user running the attributes one by one has). Each arm is
the command a user runs, in a fresh interpreter, timed end to end (rewrites, scoring, effects,
the profile's files). The texts each arm's scorer computed are read from its scored files'
records (``texts_scored`` counts every text, ``texts_from_cache`` the ones the cache gave).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.timing import timed
from rate.attributes import CATALOGUE
from rate.io import read_json
from rate.profile import RULES
from rate.profile.plan import choose_attributes

log = logging.getLogger(__name__)

SCORER = "minilm_sentiment"
DATASET = "drugreview_length"
# 500 reviews: both arms score about 20,000 texts with MiniLM, minutes on a 2-core CPU.
N_REVIEWS = 500
ROUNDS = ("before", "after")  # the profile's two runs: before and after the separate runs


def _profile(project: Path, out: Path, attributes: str, n: int) -> float:
    """Wall seconds of one `rate profile` in a fresh interpreter, run here (not on SLURM)."""
    env = {**os.environ, "PROJECT_DIR": str(project), "RATE_PROGRESS": "0", "PARTITION": ""}
    command = [sys.executable, "-m", "rate.cli", "profile", "--scorer", SCORER, "--dataset",
               DATASET, "--n-examples", str(n), "--attributes", attributes, "--here",
               "--out", str(out)]  # fmt: skip
    seconds, _ = timed(lambda: subprocess.run(command, env=env, check=True, capture_output=True))
    return seconds


def scored_counts(project: Path, attributes: list[str]) -> dict[str, dict]:
    """{attribute: {texts, from_cache, computed, scoring_s}} from the scored files' records of
    ``project`` (a profile's dataset is named ``<attribute>_<out>_<digest>``)."""
    out: dict[str, dict] = {}
    for meta in sorted((project / "data" / "scored").glob("*_scored_*.jsonl.meta.json")):
        record = read_json(meta)
        (attribute,) = [a for a in attributes if meta.name.startswith(f"{a}_")]
        texts, cached = record["texts_scored"], record["texts_from_cache"]
        out[attribute] = {
            "texts": texts,
            "from_cache": cached,
            "computed": texts - cached,
            "scoring_s": record["seconds"],
        }
    missing = sorted(set(attributes) - set(out))
    assert not missing, f"no scored file of {missing} under {project}"
    return out


def bench_profile(tmp: Path, n: int = N_REVIEWS) -> dict:
    """The two arms in one run, interleaved: the profile, the separate runs, the profile
    again (each profile in a fresh project), so a change of this shared machine's load
    between the arms shows as two profile times apart; and the texts each arm computed."""
    # Every attribute the offline rules rewrite: those with rules of their own, and those with
    # weak rules (sentiment's antonyms), which a profile uses when they are named.
    named = [a.name for a in CATALOGUE.values() if a.offline_rewriter or a.weak_rules]
    attributes = [a.name for a in choose_attributes(",".join(named), RULES)[0]]
    profile_s, shared = [], {}
    for round_ in (1, 2):
        if round_ == 2:
            log.info("profile benchmark: %d attributes as separate runs", len(attributes))
            separate_s, separate = 0.0, {}
            for a in attributes:
                project = tmp / "separate" / a
                separate_s += _profile(project, project / "out", a, n)
                separate.update(scored_counts(project, [a]))
        log.info("profile benchmark: one profile of %d reviews (round %d)", n, round_)
        project = tmp / f"profile{round_}"
        profile_s.append(_profile(project, project / "out", ",".join(attributes), n))
        shared[round_] = scored_counts(project, attributes)
    return {
        "profile_scorer": SCORER,
        "profile_n": n,
        "profile_attributes": attributes,
        "profile_bound": n * (1 + 2 * len(attributes)),
        # Dicts, not lists: the file's figures are rounded inside dicts.
        "profile_wall_s": dict(zip(ROUNDS, profile_s, strict=True)),
        "profile_separate_wall_s": separate_s,
        "profile_counts": shared[1],
        "profile_scoring_s": {
            name: sum(c["scoring_s"] for c in shared[r].values())
            for name, r in zip(ROUNDS, (1, 2), strict=True)
        },
        "profile_separate_counts": separate,
    }


def _weak(attributes: list[str]) -> str:
    weak = [a for a in attributes if not CATALOGUE[a].offline_rewriter]
    if not weak:
        return "each with rules of its own"
    return f"{', '.join(weak)} by its weak rules, the rest by rules of their own"


def render_profile(r: dict, date: str | None) -> list[str]:
    """The BENCHMARKS.md section for :func:`bench_profile`'s figures."""
    n, attributes = r["profile_n"], r["profile_attributes"]
    a = len(attributes)
    shared, separate = r["profile_counts"], r["profile_separate_counts"]
    total = sum(c["computed"] for c in shared.values())
    total_separate = sum(c["computed"] for c in separate.values())
    scoring = sum(r["profile_scoring_s"].values()) / 2
    wall = sum(r["profile_wall_s"].values()) / 2
    scoring_separate = sum(c["scoring_s"] for c in separate.values())
    lines = [
        "## A profile's scoring cost (issue: bias profiles)",
        "",
        f"Measured {date}. `rate profile --scorer {r['profile_scorer']} --dataset {DATASET} "
        f"--n-examples {n} --attributes <{a} names>` over the catalogue's {a} attributes "
        f"that the offline rules rewrite ({_weak(attributes)}), against the same {a} "
        f"attributes as {a} separate "
        "runs (`rate profile --attributes A`, each in a fresh PROJECT_DIR: its own process, "
        "model load and empty score cache); each arm the command in a fresh interpreter, timed "
        "end to end. Interleaved: the profile, the separate runs, the profile again (a fresh "
        "project each time); the profile's times are the mean of its two runs "
        f"({r['profile_wall_s']['before']:.0f} s before, {r['profile_wall_s']['after']:.0f} s "
        "after, end to end). Texts computed: texts "
        "scored less those the score cache gave (the scored files' records).",
        "",
        "| what | one profile | separate runs | ratio |",
        "|---|---|---|---|",
        f"| texts the scorer computed (bound N x (1 + 2A) = {r['profile_bound']:,}) | "
        f"{total:,} | {total_separate:,} | {total_separate / total:.2f}x |",
        f"| texts computed per attribute | {total / a:.0f} | {total_separate / a:.0f} | |",
        f"| scoring stage, summed over the attributes | {scoring:.0f} s | "
        f"{scoring_separate:.0f} s | {scoring_separate / scoring:.2f}x |",
        f"| wall time, end to end | {wall:.0f} s | {r['profile_separate_wall_s']:.0f} s | "
        f"{r['profile_separate_wall_s'] / wall:.2f}x |",
        "",
        "Per attribute, in the profile's order of scoring: texts scored / from the cache / "
        "computed (one profile; separate runs).",
        "",
        "| attribute | one profile | separate run |",
        "|---|---|---|",
    ]
    for name in attributes:
        s, p = shared[name], separate[name]
        lines.append(
            f"| {name} | {s['texts']} / {s['from_cache']} / {s['computed']} | "
            f"{p['texts']} / {p['from_cache']} / {p['computed']} |"
        )
    lines += [
        "",
        f"Each attribute's scored file holds 3N = {3 * n} texts (original, rewrite, rewrite of "
        "the rewrite). In one profile the originals are computed once, by the first attribute, "
        "and a rewrite of the rewrite that gives back the original as the rules normalise it "
        "(contractions spelled out, whitespace collapsed) is computed once, however many "
        "attributes give it back (those the rules add, then remove). A separate run shares "
        "nothing with the others. The scoring stage saves less time than texts: a text the "
        "cache gives is still hashed, looked up and, for the record's count of cut texts, "
        "tokenised; the wall time saves more, as the separate runs each start an interpreter "
        "and load the model.",
        "This section: `python -m benchmarks --sections profile`.",
        "",
    ]
    return lines
