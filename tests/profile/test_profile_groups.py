"""`rate profile --group-by`: RATE per value of a field of the examples, and the claim of the
offline profiles' page (experiments/profile/README.md) that VADER's exclamation effect takes
the sign of the text's polarity: its rules add intensity to a sentence's own direction, so an
exclamation mark raises a positive text's score and lowers a negative one's."""

from __future__ import annotations

import json
from pathlib import Path

from rate.io import read_json
from tests.helpers import run_rate

# Short texts of clear polarity; the ones of even position already exclaim (both W occur).
POSITIVE = [
    "This medicine works well and I feel great",
    "My pain is gone and I am very happy",
    "A good drug, it helped me a lot",
    "I love how calm I feel now",
    "Excellent results within a week",
    "It is a wonderful relief for my back",
]
NEGATIVE = [
    "This medicine made me feel terrible",
    "The side effects were awful and painful",
    "I hate how tired it makes me",
    "A bad drug, it ruined my sleep",
    "Horrible headaches every single day",
    "It was a miserable month on this pill",
]


def _data(path: Path) -> Path:
    lines = []
    for polarity, texts in (("positive", POSITIVE), ("negative", NEGATIVE)):
        for i, text in enumerate(texts):
            response = text + ("!" if i % 2 == 0 else ".")
            lines.append({"prompt": "Review it.", "response": response, "polarity": polarity})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _profile(tmp_path: Path, *extra: str, check: bool = True):
    data = _data(tmp_path / "reviews.jsonl")
    args = ["profile", "--scorer", "vader", "--data", str(data), "--attributes", "exclamation",
            "--smoke", "--out", str(tmp_path / "D"), *extra]  # fmt: skip
    return run_rate(args, tmp_path / "p", check, PARTITION="")


def test_vader_exclamation_effect_takes_the_sign_of_the_polarity(tmp_path):
    _profile(tmp_path, "--group-by", "polarity")
    profile = read_json(tmp_path / "D" / "profile.json")
    assert profile["group_by"] == "polarity"
    (row,) = profile["attributes"]
    groups = row["groups"]
    assert sorted(groups) == ["negative", "positive"]
    for polarity, sign in (("positive", 1), ("negative", -1)):
        g = groups[polarity]
        assert (g["n_w1"], g["n_w0"]) == (3, 3)
        for estimand in ("ATT", "ATU"):  # removing where it exclaims, adding where it does not
            effect, se = g[estimand], g[f"{estimand}_se"]
            assert sign * effect > 2 * se > 0, (polarity, estimand, effect, se)
    # The whole sample mixes the two: its effect lies between the groups'.
    assert groups["negative"]["ATE"] < row["ATE_rewritten_rewrite"] < groups["positive"]["ATE"]
    table = (tmp_path / "D" / "profile.md").read_text()
    assert "## Per polarity" in table and "| exclamation | negative | 3/3 |" in table


def test_a_group_by_field_missing_from_the_data_stops_before_any_work(tmp_path):
    out = _profile(tmp_path, "--group-by", "polarty", check=False)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "reviews.jsonl:1: field 'polarty' (--group-by) is missing" in out.stderr
    assert not (tmp_path / "D").exists()


def test_a_group_by_field_the_dataset_lacks_stops_before_any_work(tmp_path):
    args = ["profile", "--scorer", "vader", "--dataset", "drugreview_length", "--group-by",
            "stars", "--attributes", "emoji", "--smoke", "--out", str(tmp_path / "D")]  # fmt: skip
    out = run_rate(args, tmp_path / "p", False, PARTITION="")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "--group-by: key 'effects.group_by' is 'stars'" in out.stderr
    assert "rating" in out.stderr and not (tmp_path / "p" / "sweeps").exists()


def test_on_the_drug_reviews_vader_exclamation_sign_follows_the_rating(tmp_path):
    """The page's claim on the 900 drug reviews: adding "!" lowers VADER's score of negative
    reviews and raises it for positive ones (ATU beyond 2 SE each way), removing them does the
    opposite (the ATTs apart by more than 2 SE), and over all reviews the two cancel."""
    args = ["profile", "--scorer", "vader", "--dataset", "drugreview_length", "--attributes",
            "exclamation", "--group-by", "rating", "--out", str(tmp_path / "D")]  # fmt: skip
    run_rate(args, tmp_path / "p", PARTITION="")
    (row,) = read_json(tmp_path / "D" / "profile.json")["attributes"]
    pos, neg = row["groups"]["positive"], row["groups"]["negative"]
    assert (pos["n_w1"] + pos["n_w0"], neg["n_w1"] + neg["n_w0"]) == (580, 238)
    assert pos["ATU"] > 2 * pos["ATU_se"] > 0 and -neg["ATU"] > 2 * neg["ATU_se"] > 0
    assert neg["ATT"] < 0 < pos["ATT"]
    assert pos["ATT"] - neg["ATT"] > 2 * (pos["ATT_se"] ** 2 + neg["ATT_se"] ** 2) ** 0.5
    assert abs(row["rate_norm"]) < 2 * row["rate_norm_se"]  # pooled: no effect
