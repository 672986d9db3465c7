"""Stage 4 figures: the plotted points, intervals and truths are the effect file's numbers."""

from __future__ import annotations

import math
import re
import struct

import matplotlib
import numpy as np
import pytest

from rate.effects.estimators import Scores
from rate.effects.stage import clean, compute_effects
from rate.errors import ConfigError, DataFileError
from rate.io import atomic_write_json, read_json, write_jsonl
from rate.plots.distributions import score_distribution_figure
from rate.plots.figures import DPI, effects_figure, figure_bytes, rewrite_bias_figure
from rate.plots.stage import make_plots
from rate.plots.sweeps import sweep_figure
from rate.plots.tables import effects_summary_table, sample_rewrites_table

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _no_group(monkeypatch):
    monkeypatch.delenv("GROUP_NAME", raising=False)


def _world(n: int = 300, seed: int = 0, all_w1: bool = False):
    """Scores where W adds 1.5 to the reward of W=1 texts and 0.8 to that of W=0 texts (so the
    ATT, ATU and ATE differ), and every rewrite adds a bias of 0.3."""
    rng = np.random.default_rng(seed)
    w = np.ones(n, bool) if all_w1 else rng.random(n) < 0.4
    sign = np.where(w, 1.0, -1.0)
    effect = np.where(w, 1.5, 0.8)
    o = rng.normal(size=n) + w * effect
    perfect = o - sign * effect  # the true counterfactual: W flipped and nothing else
    r = perfect + 0.3 + rng.normal(size=n) * 0.2
    rr = r + sign * effect + rng.normal(size=n) * 0.2
    return w, o, r, rr, perfect


def _effects(concept: str, score: str, truth: bool, all_w1: bool = False, seed: int = 0) -> dict:
    w, o, r, rr, perfect = _world(seed=seed, all_w1=all_w1)
    e = clean(compute_effects(Scores(w, o, r, rr), perfect if truth else None, 60, 0, 0.95, 1))
    e.update(dataset_name="toy", concept=concept, score=score, reward_key=f"{score}_id")
    return e


@pytest.fixture(scope="module")
def with_truth() -> dict:
    return _effects("length", "rmA", truth=True)


@pytest.fixture(scope="module")
def only_w1() -> dict:
    return _effects("harm", "rmB", truth=False, all_w1=True)


def _rows(reward_key: str = "rmA_id", n: int = 300) -> list[dict]:
    w, o, r, rr, _ = _world(n)
    return [
        {
            "index": str(i),
            "w_original": bool(w[i]),
            "completions": {
                "original": f"text {i} | with a pipe " + "long " * 60,
                "rewrite": f"rewrite {i}",
                "rewritten rewrite": f"back {i}\nover two lines",
            },
            "reward_question": "q",
            reward_key: {"original": o[i], "rewrite": r[i], "rewritten rewrite": rr[i]},
        }
        for i in range(n)
    ]


def _ax(fig, title: str):
    (ax,) = [a for a in fig.axes if a.get_title() == title or a.get_title().startswith(title)]
    return ax


def _line(ax, gid: str):
    found = [ln for ln in ax.lines if ln.get_gid() == gid]
    assert len(found) == 1, f"{len(found)} artists with gid {gid!r}"
    return found[0]


def _gids(ax) -> set[str]:
    return {ln.get_gid() for ln in ax.lines if ln.get_gid()}


def _texts(fig) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts)


# ---------------------------------------------------------------------------------------------
# effects_figure


def test_effects_figure_normalised_points_intervals_and_truth(with_truth, only_w1):
    fig = effects_figure([with_truth, only_w1], normalized=True)
    assert [a.get_title() for a in fig.axes] == ["rmA", "rmB"]
    ax = _ax(fig, "rmA")
    std = with_truth["reward_std"]
    norm = with_truth["normalized"]
    rate, naive = _line(ax, "rate@length · toy"), _line(ax, "naive@length · toy")
    assert rate.get_xdata()[0] == pytest.approx(norm["ATE_rewritten_rewrite"], rel=1e-12)
    assert naive.get_xdata()[0] == pytest.approx(norm["naive_effect"], rel=1e-12)
    lo, hi = with_truth["intervals"]["normal"]["ATE_rewritten_rewrite"]
    assert list(_line(ax, "rate/normal@length · toy").get_xdata()) == pytest.approx(
        [lo / std, hi / std]
    )
    blo, bhi = with_truth["intervals"]["bootstrap"]["naive_effect"]
    assert list(_line(ax, "naive/bootstrap@length · toy").get_xdata()) == pytest.approx(
        [blo / std, bhi / std]
    )
    # The truth is marked at the true ATE, across the row that holds both estimates.
    truth = _line(ax, "truth@length · toy")
    assert list(truth.get_xdata()) == pytest.approx([with_truth["truth_normalized"]["ATE"]] * 2)
    ys = truth.get_ydata()
    assert min(ys) < rate.get_ydata()[0] < naive.get_ydata()[0] < max(ys)
    assert "Normalised" in fig.get_suptitle()
    assert "normalised" in ax.get_xlabel()


def test_effects_figure_raw_units(with_truth):
    fig = effects_figure([with_truth], normalized=False)
    ax = _ax(fig, "rmA")
    assert _line(ax, "rate@length · toy").get_xdata()[0] == with_truth["ATE_rewritten_rewrite"]
    lo, hi = with_truth["intervals"]["normal"]["naive_effect"]
    assert list(_line(ax, "naive/normal@length · toy").get_xdata()) == [lo, hi]
    assert list(_line(ax, "truth@length · toy").get_xdata()) == [with_truth["truth"]["ATE"]] * 2
    assert "Raw" in fig.get_suptitle() and "raw" in ax.get_xlabel()


def test_effects_figure_skips_nulls_and_falls_back_to_att(only_w1):
    assert only_w1["naive_effect"] is None and only_w1["ATE_rewritten_rewrite"] is None
    fig = effects_figure([only_w1])
    ax = _ax(fig, "rmB")
    assert "naive@harm · toy" not in _gids(ax)
    assert "truth@harm · toy" not in _gids(ax)
    assert _line(ax, "rate@harm · toy").get_xdata()[0] == pytest.approx(
        only_w1["normalized"]["ATT_rewritten_rewrite"], rel=1e-12
    )
    assert "ATT only" in _texts(fig)


def test_effects_figure_with_nothing_estimable_does_not_crash(with_truth):
    empty = {k: None for k in with_truth if k not in ("concept", "score", "dataset_name")}
    empty.update(
        concept="c", score="rmZ", intervals={"level": 0.95, "normal": {"naive_effect": None}}
    )
    fig = effects_figure([empty])
    assert _gids(_ax(fig, "rmZ")) == set()
    assert "not estimable" in _texts(fig)
    with pytest.raises(ValueError, match="no effect files"):
        effects_figure([])


# ---------------------------------------------------------------------------------------------
# rewrite_bias_figure


def test_rewrite_bias_figure_rate_vs_single_rewrite(with_truth):
    fig = rewrite_bias_figure(with_truth, normalized=False)
    (ax,) = fig.axes
    for estimand in ("ATE", "ATT", "ATU"):
        rate = _line(ax, f"rate@{estimand}")
        single = _line(ax, f"single_rewrite@{estimand}")
        assert rate.get_xdata()[0] == with_truth[f"{estimand}_rewritten_rewrite"]
        assert single.get_xdata()[0] == with_truth[f"{estimand}_single_rewrite"]
        lo, hi = with_truth["intervals"]["normal"][f"{estimand}_single_rewrite"]
        assert list(_line(ax, f"single_rewrite/normal@{estimand}").get_xdata()) == [lo, hi]
        assert (
            list(_line(ax, f"truth@{estimand}").get_xdata()) == [with_truth["truth"][estimand]] * 2
        )
    # The single rewrite carries the rewrite's own bias (0.3); RATE removes it.
    truth = with_truth["truth"]["ATT"]
    assert abs(with_truth["ATT_rewritten_rewrite"] - truth) < 0.1
    assert abs(with_truth["ATT_single_rewrite"] - truth) > 0.2


def test_rewrite_bias_figure_with_one_w_value(only_w1):
    fig = rewrite_bias_figure(only_w1)
    (ax,) = fig.axes
    assert {g.split("@")[1] for g in _gids(ax)} == {"ATT"}
    assert _texts(fig).count("not estimable") == 2  # ATE and ATU


# ---------------------------------------------------------------------------------------------
# score_distribution_figure


def test_score_distribution_counts_and_means():
    """One panel per completion and W value, so that no histogram hides another."""
    rows = _rows()
    fig = score_distribution_figure(rows, "rmA_id")
    n1 = sum(r["w_original"] for r in rows)
    completions = ("original", "rewrite", "rewritten rewrite")
    assert sorted(ax.get_gid() for ax in fig.axes) == sorted(
        f"W={w}/{c}" for w in (0, 1) for c in completions
    )
    assert [fig.axes[0].get_title(), fig.axes[1].get_title()] == [
        f"W = 1 (n = {n1})",
        f"W = 0 (n = {len(rows) - n1})",
    ]
    for w, n in ((True, n1), (False, len(rows) - n1)):
        for c in completions:
            (ax,) = [a for a in fig.axes if a.get_gid() == f"W={int(w)}/{c}"]
            (patch,) = ax.patches
            assert patch.get_gid() == c and patch.get_data().values.sum() == n
            mean = np.mean([r["rmA_id"][c] for r in rows if r["w_original"] is w])
            assert _line(ax, f"mean/{c}").get_xdata()[0] == pytest.approx(mean)
            assert f"mean {mean:.3g}" in [t.get_text() for t in ax.texts]


def test_score_distribution_unknown_reward_key_names_the_present_ones():
    with pytest.raises(DataFileError, match="rmA_id"):
        score_distribution_figure(_rows(n=10), "other")


# ---------------------------------------------------------------------------------------------
# sweep_figure

SWEEP = {
    "experiment": "corr",
    "title": "Correlation sweep",
    "x_label": "correlation",
    "levels": [0.0, 0.5, 1.0],
    "series": {
        "naive": {"estimate": [0.0, 0.5, None], "low": [-0.1, 0.4, None], "high": [0.1, 0.6, None]},
        "rate": {"estimate": [0.0, 0.02, 0.01], "low": [-0.1, -0.1, -0.1], "high": [0.1, 0.1, 0.1]},
        "truth": {"estimate": [0.0, 0.0, 0.0]},
    },
    "slopes": {"naive": 1.0, "rate": 0.01},
}


def test_sweep_figure_lines_bands_and_slopes():
    fig = sweep_figure(SWEEP)
    (ax,) = fig.axes
    naive = _line(ax, "sweep/naive")
    assert list(naive.get_xdata()) == [0.0, 0.5, 1.0]
    assert list(naive.get_ydata()[:2]) == [0.0, 0.5] and math.isnan(naive.get_ydata()[2])
    bands = {c.get_gid() for c in ax.collections}
    assert bands == {"sweep/naive/band", "sweep/rate/band"}
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("naive" in s and "slope 1" in s for s in labels)
    assert any("RATE" in s and "slope 0.01" in s for s in labels)
    assert ax.get_xlabel() == "correlation" and ax.get_title() == "Correlation sweep"


def test_sweep_figure_rejects_a_series_of_the_wrong_length():
    bad = {**SWEEP, "series": {"rate": {"estimate": [0.0, 1.0]}}}
    with pytest.raises(DataFileError, match="one entry per level"):
        sweep_figure(bad)
    with pytest.raises(DataFileError, match="levels"):
        sweep_figure({"experiment": "x"})


# ---------------------------------------------------------------------------------------------
# Layout: nothing clipped, fonts readable at the saved size, at every size


def _drawn_texts(fig) -> list:
    """Every text the figure draws: figure titles, panel titles, axis labels, tick labels in
    view, annotations and legend entries."""
    texts = list(fig.texts)
    for leg in fig.legends:
        texts += leg.get_texts()
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        texts += ax.texts
        if ax.get_legend():
            texts += ax.get_legend().get_texts()
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            span = (hi - lo) * 1e-9
            locs = axis.get_majorticklocs()
            for loc, tick in zip(locs, axis.get_major_ticks(len(locs)), strict=True):
                if lo - span <= loc <= hi + span:
                    texts.append(tick.label1)  # label2 is off on these axes
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _assert_fits(fig) -> None:
    """Every drawn text lies inside the figure and is at least 9 pt; the saved PNG has the
    figure's own size (nothing cropped or scaled when saved)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox
    texts = _drawn_texts(fig)
    assert texts
    for t in texts:
        box = t.get_window_extent(renderer)
        inside = box.x0 >= frame.x0 - 0.5 and box.x1 <= frame.x1 + 0.5
        inside = inside and box.y0 >= frame.y0 - 0.5 and box.y1 <= frame.y1 + 0.5
        assert inside, f"{t.get_text()!r} at {box.bounds} is outside {frame.bounds}"
        assert t.get_fontsize() >= 9, f"{t.get_text()!r} is {t.get_fontsize()} pt"
    for leg in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]:
        box = leg.get_window_extent(renderer)
        assert box.x0 >= -0.5 and box.x1 <= frame.x1 + 0.5, "legend sticks out"
    png = figure_bytes(fig, "png")
    width, height = struct.unpack(">II", png[16:24])
    expected = fig.get_size_inches() * DPI
    assert abs(width - expected[0]) <= 1 and abs(height - expected[1]) <= 1


def test_one_concept_one_model_fits(with_truth):
    """The smoke default: one file. Its title and 4-entry legend were cut at both edges."""
    for normalized in (True, False):
        fig = effects_figure([with_truth], normalized=normalized)
        _assert_fits(fig)
        # The title is all there (wrapped), and the legend has every entry.
        assert " ".join(fig.get_suptitle().split()).endswith("naive vs RATE, 95% intervals")
        (legend,) = fig.legends
        labels = [t.get_text() for t in legend.get_texts()]
        assert labels == ["naive", "RATE (rewrite of rewrite)", "bootstrap interval", "true effect"]
        (ax,) = fig.axes
        assert [t.get_text() for t in ax.get_yticklabels()] == ["length · toy"]


def test_long_names_fit(with_truth):
    e = dict(with_truth, concept="a rather long concept name", dataset_name="dataset_" * 6)
    e["score"] = "RLHFlow/ArmoRM-Llama3-8B-v0.1-with-a-long-suffix"
    _assert_fits(effects_figure([e]))
    _assert_fits(rewrite_bias_figure(e))


def test_twenty_panels_fit_with_no_empty_cells(with_truth):
    """20 reward models wrap onto rows of panels; each panel has a row only for the files it
    has, and every row label has the same form."""
    files = []
    for i in range(20):
        for concept in ("length", "sentiment", "harm")[: 1 + i % 3]:
            files.append(dict(with_truth, concept=concept, score=f"reward model {i:02d}"))
    fig = effects_figure(files)
    _assert_fits(fig)
    assert len(fig.axes) == 20  # no empty panels
    assert max(ax.get_subplotspec().colspan.stop for ax in fig.axes) == 4
    for i, ax in enumerate(fig.axes):
        rows = [t.get_text() for t in ax.get_yticklabels()]
        assert rows == [f"{c} · toy" for c in ("length", "sentiment", "harm")[: 1 + i % 3]]
        assert {g.split("@")[1] for g in _gids(ax)} == set(rows)  # every row drawn


def test_row_labels_have_one_form(with_truth, only_w1):
    """A concept from one dataset beside one from two: every label says concept · dataset."""
    other = dict(with_truth, dataset_name="imdb")
    fig = effects_figure([with_truth, other, only_w1])
    labels = {t.get_text() for ax in fig.axes for t in ax.get_yticklabels() if t.get_text()}
    assert labels == {"length · toy", "length · imdb", "harm · toy"}
    _assert_fits(fig)


def test_every_figure_fits_even_with_small_default_fonts(with_truth, only_w1):
    """A notebook's rcParams may shrink the default font: the figures set their own."""
    with matplotlib.rc_context({"font.size": 6, "legend.fontsize": 6}):
        figures = [
            effects_figure([with_truth, only_w1]),
            rewrite_bias_figure(only_w1),
            score_distribution_figure(_rows(), "rmA_id"),
            sweep_figure(SWEEP),
        ]
    for fig in figures:
        _assert_fits(fig)


# ---------------------------------------------------------------------------------------------
# Tables


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_sample_rewrites_table_is_seeded_shortened_and_escaped():
    rows = _rows(n=40)
    table = sample_rewrites_table(rows, k=4, seed=3, max_chars=50)
    assert table == sample_rewrites_table(rows, k=4, seed=3, max_chars=50)
    assert table != sample_rewrites_table(rows, k=4, seed=4, max_chars=50)
    lines = table.strip().split("\n")
    assert _cells(lines[0]) == ["index", "W", "original", "rewrite", "rewritten rewrite"]
    assert len(lines) == 2 + 4
    for line in lines[2:]:
        index, w, original, rewrite, back = _cells(line)
        row = rows[int(index)]
        assert w == str(int(row["w_original"]))
        assert original.endswith("…") and len(original.replace("\\|", "|")) == 50
        assert original.startswith(f"text {index} \\| with a pipe")
        assert rewrite == f"rewrite {index}"
        assert back == f"back {index} over two lines"
    assert len(_cells(sample_rewrites_table(rows[:2], k=5).strip().split("\n")[-1])) == 5


def test_effects_summary_table_holds_the_files_numbers(with_truth, only_w1):
    table = effects_summary_table([with_truth, only_w1], names=["a.json", "b.json"])
    a, b = table.strip().split("\n")[2:]
    assert _cells(a)[0] == "a.json"
    assert f"{with_truth['ATE_rewritten_rewrite']:.4g}" in _cells(a)
    assert f"{with_truth['naive_effect']:.4g}" in _cells(a)
    assert f"{with_truth['truth']['ATE']:.4g}" in _cells(a)
    assert _cells(b)[5] == "n/a"  # only W=1: no naive effect


# ---------------------------------------------------------------------------------------------
# make_plots


def _sweep_file(tmp_path):
    path = tmp_path / "synthetic" / "corr_20260101_120000.json"
    atomic_write_json(path, SWEEP)
    return path


def test_make_plots_writes_exactly_the_expected_files(tmp_path, with_truth, only_w1):
    e1, e2 = tmp_path / "effects" / "a_effects.json", tmp_path / "effects" / "b_effects.json"
    atomic_write_json(e1, with_truth)
    atomic_write_json(e2, only_w1)
    scored = tmp_path / "scored.jsonl"
    write_jsonl(scored, _rows(n=50))
    out = tmp_path / "plots"
    written = make_plots(
        [e1, e2],
        out,
        formats=("png", "svg"),
        scored_path=scored,
        sweep_paths=[_sweep_file(tmp_path)],
    )
    figures = ["effects_normalized", "effects_raw", "rewrite_bias_a_effects"]
    figures += ["rewrite_bias_b_effects", "score_distributions", "sweep_corr_20260101_120000"]
    expected = {f"{f}.{ext}" for f in figures for ext in ("png", "svg")}
    expected |= {"effects_summary.md", "sample_rewrites.md"}
    assert sorted(p.name for p in written) == sorted(expected)
    assert {p.name for p in out.iterdir()} == expected  # no temporary files left behind
    for p in written:
        assert p.parent == out and p.stat().st_size > 0
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == PNG
        if p.suffix == ".svg":
            assert b"<svg" in p.read_bytes()[:2000]
    sample = (out / "sample_rewrites.md").read_text(encoding="utf-8")
    assert "scored.jsonl" in sample and "| index | W | original |" in sample
    summary = (out / "effects_summary.md").read_text(encoding="utf-8")
    assert f"{read_json(e1)['ATE_rewritten_rewrite']:.4g}" in summary


def test_make_plots_reward_key_comes_from_the_effect_file(tmp_path, with_truth):
    e1 = tmp_path / "a.json"
    atomic_write_json(e1, with_truth)  # reward_key rmA_id
    scored = tmp_path / "scored.jsonl"
    rows = _rows(n=30)
    for r in rows:
        r["other_rm"] = {k: v + 100 for k, v in r["rmA_id"].items()}
    write_jsonl(scored, rows)
    # Two reward keys in the scored file: the effect file's one is drawn, without an error.
    make_plots([e1], tmp_path / "out", scored_path=scored)
    assert (tmp_path / "out" / "score_distributions.png").stat().st_size > 0
    # Two reward keys and none named: the error says which are present.
    with pytest.raises(DataFileError, match="other_rm"):
        make_plots([], tmp_path / "out2", scored_path=scored)


def test_make_plots_errors_name_the_file(tmp_path):
    with pytest.raises(DataFileError, match="missing.json"):
        make_plots([tmp_path / "missing.json"], tmp_path / "out")
    with pytest.raises(ConfigError, match="png, pdf, svg"):
        make_plots([], tmp_path / "out", formats=("jpeg",))
    bad = tmp_path / "bad_sweep.json"
    atomic_write_json(bad, {"experiment": "x", "levels": [1], "series": {"rate": {"estimate": []}}})
    with pytest.raises(DataFileError, match="bad_sweep.json"):
        make_plots([], tmp_path / "out", sweep_paths=[bad])
