"""The demo's table flags every estimate more than 2 SE from the truth, and says why once."""

from __future__ import annotations

from rate.effects.estimators import ESTIMATORS
from tinyworld.demo import demo_table, residue_note


def _row(template: str, scorer: str, errors: dict[str, float], placebo: bool = True) -> dict:
    """A demo row whose every estimate is 1.0 (SE 0.1), with the given errors in SE."""
    row = {"template": template, "scorer": scorer, "Y1_count": 10, "Y0_count": 12}
    for e in ESTIMATORS:
        if placebo or e.method != "rate_placebo":
            row[e.name], row[f"{e.name}_stderr"] = 1.0, 0.1
    row["truth"] = {k: 1.0 for k in ("ATE", "ATT", "ATU")}
    row["error_in_se"] = {e.name: errors.get(e.name, 0.5) for e in ESTIMATORS if e.name in row}
    return row


def _lines(table: str, scorer: str) -> dict[str, str]:
    """estimand -> that row of the table."""
    return {line.split(" | ")[2]: line for line in table.splitlines() if f"| {scorer} |" in line}


def test_each_row_names_the_estimators_off_by_more_than_2_se():
    rows = [
        _row(
            "control",
            "reward model",
            {"ATE_rewritten_rewrite": -3.9, "naive_effect": 2.1, "ATT_rewritten_rewrite": -2.0},
        ),  # fmt: skip
        _row("control", "true quality", {"ATU_rewritten_rewrite_placebo": 2.5}),
    ]
    table = demo_table(rows)
    assert "| RATE, placebo-corrected |" in table.splitlines()[0]
    assert table.splitlines()[0].endswith("| off by > 2 SE |")
    rm, tq = _lines(table, "reward model"), _lines(table, "true quality")
    assert rm["ATE"].endswith("| naive, RATE |")
    assert rm["ATT"].endswith("| - |")  # exactly 2 SE is not more than 2
    assert tq["ATU"].endswith("| RATE-p |") and tq["ATE"].endswith("| - |")


def test_the_residue_is_explained_in_one_sentence_only_where_rate_is_off():
    fine = [_row("dune", "reward model", {"ATE_rewritten_rewrite": 1.9})]
    assert residue_note(fine) is None
    rows = fine + [
        _row("control", "true quality", {"ATT_rewritten_rewrite": -3.5,
                                         "ATT_rewritten_rewrite_placebo": -1.4}),
        _row("control", "reward model", {"ATE_rewritten_rewrite": -3.9,
                                         "ATE_rewritten_rewrite_placebo": -3.6}),
    ]  # fmt: skip
    note = residue_note(rows)
    assert note.count(". ") == 0 and note.endswith(".")  # one sentence
    assert "control true quality ATT the residue is the extra round of random edits" in note
    assert "control reward model ATE RATE-p is off too" in note
    assert "dune" not in note
    # Without placebo rewrites the sentence says what would measure the drift.
    old = [_row("control", "true quality", {"ATT_rewritten_rewrite": -3.5}, placebo=False)]
    assert "a placebo pass (the template's placebo_prompt)" in residue_note(old)
    assert "RATE, placebo-corrected" not in demo_table(old)
