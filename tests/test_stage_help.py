"""Each stage's --help says what it reads and writes, with an example of its own."""

from __future__ import annotations

import re

import pytest

from rate.cli import build_parser

READS_WRITES = {
    "create_dataset": ("rewrites section", "dataset_templates/", "data/rewrites/"),
    "score_dataset": ("scoring section", "data/rewrites", "data/scored/", "--model"),
    "treatment_effects": ("effects section", "data/scored", "effects/"),
    "plots": ("plots.effects_files", "effects/", "plots/"),
}


def help_of(name: str) -> str:
    parser, _ = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices[name].format_help()


@pytest.mark.parametrize("name", sorted(READS_WRITES))
def test_a_stage_help_names_what_it_reads_and_writes(name):
    text = " ".join(help_of(name).split())
    for part in READS_WRITES[name]:
        assert part in text, f"rate {name} --help does not name {part!r}"
    assert f"example: rate {name} " in text


def test_every_stage_has_its_own_examples():
    texts = {name: " ".join(help_of(name).split()) for name in READS_WRITES}
    examples = {name: re.search(r"example: (rate .*)$", t).group(1) for name, t in texts.items()}
    sets = {name: re.search(r"e\.g\. --set (\S+)", t).group(1) for name, t in texts.items()}
    assert len(set(examples.values())) == len(set(sets.values())) == len(READS_WRITES)
    section = {"create_dataset": "rewrites", "score_dataset": "scoring",
               "treatment_effects": "effects", "plots": "plots"}  # fmt: skip
    assert all(sets[name].startswith(section[name] + ".") for name in READS_WRITES)
