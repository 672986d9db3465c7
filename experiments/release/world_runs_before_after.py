"""The five world runs' metrics in two builds of the default world, against the truth.

    python experiments/release/world_runs_before_after.py BUILD_A BUILD_B

An evaluation harness (it reads truth/), for checking that a change to the trainer or the
build leaves the world's runs the same in distribution.
"""

import json
import sys
from pathlib import Path

from tinyworld.evaluate import evaluate_policy, load_oracle
from tinyworld.models import load_policy, load_reward_model

RUNS = ["default-s800", "fourfam-s800", "kl002-s1500", "kl05-s800", "pilotmix-s800"]
out = {}
for w in map(Path, sys.argv[1:3]):
    oracle, _ = load_oracle(w)
    rm, ref = load_reward_model(w / "reward_model"), load_policy(w / "policy")
    rows = {}
    for run in RUNS:
        r = evaluate_policy(load_policy(w / "runs" / run / "checkpoint"), oracle, rm, ref, 500)
        b = r["balanced"]
        fam = {f: v["true_quality"] for f, v in r["per_family"].items()}
        rows[run] = {
            "true": b["true_quality"],
            "proxy": b.get("proxy_reward"),
            "kl": b.get("kl"),
            "worst_family": min(fam.values()),
        }
    out[str(w)] = rows
print(json.dumps(out, indent=1))
a, b = list(out.values())
print("| run | true quality before / after | proxy reward before / after | KL before / after |")
print("|---|---|---|---|")
for run in RUNS:
    x, y = a[run], b[run]
    print(
        f"| {run} | {x['true']:.3f} / {y['true']:.3f} | {x['proxy']:.3f} / {y['proxy']:.3f} | {x['kl']:.2f} / {y['kl']:.2f} |"
    )
