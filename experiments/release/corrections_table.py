"""The corrections a release study compared, in one JSON: the oracle's, ours and the ridge's.

    python experiments/release/corrections_table.py WORLD STUDY > corrections_<world>.json

STUDY is a `rate world study release` folder (its wrappers/audit.json is the study's audit). Beside
ours (each flagged token by position, each flagged pair by cell) it writes ``ours_flat``: the
same audit's correction with one excess per token for all positions, the wrapper before
positions were measured. An evaluation harness: the oracle's table is the world's truth.
"""

import json
import sys
from pathlib import Path

from tinyworld.audit.wrapper import corrections
from tinyworld.audit_truth import oracle_corrections
from tinyworld.evaluate import load_oracle

world, study = map(Path, sys.argv[1:3])
audit = json.loads((study / "wrappers" / "audit.json").read_text())
flat = {
    **audit,
    "candidates": [
        {k: v for k, v in row.items() if k != "rm_effect_by_position"}
        for row in audit["candidates"]
    ],
}
_, config = load_oracle(world)
table = {
    "oracle": oracle_corrections(config),
    "ours": corrections(audit, "ours"),
    "ours_flat": corrections(flat, "ours"),
    "ridge": corrections(audit, "ridge"),
}
print(json.dumps(table, indent=1, sort_keys=True))
