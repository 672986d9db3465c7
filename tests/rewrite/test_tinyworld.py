"""The tiny-world rewriter: the W edit, the signature, the perfect mode, and determinism."""

from __future__ import annotations

import pytest

from rate.datasets.base import Example
from rate.datasets.w_classifiers import FieldAbove, FieldEquals, PythonRule
from rate.errors import DataFileError, RateError, TemplateError
from rate.rewrite.base import RewriteRequest, checked_outputs
from rate.rewrite.stage import select_examples
from tinyworld.options import TinyRewriterOptions
from tinyworld.rewriter import TinyRewriter
from tinyworld.source import TokenSwap

RULE = TokenSwap(token="pa", counterpart="ba")


def rewriter(style=None, rate=0.0, perfect=False, seed=0) -> TinyRewriter:
    return TinyRewriter(TinyRewriterOptions(style or {}, rate, perfect), RULE, seed)


def req(text: str, target: bool, key: str = "k") -> RewriteRequest:
    return RewriteRequest(key, text, target, "")


def test_w_edit_swaps_token_and_counterpart_both_ways():
    rw = rewriter()
    assert rw.rewrite([req("pa da pa ga ha ja ka la", False)]) == ["ba da ba ga ha ja ka la"]
    assert rw.rewrite([req("ba da ba ga ha ja ka la", True)]) == ["pa da pa ga ha ja ka la"]


def test_w_edit_without_either_token_puts_the_target_in_one_position():
    out = rewriter().rewrite([req("da da da da da da da da", True, "x")])[0].split()
    assert out.count("pa") == 1 and out.count("da") == 7
    # The same position in the signed and the perfect mode (same request key).
    assert rewriter(perfect=True).rewrite([req("da da da da da da da da", True, "x")])[
        0
    ] == " ".join(out)


def test_style_map_is_applied_everywhere_and_is_idempotent():
    rw = rewriter(style={"ga": "ka", "je": "de"})
    once = rw.rewrite([req("pa ga je ga ha ja ka la", False)])[0]
    assert once == "ba ka de ka ha ja ka la"
    back = rw.rewrite([req(once, True)])[0]
    assert back == "pa ka de ka ha ja ka la"  # the signature does not compound


def test_perfect_mode_and_counterfactual_change_only_w():
    rw = rewriter(style={"ga": "ka"}, rate=0.5)
    r = req("pa ga ga ga ha ja ka la", False)
    assert rw.counterfactual([r]) == ["ba ga ga ga ha ja ka la"]
    assert rewriter(style={"ga": "ka"}, rate=0.5, perfect=True).rewrite([r]) == rw.counterfactual(
        [r]
    )


def test_random_edits_rate_determinism_and_w_tokens_untouched():
    rw = rewriter(style={"ga": "ka"}, rate=0.1, seed=3)
    texts = ["pa da fa ha ja la ma na"] * 4000
    reqs = [req(t, False, f"k{i}") for i, t in enumerate(texts)]
    outs = rw.rewrite(reqs)
    assert outs == rw.rewrite(reqs)  # keyed randomness: the same requests, the same outputs
    changed = sum(
        a != b
        for o in outs
        for a, b in zip(o.split()[1:], ["da", "fa", "ha", "ja", "la", "ma", "na"], strict=True)
    )
    # 7 editable positions x 4000 texts x 0.1, less the 1/21 of edits that redraw the same syllable (21 replacements).
    expected = 7 * 4000 * 0.1 * (1 - 1 / 21)
    assert abs(changed - expected) < 4 * (expected**0.5)
    assert all(o.split()[0] == "ba" and "pa" not in o and "ga" not in o for o in outs)
    assert rewriter(style={"ga": "ka"}, rate=0.1, seed=4).rewrite(reqs) != outs


def test_bad_rewrite_input_and_output():
    with pytest.raises(DataFileError, match="not a tiny-world response"):
        rewriter().rewrite([req("pa da", False)])
    rw = rewriter()
    with pytest.raises(RateError, match="returned 1 outputs for 2 requests"):
        checked_outputs(rw, [req("a", True), req("b", True)], ["x"])
    with pytest.raises(RateError, match="returned int for request k; a rewrite must be text"):
        checked_outputs(rw, [req("a", True)], [3])


def ex(key: str, text: str = "", **fields) -> Example:
    return Example(key, text, "prompt", fields)


def test_w_rules():
    assert RULE(ex("a", "pa da")) is True
    assert RULE(ex("b", "ba da")) is False
    assert RULE(ex("c", "pa ba")) is None and RULE(ex("d", "da da")) is None
    rule = FieldEquals(field="label", w1_values=[3, 4], w0_values=[0, 1, 2])
    assert [rule(ex(str(v), label=v)) for v in (4, 2, 5)] == [True, False, None]
    with pytest.raises(DataFileError, match="no field 'label'.*fields present: other"):
        rule(ex("x", other=1))
    above = FieldAbove(field="text_length")
    examples = [ex(str(i), "x" * n) for i, n in enumerate([1, 5, 9, 10])]
    assert above.fit(examples) == {"threshold": 7.0}  # the median, recorded
    assert [above(e) for e in examples] == [False, False, True, True]


def w_of_length(e: Example):
    return None if not e.text else len(e.text) > 2


def test_python_rule_hook():
    rule = PythonRule(function=f"{__name__}:w_of_length")
    assert rule(ex("a", "abc")) is True and rule(ex("b", "")) is None
    with pytest.raises(TemplateError, match="use 'module:function'"):
        PythonRule(function="nocolon")(ex("a", "x"))


def test_select_examples_exact_n_both_w_and_undefined_skipped():
    chunk = [ex(f"u{i}", "da") for i in range(5)] + [ex(f"p{i}", "pa") for i in range(10)]
    chunk += [ex("b0", "ba")]
    chosen, counts = select_examples(iter([chunk]), RULE, 4)
    assert len(chosen) == 4
    assert {w for _, w in chosen} == {True, False}  # the lone W=0 example was swapped in
    assert counts == {"drawn": 16, "undefined_skipped": 5, "w_1": 3, "w_0": 1}
    with pytest.raises(DataFileError, match="only 11 examples with W defined"):
        select_examples(iter([chunk]), RULE, 12)


def test_jsonl_source_reads_shuffles_and_names_bad_rows(tmp_path):
    import json

    from rate.datasets.base import SourceContext
    from rate.datasets.options import JsonlSource
    from rate.datasets.sources import JsonlStream

    path = tmp_path / "reviews.jsonl"
    rows = [{"id": f"r{i}", "review": f"text {i}", "stars": i} for i in range(10)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ctx = SourceContext(seed=1, template_path=str(tmp_path / "t.yaml"))
    spec = JsonlSource(path="reviews.jsonl", text_field="review", prompt="Review: ", id_field="id")
    (chunk,) = list(JsonlStream(spec, ctx).chunks())
    assert sorted(e.key for e in chunk) == sorted(r["id"] for r in rows)
    assert [e.key for e in chunk] != [r["id"] for r in rows]  # shuffled with the seed
    assert chunk[0].fields == {"id": chunk[0].key, "stars": int(chunk[0].key[1:])}
    assert chunk[0].prompt == "Review: "
    bad = JsonlSource(path="reviews.jsonl", text_field="text", prompt="Review: ")
    with pytest.raises(
        DataFileError, match="row 1: field 'text' .*fields present: id, review, stars"
    ):
        list(JsonlStream(bad, ctx).chunks())
    with pytest.raises(DataFileError, match="no such file"):
        list(
            JsonlStream(
                JsonlSource(path="nope.jsonl", text_field="review", prompt=""), ctx
            ).chunks()
        )


def test_field_above_needs_numbers():
    with pytest.raises(DataFileError, match="field 'stars' must be a number, got 'five'"):
        FieldAbove(field="stars", threshold=3)(ex("a", stars="five"))
