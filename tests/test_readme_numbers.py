"""Pages that quote the tiny world's numbers say that they vary by CPU: the world is built
from one seed, but in floating point, and a build on another CPU gives other counts."""

from __future__ import annotations

import re

from tests.helpers import ROOT

# A world's sample counts as the demo prints them, or the claim that one seed fixes the world.
QUOTES = re.compile(r"tinyrlhf_\w+ \(n \d+/\d+\)|built from one seed")
SAYS = re.compile(r"var(?:y|ies) by CPU")


def test_pages_quoting_the_worlds_numbers_say_they_vary_by_cpu():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    pages += sorted((ROOT / "experiments").glob("**/README.md"))
    quoting = [p for p in pages if QUOTES.search(p.read_text(encoding="utf-8"))]
    assert {p.relative_to(ROOT).as_posix() for p in quoting} >= {
        "README.md",
        "docs/world.md",
        "experiments/demo/README.md",
    }
    silent = [p for p in quoting if not SAYS.search(" ".join(p.read_text().split()))]
    assert not silent, f"say that the numbers vary by CPU in {[str(p) for p in silent]}"
