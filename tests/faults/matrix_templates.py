"""Scenarios of the failure matrix that run `rate` in this process: broken templates."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from tests.factories import SMOKE, english_examples, english_template
from tests.faults.harness import mini_sets
from tests.faults.scenarios import (
    Result,
    error,
    passed,
    project,
    rate,
    run_cli,
    scenario,
)

# -- templates -----------------------------------------------------------------------------------


def template(tmp: Path, name: str, data: dict, folder: str = "dataset_templates") -> None:
    (tmp / "templates" / folder).mkdir(parents=True, exist_ok=True)
    (tmp / "templates" / folder / f"{name}.yaml").write_text(yaml.safe_dump({"name": name, **data}))


def validate(tmp: Path, name: str) -> tuple[str, str]:
    """`rate validate` must fail on ``name`` and say why on its FAIL line."""
    res = run_cli(["validate"], RATE_TEMPLATE_PATH=str(tmp / "templates"))
    lines = res.out.splitlines()
    for i, line in enumerate(lines):
        if line.split()[-1:] == [name] and line.startswith("FAIL"):
            detail = lines[i + 1].strip() if i + 1 < len(lines) else ""
            return "ok", detail[:200]
    return "defect", f"rate validate passed {name} (rc {res.rc})"


def mini_data(**change) -> dict:
    base = yaml.safe_load(
        (
            Path(__file__).parent.parent.parent
            / "src"
            / "tinyworld"
            / "templates"
            / "dataset_templates"
            / "tinyrlhf_dune_pa.yaml"
        ).read_text()
    )
    base.pop("name")
    return {**base, **change}


for what, change, fragment in (
    (
        "unknown W rule",
        {"w_classifier": {"rule": "token_swapp", "token": "pa"}},
        "did you mean 'token_swap'",
    ),
    (
        "misspelt rewriter option",
        {"rewriter": {"backend": "tinyrlhf", "edit_rat": 0.1}},
        "rewriter.edit_rate",
    ),
    (
        "prompt without a placeholder",
        {"rewrite_prompt": "Make it {w_counterfactual_string}"},
        "{original_completion}",
    ),
    ("w_strings without w=0", {"w_strings": {"w=1": "a"}}, "'w=1' and 'w=0'"),
    ("n_examples as text", {"n_examples": "many"}, "expected an integer"),
    (
        "unknown rewriter backend",
        {"rewriter": {"backend": "openai_batchh"}},
        "did you mean 'openai_batch'",
    ),
    ("include of a missing file", {"include": "nothere.yaml"}, "key 'include': no such file"),
    (
        "api_key_env holding a key",
        {"rewriter": {"backend": "openai_chat", "model": "m", "api_key_env": "sk-live-1234567890"}},
        "NAME of an environment variable",
    ),
    (
        "base_url without a scheme",
        {"rewriter": {"backend": "openai_chat", "model": "m", "base_url": "127.0.0.1:8000/v1"}},
        "http(s) URL",
    ),
    (
        "temperature out of range",
        {"rewriter": {"backend": "openai_chat", "model": "m", "temperature": 3}},
        "must be >= 0 and <= 2",
    ),
    (
        "rewrite_check scorer unknown",
        {"rewrite_check": {"scorer": "vadr", "threshold": 0.0}},
        "rewrite_check",
    ),
    (
        "python hook: no module",
        {"w_classifier": {"rule": "python", "function": "no_such_mod_q:w"}},
        "no module 'no_such_mod_q'",
    ),
    (
        "python hook: not module:function",
        {"w_classifier": {"rule": "python", "function": "justaname"}},
        "'module:function'",
    ),
):

    @scenario("templates", what, f"rate validate fails it: {fragment}")
    def _(tmp, change=change, fragment=fragment):
        template(tmp, "broken", mini_data(**change))
        verdict, observed = validate(tmp, "broken")
        if verdict == "ok" and fragment not in observed:
            return "unclear", f"lacks {fragment!r}: {observed}"
        if "sk-live" in observed:
            return "leak", observed
        return verdict, observed


@scenario(
    "templates",
    "python hook: module lacks the function",
    "rate validate fails it without running the module",
)
def _(tmp):
    (tmp / "hooks").mkdir()
    (tmp / "hooks" / "hookmod_a.py").write_text(
        "raise SystemExit('ran')\ndef other(e):\n    return True\n"
    )
    template(tmp, "hooked", mini_data(w_classifier={"rule": "python", "function": "hookmod_a:w"}))
    sys.path.insert(0, str(tmp / "hooks"))  # as PYTHONPATH would
    try:
        verdict, observed = validate(tmp, "hooked")
    finally:
        sys.path.remove(str(tmp / "hooks"))
    return (verdict, observed) if "defines no function 'w'" in observed else ("unclear", observed)


@scenario("templates", "template YAML broken", "FAIL with the file and line")
def _(tmp):
    (tmp / "templates" / "dataset_templates").mkdir(parents=True)
    (tmp / "templates" / "dataset_templates" / "bad.yaml").write_text("name: bad\nsource: [\n")
    verdict, observed = validate(tmp, "bad")
    return (verdict, observed) if "bad.yaml:" in observed else ("unclear", observed)


@scenario("templates", "template name differs from its file", "FAIL: they must agree")
def _(tmp):
    template(tmp, "a", mini_data())
    (tmp / "templates" / "dataset_templates" / "a.yaml").write_text(
        yaml.safe_dump({"name": "b", **mini_data()})
    )
    return validate(tmp, "a")


@scenario("templates", "include loop", "FAIL: names the loop")
def _(tmp):
    template(tmp, "x", {"include": "y"})
    template(tmp, "y", {"include": "x"})
    verdict, observed = validate(tmp, "x")
    return (verdict, observed) if "loop" in observed else ("unclear", observed)


for what, data, fragment in (
    (
        "unknown scoring backend",
        {"reward_key": "k", "backend": "vaderr"},
        "key 'backend': unknown backend 'vaderr'; did you mean 'vader'",
    ),
    (
        "misspelt key of a vader template",
        {"reward_key": "k", "backend": "vader", "modle": "m"},
        "Valid keys: name, reward_key, backend",
    ),
    (
        "misspelt key of an HF template",
        {"reward_key": "k", "backend": "hf_classifier", "modle": "m"},
        "did you mean 'model'",
    ),
    (
        "scoring template without reward_key",
        {"backend": "vader"},
        "missing required key 'reward_key'",
    ),
    (
        "scoring batch_size 0",
        {"reward_key": "k", "backend": "vader", "batch_size": 0},
        "'batch_size' must be >= 1",
    ),
    (
        "HF dtype unknown",
        {"reward_key": "k", "backend": "hf_classifier", "model": "m", "dtype": "fp8"},
        "key 'dtype'",
    ),
    (
        "VADER max_chars out of range",
        {"reward_key": "k", "backend": "vader", "max_chars": 5},
        "max_chars",
    ),
):

    @scenario("templates", what, f"FAIL: {fragment}")
    def _(tmp, data=data, fragment=fragment):
        template(tmp, "s_bad", data, "scoring_templates")
        verdict, observed = validate(tmp, "s_bad")
        return (verdict, observed) if fragment in observed else ("unclear", observed)


@scenario(
    "templates",
    "a template of the current folder shadows a shipped one",
    "the log names both files",
)
def _(tmp):
    project(tmp, rewrites=english_examples(12))
    (tmp / "cwd" / "scoring_templates").mkdir(parents=True)
    (tmp / "cwd" / "scoring_templates" / "vader.yaml").write_text(
        yaml.safe_dump({"name": "vader", "reward_key": "vader", "backend": "vader"})
    )
    res = run_cli(
        ["score_dataset", "--config", str(SMOKE), *mini_sets(12)],
        cwd=tmp / "cwd",
        PROJECT_DIR=str(tmp / "p"),
        RATE_TEMPLATE_PATH=str(tmp / "templates"),
    )
    return passed(
        res.rc == 0 and "shadows" in res.err,
        next((x for x in res.err.splitlines() if "shadows" in x), res.last)[-160:],
        "unclear",
    )


def _hook_run(tmp: Path, body: str) -> Result:
    (tmp / "templates").mkdir(parents=True, exist_ok=True)
    (tmp / "templates" / "hookmod_b.py").write_text(body)
    english_template(
        tmp / "templates", "mini", n=12, w_classifier={"rule": "python", "function": "hookmod_b:w"}
    )
    (tmp / "p").mkdir(exist_ok=True)
    sys.path.insert(0, str(tmp / "templates"))
    sys.modules.pop("hookmod_b", None)
    try:
        return rate(tmp, "create_dataset")
    finally:
        sys.path.remove(str(tmp / "templates"))


@scenario(
    "templates", "python hook raises", "one line: the template, the example, the hook's file:line"
)
def _(tmp):
    return error(
        _hook_run(tmp, "def w(example):\n    return 1 / 0\n"),
        "mini.yaml",
        "raised ZeroDivisionError",
        "hookmod_b.py:2",
    )


@scenario("templates", "python hook returns a string", "one line: must return True, False or None")
def _(tmp):
    return error(
        _hook_run(tmp, "def w(example):\n    return 'yes'\n"), "must return True, False or None"
    )


@scenario("templates", "python hook's module raises on import", "one line naming the module")
def _(tmp):
    return error(
        _hook_run(tmp, "def w(example):\n    return True\nraise ValueError('broken module')\n"),
        "importing hookmod_b raised ValueError",
    )
