"""Rewrite success of the catalogue's offline rule rewriters, per attribute, dataset and pass.

For each attribute with a rules_en rewriter and each offline dataset, the first N examples
with W defined are rewritten to the other W and back, and each pass is checked as
create_dataset checks it (rate.attributes.rule_success). Prints a markdown table.

    python experiments/profile/rule_success.py --n 300
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from rate.attributes import CATALOGUE, load_attribute_template, rule_success
from rate.records import REWRITE, REWRITTEN
from rate.rewrite.checks import success_text
from rate.rewrite.options import RULE_ATTRIBUTES

DATASETS = {
    "drug reviews": {"kind": "drug_reviews", "split": "all"},
    "chatterbot": {"kind": "chatterbot", "language": "english"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="examples per attribute and dataset")
    parser.add_argument("--attributes", default=",".join(CATALOGUE))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("| attribute | dataset | W=1 / n | rewrite | rewrite of the rewrite |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.attributes.split(","):
            # Sentiment's file names an LLM; its rules are measured too, to show why.
            rules = {"rewriter": {"backend": "rules_en", "attribute": name}}
            if not CATALOGUE[name].offline_rewriter and name not in RULE_ATTRIBUTES:
                continue
            for label, source in DATASETS.items():
                template = load_attribute_template(name, source, args.n, Path(tmp), None, rules)
                r = rule_success(template, args.n, args.seed)
                cells = [
                    success_text(round(r["passes"][p]["passing"] * r["n"]), r["n"])
                    for p in (REWRITE, REWRITTEN)
                ]
                print(f"| {name} | {label} | {r['w_1']}/{r['n']} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
