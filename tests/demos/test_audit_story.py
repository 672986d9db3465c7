"""`rate audit-demo` end to end on the small world (a short corrected run)."""

from __future__ import annotations

import json
import re

from tests.helpers import run_rate


def test_the_audit_demo_tells_the_story_against_the_truth(small_world, tmp_path):
    out = tmp_path / "story"
    args = ["audit-demo", "--world", str(small_world), "--out", str(out), "--steps", "10",
            "--per-family", "40"]  # fmt: skip
    first = run_rate(args, tmp_path).stdout
    for step in ("1. Audit", "2. Correction", "3. Corrected RL", "4-5. Certification", "6."):
        assert step in first
    runs = {p.name for p in (small_world / "runs").iterdir() if p.is_dir()} | {"corrected"}
    agree = re.search(r"agrees with the oracle's rule on (\d+) of (\d+)", first)
    assert agree and int(agree.group(2)) == len(runs)
    assessment = json.loads((out / "assessment.json").read_text())
    assert {r["run"] for r in assessment["runs"]} == runs
    # The rerun reuses the audit and the corrected run.
    stamp = (out / "corrected-run" / "checkpoint" / "policy.safetensors").stat().st_mtime_ns
    run_rate(args, tmp_path)
    assert (out / "corrected-run" / "checkpoint" / "policy.safetensors").stat().st_mtime_ns == stamp
    # A rerun with another number of steps would reuse a run of 10: it stops instead.
    other = run_rate([*args[:-4], "--steps", "12", *args[-2:]], tmp_path, check=False)
    assert other.returncode != 0 and "Traceback" not in other.stderr
    assert "made from other inputs (steps differ)" in other.stderr


def test_the_demo_names_each_correction_per_occurrence_and_per_cell():
    from tinyworld.audit_demo import correction_lines

    table = {
        "dune": {"tokens": {"pa": 1.419}, "pairs": {}},
        "anvil": {"tokens": {"de": -0.2}, "pairs": {},
                  "positions": {"za": [1.3, 1.25, 1.4, 1.3, 1.3, 1.3, 1.3, 1.3]}},
        "cobalt": {"tokens": {}, "pairs": {}, "complexes": {"ka ra": {"1 1 1": 0.5, "4 4 4": 1.9}}},
    }  # fmt: skip
    assert correction_lines(table) == [
        "   dune: pa -1.419",
        "   anvil: de +0.200, za -1.400 to -1.250 by position",
        "   cobalt: ka ra per cell (2 cells, up to -1.900 at 4 4 4)",
    ]
