"""The ``python`` scorer: a user's function, found and checked without running it, scored
through the real stage, its failures told in one line."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from rate.catalog import load_config, load_scoring_template, validate_all
from rate.errors import RateError, TemplateError
from rate.score.backends import build_scorer
from rate.score.base import Scorer, checked_scores
from rate.score.stage import score_dataset
from rate.store import Layout
from tests.helpers import ROOT

# Two examples; each completion is scored by the users' functions below.
EXAMPLES = {
    "0": {"original": "ab", "rewrite": "abcd", "rewritten rewrite": "abc", "question": "Q?"},
    "1": {"original": "bad x", "rewrite": "y", "rewritten rewrite": "zz", "question": "Why?"},
}


@pytest.fixture
def user(tmp_path, monkeypatch):
    """A folder on the Python path for the user's modules and one on RATE_TEMPLATE_PATH for
    the scoring templates that name them; -> (write_module, write_template)."""
    code, templates = tmp_path / "code", tmp_path / "templates"
    (templates / "scoring_templates").mkdir(parents=True)
    code.mkdir()
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(templates))
    written: list[str] = []

    def module(name: str, source: str) -> Path:
        path = code / f"{name.replace('.', '/')}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        written.append(name.split(".")[0])
        return path

    def template(function: str, **keys) -> None:
        data = {"name": "judge", "reward_key": "judge", "backend": "python", "function": function}
        path = templates / "scoring_templates" / "judge.yaml"
        path.write_text(yaml.safe_dump({**data, **keys}))

    yield module, template
    for name in written:  # the next test writes its own module under the same name
        for key in [k for k in sys.modules if k == name or k.startswith(f"{name}.")]:
            del sys.modules[key]


def _score(tmp_path: Path) -> list[dict]:
    """score_dataset on EXAMPLES with the 'judge' template; -> the scored rows."""
    layout = Layout(tmp_path / "project")
    layout.rewrites.mkdir(parents=True)
    data = {
        i: {
            "w_original": i == "0",
            "completions": {k: v for k, v in e.items() if k != "question"},
            "reward_question": e["question"],
        }
        for i, e in EXAMPLES.items()
    }
    name = "judged_20260101_000000.json"
    (layout.rewrites / name).write_text(json.dumps(data))
    config = load_config(
        ROOT / "experiments" / "config.yaml",
        ["scoring.dataset_name=judged", "scoring.model=judge", f"scoring.dataset_filename={name}"],
    )
    out = score_dataset(config, layout)
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_a_users_function_scores_through_the_stage_in_batches(user, tmp_path):
    module, template = user
    module(
        "judge_len",
        "SEEN = []\n"
        "def score(prompts, texts):\n"
        "    SEEN.append(len(texts))\n"
        "    return [len(t) + 0.5 * len(p) for p, t in zip(prompts, texts)]\n",
    )
    template("judge_len:score", batch_size=4)
    rows = _score(tmp_path)
    # len(text) + len(prompt) / 2: "Q?" adds 1, "Why?" adds 2.
    assert [r["judge"] for r in rows] == [
        {"original": 3.0, "rewrite": 5.0, "rewritten rewrite": 4.0},
        {"original": 7.0, "rewrite": 3.0, "rewritten rewrite": 4.0},
    ]
    assert sys.modules["judge_len"].SEEN == [4, 2]  # six texts in batches of four


def test_input_concat_gives_the_function_prompt_and_response_as_one_text(user):
    module, template = user
    path = module("judge_cat", "def score(prompts, texts):\n    return [len(t) for t in texts]\n")
    template("judge_cat:score", input="concat")
    scorer = build_scorer(load_scoring_template("judge"))
    assert scorer.score(["Q?", "Why?"], ["ab", "y"]) == [4.0, 5.0]
    described = scorer.describe()
    assert described["function"] == "judge_cat:score"
    # The module's content: a scoring run resumed after an edit starts over.
    assert described["file_digest"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_validate_catches_a_bad_function_without_running_the_module(user, tmp_path):
    """Each module's top level writes a file and raises: validation must leave no trace."""
    module, template = user
    ran = tmp_path / "ran.txt"
    top = f"open({str(ran)!r}, 'w').write('ran')\nraise SystemExit('ran')\n"
    module("judge_top", top + "def other(prompts, texts):\n    return []\n")
    module("judge_one", top + "def score(texts):\n    return []\n")
    module("judge_pkg.__init__", top)
    module("judge_pkg.inner", top + "def score(prompts, texts, scale=1.0):\n    return []\n")
    for function, message in (
        (
            "no_such_judge_q:score",
            "key 'function': no module 'no_such_judge_q' on the Python path; add the folder "
            "that holds no_such_judge_q.py to PYTHONPATH",
        ),
        ("judge_top:score", "defines no function 'score' at its top level; add def score("),
        ("judge_top", "key 'function': 'judge_top': write 'module:function'"),
        ("judge_top:", "write 'module:function'"),
        ("judge top:score", "write 'module:function'"),
        ("judge_one:score", "judge_one.py:3: score takes 1 argument(s) but is called with 2"),
    ):
        template(function)
        with pytest.raises(TemplateError, match=re.escape(message)) as err:
            load_scoring_template("judge")
        assert "\n" not in str(err.value) and "judge.yaml" in str(err.value)
        assert dict((n, e) for k, n, e in validate_all() if k == "scoring")["judge"] is not None
    # A good one, in a package whose __init__ would also run: found by reading, not importing.
    template("judge_pkg.inner:score")
    assert load_scoring_template("judge").spec.function == "judge_pkg.inner:score"
    assert not ran.exists()
    assert not {"judge_top", "judge_one", "judge_pkg", "judge_pkg.inner"} & set(sys.modules)


def test_a_function_that_raises_is_one_line_naming_its_file_and_line(user, tmp_path):
    module, template = user
    path = module(
        "judge_raise",
        "import json\n"
        "def score(prompts, texts):\n"
        "    return [json.loads('{') if t.startswith('bad') else 1.0 for t in texts]\n",
    )
    template("judge_raise:score", batch_size=3)  # a batch per example
    with pytest.raises(TemplateError) as err:
        _score(tmp_path)
    message = str(err.value)
    assert "\n" not in message and "Traceback" not in message
    # The user's line, not json's; the first example of the failing batch.
    assert (
        "scoring function 'judge_raise:score' raised JSONDecodeError: Expecting property name "
        "enclosed in double quotes: line 1 column 2 (char 1) on the batch starting at example "
        f"1 (completion 'original') (at {path}:3); fix the function" in message
    )


def test_a_multiline_error_outside_the_stage_is_still_one_line(user):
    """Scored outside the stage (a scorer_above W rule), the batch is named by position."""
    module, template = user
    module(
        "judge_lines",
        "def score(prompts, texts):\n    raise ValueError('line one\\nline two')\n",
    )
    template("judge_lines:score")
    with pytest.raises(TemplateError) as err:
        build_scorer(load_scoring_template("judge")).score(["p"], ["t"])
    message = str(err.value)
    assert "\n" not in message
    assert (
        "raised ValueError: line one\\nline two on the batch starting at example #0 of" in message
    )


@pytest.mark.parametrize(
    ("body", "fault"),
    [
        ("[1.0] * (len(texts) - 1)", "returned 2 scores for 3 texts"),
        (
            "[float('nan') if t.startswith('bad') else 0.0 for t in texts]",
            "returned 1 non-finite score(s) (the first: nan, for the batch's text 0)",
        ),
        ("['high'] * len(texts)", "returned a score that is not a number ('high', the batch's"),
        ("None", "returned a NoneType, not a sequence of 3 numbers, for 3 texts"),
    ],
)
def test_wrong_scores_are_one_line_naming_the_function_and_the_batch(user, tmp_path, body, fault):
    module, template = user
    module("judge_wrong", f"def score(prompts, texts):\n    return {body}\n")
    template("judge_wrong:score", batch_size=3)
    with pytest.raises(TemplateError) as err:
        _score(tmp_path)
    message = str(err.value)
    assert "\n" not in message
    assert f"scoring function 'judge_wrong:score' {fault}" in message
    # The NaN is on example 1; the other faults are on the first batch.
    first = "1" if "nan" in body else "0"
    assert f"on the batch starting at example {first} (completion 'original')" in message


def test_a_module_that_raises_on_import_is_one_line_when_built(user):
    module, template = user
    module(
        "judge_boom", "raise RuntimeError('no key')\ndef score(prompts, texts):\n    return []\n"
    )
    template("judge_boom:score")
    t = load_scoring_template("judge")  # validating does not run it
    with pytest.raises(TemplateError, match="importing judge_boom raised RuntimeError: no key"):
        build_scorer(t)


class _Named(Scorer):
    name = "named"

    def score(self, prompts, responses, on_texts=None):  # pragma: no cover - not called
        return []


def test_checked_scores_tells_a_non_number_in_one_line():
    """main let float('x') through as a ValueError traceback."""
    with pytest.raises(RateError) as err:
        checked_scores(_Named(), 2, [1.0, "x"], "e7")
    assert str(err.value) == (
        "scorer 'named' returned a score that is not a number ('x', the batch's text 1) in "
        "the batch starting at example e7; check the model (dtype overflow?) and the texts"
    )
    assert checked_scores(_Named(), 2, (1, 2.5), "e7") == [1.0, 2.5]
