"""Scenarios of the failure matrix that run `rate` in this process: corrupt data files, and
the messages of issue 13."""

from __future__ import annotations

import inspect
import json
import math
import time
from pathlib import Path

from rate import pipeline, settings
from rate.errors import RateError
from rate.score.base import Scorer
from rate.score.stage import score_rows
from tests.factories import STAMP, english_examples, put, scored_rows
from tests.faults.scenarios import (
    EFFECTS,
    Result,
    environment,
    error,
    passed,
    project,
    rate,
    scenario,
)
from tinyworld import scorers as tinyworld
from tinyworld.rl_config import load_rl_config

# -- data files ----------------------------------------------------------------------------------


def _rewrites_text(tmp: Path, text: str | bytes) -> Result:
    root = project(tmp)
    path = root / "data" / "rewrites" / f"mini_{STAMP}_smoke_test.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    path.with_name(path.name + ".meta.json").write_text("{}")
    return rate(tmp, "score_dataset")


for what, text, fragments in (
    ("rewrites file not JSON", '{"0": {', ("not valid JSON", ":1")),
    ("rewrites file is an array", "[1, 2]", ("expected a JSON object {index: example}",)),
    ("rewrites example not an object", '{"0": 5}', ("example '0' is not an object",)),
    ("rewrites file empty object", "{}", ("no examples",)),
    ("rewrites file not UTF-8", b'{"0": "\xff"}', ("not UTF-8",)),
):

    @scenario("data", what, f"one line naming the file: {fragments[0]}")
    def _(tmp, text=text, fragments=fragments):
        return error(_rewrites_text(tmp, text), "mini_", *fragments)


for what, change, fragments in (
    (
        "W is text",
        lambda ex: ex.update(w_original="yes"),
        ("example 3", "'w_original' must be true or false"),
    ),
    (
        "completions not an object",
        lambda ex: ex.update(completions="abc"),
        ("example 3", "'completions' must be an object"),
    ),
    (
        "prompt is a number",
        lambda ex: ex.update(reward_question=3),
        ("example 3", "'reward_question' must be a string"),
    ),
):

    @scenario("data", f"rewrites: {what}", f"one line: {fragments[1]}")
    def _(tmp, change=change, fragments=fragments):
        data = english_examples(12)
        change(data["3"])
        project(tmp, rewrites=data)
        return error(rate(tmp, "score_dataset"), *fragments)


def _scored_lines(tmp: Path, lines: list[str]) -> Result:
    root = project(tmp)
    path = root / "data" / "scored" / EFFECTS
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    path.with_name(path.name + ".meta.json").write_text("{}")
    return rate(tmp, "treatment_effects")


@scenario("data", "scored file: a line is not JSON", "one line: the file and line number")
def _(tmp):
    lines = [json.dumps(r) for r in scored_rows(key="vader")]
    lines[5] = lines[5][:30]
    return error(_scored_lines(tmp, lines), f"{EFFECTS}:6: not valid JSON")


@scenario("data", "scored file: a line is an array", "one line: the file and line number")
def _(tmp):
    lines = [json.dumps(r) for r in scored_rows(key="vader")]
    lines[2] = "[1, 2]"
    return error(_scored_lines(tmp, lines), f"{EFFECTS}:3: expected a JSON object")


def _bad_score(tmp: Path, value, completion: str = "rewrite", *sets: str) -> Result:
    rows = scored_rows(key="vader")
    rows[4]["vader"][completion] = value
    rows[9]["vader"][completion] = value
    project(tmp, scored=rows)
    return rate(tmp, "treatment_effects", *sets)


for what, value, fragments in (
    ("a string score", "high", ("not a number", "'rewrite': a string", "drop_incomplete")),
    ("a bool score", True, ("not a number", "true/false")),
    ("a missing score", None, ("lack a completion or its score", "examples 4, 9")),
    ("a NaN score", math.nan, ("non-finite", "examples 4, 9")),
    ("a score of 1.7e308", 1.7e308, ("beyond", "examples 4, 9")),
    ("a score of -1.7e308", -1.7e308, ("beyond", "examples 4, 9")),
):

    @scenario("data", f"scored file: {what}", f"one line: {fragments[0]}, the examples, the fix")
    def _(tmp, value=value, fragments=fragments):
        return error(_bad_score(tmp, value), *fragments)


@scenario(
    "data", "huge scores with drop_incomplete", "excluded and counted; finite SEs; no overflow"
)
def _(tmp):
    res = _bad_score(tmp, 1.7e308, "original", "effects.drop_incomplete=true")
    if res.rc:
        return "defect", res.last
    data = json.loads(Path(res.out.strip()).read_text())
    ok = (
        data["input"]["excluded"]["non_finite"] == 2
        and data["ATE_rewritten_rewrite_stderr"] is not None
    )
    return passed(ok and "RuntimeWarning" not in res.err, f"excluded {data['input']['excluded']}")


@scenario("data", "no scores under the reward key", "one line listing the keys present")
def _(tmp):
    project(tmp, scored=scored_rows(key="other"))
    return error(
        rate(tmp, "treatment_effects"),
        "no scores under reward_key 'vader'",
        "reward keys present: other",
    )


@scenario("data", "integer indices and a missing score", "one line naming example 4 (no TypeError)")
def _(tmp):
    rows = scored_rows(key="vader")
    for i, r in enumerate(rows):
        r["index"] = i
    del rows[4]["vader"]["rewrite"]
    project(tmp, scored=rows)
    return error(rate(tmp, "treatment_effects"), "examples 4")


@scenario("data", "an index that is a list", "one line naming the example")
def _(tmp):
    rows = scored_rows(key="vader")
    rows[2]["index"] = [1]
    project(tmp, scored=rows)
    return error(
        rate(tmp, "treatment_effects"), "example 2: 'index' must be a string or an integer"
    )


@scenario(
    "data",
    "score_dataset on examples lacking a completion",
    "rc 0; counted and named in the log and the record",
)
def _(tmp):
    data = english_examples(12)
    del data["3"]["completions"]["rewrite"]
    project(tmp, rewrites=data)
    res = rate(tmp, "score_dataset")
    if res.rc:
        return "defect", res.last
    meta = json.loads(Path(res.out.strip() + ".meta.json").read_text())
    ok = meta["completions_missing"] == 1 and "examples 3 (rewrite)" in res.err
    return passed(ok, f"completions_missing {meta['completions_missing']}", "unclear")


@scenario(
    "data", "score_dataset on a file that has this reward key", "one line: use another reward_key"
)
def _(tmp):
    root = project(tmp, scored=scored_rows(key="vader"))
    (root / "data" / "rewrites").mkdir(parents=True)
    return error(
        rate(tmp, "score_dataset", "scoring.dataset_folder=scored"),
        "already has scores under reward_key 'vader'",
    )


@scenario("data", "a 1 MB text for VADER", "scored in seconds, cut to max_chars and counted")
def _(tmp):
    data = english_examples(4)
    data["1"]["completions"]["rewrite"] = "This is a good day. " * 50_000
    project(tmp, rewrites=data)
    start = time.monotonic()
    res = rate(tmp, "score_dataset")
    seconds = time.monotonic() - start
    if res.rc:
        return "defect", res.last
    meta = json.loads(Path(res.out.strip() + ".meta.json").read_text())
    return passed(
        meta["truncated_texts"] == 1 and seconds < 60,
        f"{seconds:.1f} s, truncated_texts {meta['truncated_texts']}",
    )


@scenario("data", "a scored file with one W value", "rc 0; the note says only the ATT is estimated")
def _(tmp):
    rows = [dict(r, w_original=True) for r in scored_rows(key="vader")]
    project(tmp, scored=rows)
    res = rate(tmp, "treatment_effects")
    return passed(res.rc == 0 and "only ATT can be estimated" in res.err, res.last[-160:])


@scenario("data", "an effects file that is not JSON", "one line naming the file")
def _(tmp):
    root = project(tmp)
    path = put(root / "effects" / f"mini_pa_vader_treatment_effects_{STAMP}_smoke_test.json", {})
    path.write_text("{oops")
    return error(rate(tmp, "plot"), "treatment_effects_", "not valid JSON")


@scenario("data", "an absolute dataset_filename", "read from there; rc 0")
def _(tmp):
    elsewhere = put(tmp / "elsewhere" / "mine.jsonl", scored_rows(key="vader"))
    project(tmp)
    res = rate(tmp, "treatment_effects", f"effects.dataset_filename={elsewhere}")
    return passed(res.rc == 0, res.out.strip()[-100:] or res.last)


@scenario(
    "data", "a bad tiny-world text (1 MB)", "one short line naming the file, example and completion"
)
def _(tmp):
    response, prompt = "ba da pa ta ka ga ma na", "dune v1 v3 v0 v7"
    texts = {"original": response, "rewrite": "zz " * 350_000, "rewritten rewrite": response}
    rows = [{"index": "150", "w_original": True, "completions": texts, "reward_question": prompt}]
    where = (
        {"source": tmp / "d.json"} if "source" in inspect.signature(score_rows).parameters else {}
    )
    try:
        score_rows(rows, _TinyWorldTexts(), "k", 1, [], **where)
    except RateError as err:
        message = str(err)
        ok = len(message) < 500 and "d.json: example 150, completion 'rewrite'" in message
        return passed(ok, message[:150], "unclear")
    return "defect", "no error"


class _TinyWorldTexts(Scorer):
    """Reads texts as the tiny world's scorers do (tinyworld.scorers), without a world."""

    name = "tiny_texts"

    def score(self, prompts, responses, on_texts=None):
        tinyworld._encode(prompts, responses)
        return [0.0] * len(responses)


# -- settings and messages -----------------------------------------------------------------------


@scenario("messages", ".env of the checkout", "read when rate runs from elsewhere")
def _(tmp):
    checkout, here = tmp / "checkout", tmp / "here"
    for d in (checkout, here):
        d.mkdir()
    (checkout / "pyproject.toml").write_text("")
    (checkout / ".env").write_text("RATE_MATRIX_A=checkout\nRATE_MATRIX_B=checkout\n")
    (here / ".env").write_text("RATE_MATRIX_B=here\n")
    old = settings._CHECKOUT
    settings._CHECKOUT = checkout
    try:
        with environment(here, RATE_MATRIX_A=None, RATE_MATRIX_B=None):
            settings.load_settings()
            got = (
                settings.os.environ.get("RATE_MATRIX_A"),
                settings.os.environ.get("RATE_MATRIX_B"),
            )
    finally:
        settings._CHECKOUT = old
    return passed(got == ("checkout", "here"), f"A from {got[0]}, B from {got[1]}")


@scenario("messages", "unknown family in an RL config", "'Valid families', not 'familys'")
def _(tmp):
    try:
        load_rl_config(None, ['family_weights={"dun": 1}'])
    except RateError as err:
        return passed("Valid families" in str(err), str(err)[:150], "unclear")
    return "defect", "accepted"


@scenario("messages", "a failed run's log", "ends with the rate: error: line")
def _(tmp):
    project(tmp)
    rate(tmp, "treatment_effects")
    (log,) = (tmp / "p" / "logs").glob("treatment_effects_*.log")
    last = log.read_text().strip().splitlines()[-1]
    return passed(last.startswith("rate: error:"), last[:150], "unclear")


@scenario("messages", "an unexpected bug", "rc 1; traceback in the log and a line to report")
def _(tmp):
    project(tmp)
    real = pipeline.treatment_effects

    def boom(config, layout):
        raise RuntimeError("matrix bug")

    pipeline.treatment_effects = boom
    try:
        res = rate(tmp, "treatment_effects")
    finally:
        pipeline.treatment_effects = real
    (log,) = (tmp / "p" / "logs").glob("treatment_effects_*.log")
    ok = (
        res.rc == 1
        and "RuntimeError: matrix bug" in log.read_text()
        and "please report" in res.last
    )
    return passed(ok, res.last[:150], "unclear")


@scenario("messages", "PROJECT_DIR is a file", "one line: cannot write, a file is in the way")
def _(tmp):
    project(tmp, scored=scored_rows(key="vader"))
    (tmp / "afile").write_text("x")
    return error(
        rate(tmp, "treatment_effects", PROJECT_DIR=str(tmp / "afile" / "p")), "cannot write"
    )


@scenario("messages", "GROUP_NAME not a group", "one line naming GROUP_NAME and .env")
def _(tmp):
    project(tmp, scored=scored_rows(key="vader"))
    return error(
        rate(tmp, "treatment_effects", GROUP_NAME="no-such-group-q"),
        "GROUP_NAME='no-such-group-q'",
        ".env",
    )
