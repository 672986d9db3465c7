"""Scenarios of the failure matrix for the shared guards (issue 45): outputs over inputs,
multi-file sets, secrets in URLs, reuse keyed on what a step is made from, duplicates, the API
against the stage, non-finite numbers, the settings schema, permissions, the world's build
lock, and the messages that ended in a traceback."""

from __future__ import annotations

import json
import math
import os
import shutil
import stat
import subprocess
import sys
import time

import yaml

from tests.factories import put, scored_rows
from tests.faults.matrix_access import _world
from tests.faults.scenarios import EFFECTS, error, passed, project, rate, run_cli, scenario
from tests.helpers import ROOT

# -- outputs never replace inputs; multi-file outputs are one set --------------------------------


@scenario("guards", "results --out over an effect file it reads", "refused; the file kept")
def _(tmp):
    root = project(tmp, scored=scored_rows(20, key="vader"))
    assert rate(tmp, "treatment_effects").rc == 0
    (effect,) = [p for p in (root / "effects").glob("*.json") if not p.name.endswith(".meta.json")]
    before = effect.read_bytes()
    res = run_cli(["results", "--out", str(effect)], PROJECT_DIR=str(root))
    if effect.read_bytes() != before:
        return "data-loss", "the effect file was overwritten"
    return error(res, "would write over", "choose another --out")


@scenario("guards", "assess with an audit whose .png is another run's", "refused before work")
def _(tmp):
    from rate.filesets import write_set

    audit = tmp / "a.json"
    write_set(audit, {"candidates": []}, {tmp / "a.png": b"new"})
    (tmp / "a.png").write_bytes(b"a previous run's figure")
    res = run_cli(["world", "assess", "--world", str(tmp / "w"), "--audit", str(audit),
                   "--out", str(tmp / "out")])  # fmt: skip
    return error(res, "a.png beside it is not the one written with it")


@scenario("guards", "certify --out over an audit's JSON", "refused; the audit kept")
def _(tmp):
    from rate.filesets import write_set, written_by

    audit = tmp / "a.json"
    with written_by("rate world audit"):
        write_set(audit, {"candidates": []}, {tmp / "a.md": b"# audit"})
    before = audit.read_bytes()
    res = run_cli(["world", "certify", "--world", str(tmp / "w"), "--policy", str(tmp / "p"),
                   "--out", str(tmp / "a")])  # fmt: skip
    if audit.read_bytes() != before:
        return "data-loss", "the audit's JSON was overwritten"
    return error(res, "which another command wrote", "choose another --out")


# -- secrets in any part of a URL ----------------------------------------------------------------


@scenario("guards", "a key in base_url's query string", "never in a stream or a log")
def _(tmp):
    from tests.factories import english_template

    secret = "sk-matrix-query-5e1c"
    english_template(tmp / "templates", "chatty", n=4, rewriter={
        "backend": "openai_chat", "model": "m", "max_retries": 0, "retry_base_s": 0.001,
        "base_url": f"http://127.0.0.1:9/v1?api-key={secret}", "api_key_env": "LLM_KEY",
    })  # fmt: skip
    res = rate(tmp, "create_dataset", "rewrites.dataset_name=chatty", LLM_KEY="k-1234")
    logs = "".join(p.read_text() for p in (tmp / "p").rglob("*.log"))
    if secret in res.out + res.err + logs:
        return "leak", "the key was printed or logged"
    return passed(res.rc != 0 and "api-key=***" in res.err + logs, res.last[:150], "unclear")


# -- reuse keyed on what a step is made from -----------------------------------------------------


@scenario("guards", "sweep after its world is rebuilt in place", "the world's steps redone")
def _(tmp):
    from rate.store import Layout
    from rate.sweep.grid import Sweep
    from rate.sweep.steps import State

    world = tmp / "world"
    (world / "reward_model").mkdir(parents=True)
    (world / "reward_model" / "rm.safetensors").write_bytes(b"first")
    grid = tmp / "g.yaml"
    grid.write_text(
        yaml.safe_dump(
            {
                "name": "g",
                "smoke": True,
                "scorers": ["tinyrlhf_rm"],
                "datasets": {"tinyrlhf_dune_pa": {"concept": "dune_pa"}},
            }
        )
    )
    os.environ.update(RATE_WORLD=str(world), PROJECT_DIR=str(tmp / "p"))
    try:
        state = State(Sweep(grid), Layout.from_env())
        step = state.steps["score:tinyrlhf_dune_pa:tinyrlhf_rm"]
        before = state.made_from(step)
        (world / "reward_model" / "rm.safetensors").write_bytes(b"rebuilt")
        changed = before != state.made_from(step)
    finally:
        os.environ.pop("RATE_WORLD"), os.environ.pop("PROJECT_DIR")
    return passed(changed, f"made-from record changed: {changed}", "data-loss")


@scenario("guards", "a grid's set: smoke_test", "refused: the grid's smoke: says it")
def _(tmp):
    grid = tmp / "g.yaml"
    grid.write_text(
        yaml.safe_dump(
            {
                "name": "g",
                "scorers": ["vader"],
                "set": {"smoke_test": True},
                "datasets": {"drugreview_length": {"concept": "length"}},
            }
        )
    )
    return error(run_cli(["sweep", str(grid), "--plan"], PROJECT_DIR=str(tmp / "p")),
                 "set.smoke_test")  # fmt: skip


# -- duplicates, the API against the stage, non-finite numbers -----------------------------------


@scenario("guards", "a scored file that repeats an index", "refused naming both lines")
def _(tmp):
    rows = scored_rows(20, key="vader")
    project(tmp, scored=[*rows, rows[3]])
    return error(rate(tmp, "treatment_effects"), "repeats index")


@scenario("guards", "the API and the stage on all W = 1", "no ATE from either")
def _(tmp):
    import rate as api

    rows = [{**r, "w_original": True} for r in scored_rows(20, key="vader")]
    project(tmp, scored=rows)
    res = rate(tmp, "treatment_effects")
    frame = api.load_scored(tmp / "p" / "data" / "scored" / EFFECTS, "vader")
    ate = api.estimate(frame)["ATE_rewritten_rewrite"]
    return passed(res.rc == 0 and math.isnan(ate), f"stage rc {res.rc}, API ATE {ate}")


@scenario("guards", "rl --set kl_coef=NaN", "refused before work; no run folder")
def _(tmp):
    out = tmp / "run"
    res = run_cli(["world", "rl", "--world", str(_world()), "--out", str(out),
                   "--set", "kl_coef=NaN"])  # fmt: skip
    if out.exists():
        return "defect", "a run folder was written"
    return error(res, "kl_coef")


@scenario("guards", "rl --set lr=1e10", "stops non-finite; no checkpoint published")
def _(tmp):
    out = tmp / "run"
    res = run_cli(["world", "rl", "--world", str(_world()), "--out", str(out), "--set", "lr=1e10",
                   "--set", "steps=4", "--set", "log_every=1"])  # fmt: skip
    if (out / "checkpoint").exists():
        return "data-loss", "an all-NaN checkpoint published as a finished run"
    return error(res, "non-finite")


@scenario("guards", "results --format json with an infinite value", "strict JSON (no Infinity)")
def _(tmp):
    effect = tmp / "p" / "effects" / "e_treatment_effects.json"
    put(effect, {"naive_effect": 1e308, "reward_std": 1e-300, "dataset_name": "d"}, meta=False)
    res = run_cli(["results", str(effect), "--format", "json"], PROJECT_DIR=str(tmp / "p"))
    try:
        json.loads(res.out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except ValueError as err:
        return "defect", f"not JSON: {err}"
    return passed(res.rc == 0, "strict JSON")


# -- the settings schema -------------------------------------------------------------------------

for what, argv, fragment in (
    ("effects.n_bootstrap=10**12", ["treatment_effects", "--set", "effects.n_bootstrap=1000000000000"], "n_bootstrap"),
    ("audit alpha=2", ["world", "audit", "--set", "alpha=2"], "alpha"),
    ("audit margin=-1", ["world", "audit", "--set", "margin=-1"], "margin"),
    ("audit pair_statistic=foo", ["world", "audit", "--set", "pair_statistic=foo"], "pair_statistic"),
    ("audit n_token=0", ["world", "audit", "--set", "n_token=0"], "n_token"),
    ("audit style_map with an unknown syllable", ["world", "audit", "--set", 'style_map={"zz": "ka"}'], "style_map"),
    ("a negative seed", ["treatment_effects", "--set", "effects.bootstrap_seed=-1"], "bootstrap_seed"),
    ("audit --no-gold --gold F", ["world", "audit", "--no-gold", "--gold", "g.jsonl"], "--no-gold"),
):  # fmt: skip

    @scenario("guards", what, "one line naming the key, before any work")
    def _(tmp, argv=argv, fragment=fragment):
        if argv[0] == "world":
            argv = [*argv[:2], "--world", str(tmp / "w"), "--out", str(tmp / "a.json"), *argv[2:]]
            start = time.monotonic()
            res = run_cli(argv, PROJECT_DIR=str(tmp / "p"))
            if time.monotonic() - start > 10:
                return "unclear", "ran on for more than 10 s"
            return error(res, fragment)
        project(tmp, scored=scored_rows(12, key="vader"))
        return error(rate(tmp, argv[0], *argv[2::2]), fragment)


@scenario("guards", "API arguments of the wrong type", "one line naming the argument")
def _(tmp):
    import rate as api
    from rate.errors import ConfigError

    seen = []
    for given in ({"n_bootstrap": "100"}, {"level": "0.9"}, {"n_bootstrap": 10**8}):
        try:
            api.compute_effects(w=[1, 0], original=[1.0, 2], rewrite=[2.0, 1],
                                rewritten_rewrite=[1.0, 2], **given)  # fmt: skip
            return "defect", f"{given} taken"
        except ConfigError as err:
            seen.append(str(err).split(" ")[0])
        except Exception as err:  # noqa: BLE001 (what the scenario is about)
            return "unclear", f"{type(err).__name__}: {err}"
    return "ok", ", ".join(seen)


# -- permissions and the build lock -------------------------------------------------------------


@scenario("guards", "weights under umask 022", "0644, like the files beside them")
def _(tmp):
    from tinyworld.models import save_model
    from tinyworld.policy import Policy, PolicyConfig

    old = os.umask(0o022)
    try:
        save_model(Policy(PolicyConfig(d_model=8, n_head=2, d_ff=16, n_layer=1)), tmp / "p")
    finally:
        os.umask(old)
    mode = stat.S_IMODE((tmp / "p" / "policy.safetensors").stat().st_mode)
    return passed(mode == 0o644, f"{mode:o}")


@scenario("guards", "two runs needing one world at once", "built once, the second reuses it")
def _(tmp):
    code = ("import dataclasses, logging, sys; from pathlib import Path\n"
            "logging.basicConfig(level=logging.INFO)\n"
            "from tinyworld.build import ensure_world\n"
            "from tinyworld.worldconfig import load_world_config\n"
            "c = dataclasses.replace(load_world_config(small=True), runs=[])\n"
            "ensure_world(Path(sys.argv[1]), config=c)\n")  # fmt: skip
    env = {**os.environ, "RATE_PROGRESS": "0", "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    runs = [subprocess.Popen([sys.executable, "-c", code, str(tmp / "w")], env=env,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]  # fmt: skip
    logs = [r.communicate(timeout=600)[1] for r in runs]
    built = sum("building the tiny RLHF world" in x for x in logs)
    ok = [r.returncode for r in runs] == [0, 0] and built == 1
    return passed(ok, f"return codes {[r.returncode for r in runs]}, built {built} time(s)")


@scenario("guards", "two commands given one --out at once", "the second stops, naming the first")
def _(tmp):
    from rate.errors import BusyError
    from rate.provenance import folder_lock

    out = tmp / "r.json"  # the first command holds its lock (another descriptor, as a process)
    with folder_lock(tmp, lambda pid: BusyError(pid), name=".r.json.out.lock"):
        res = run_cli(["results", "--out", str(out)], PROJECT_DIR=str(tmp / "p"))
    if out.exists():
        return "defect", "the second command wrote the output"
    return error(res, "another rate command (pid", "choose another --out")


@scenario("guards", "a numeric flag set to NaN, -1 or 1e30", "the parser refuses it, naming it")
def _(tmp):
    bad = [("world", "tilt", "--beta", "nan"), ("world", "study", "coverage", "--seeds", "-1"),
           ("world", "certify", "--replicates", "1e30"), ("sweep", "--poll", "inf")]  # fmt: skip
    for argv in bad:
        res = run_cli([*argv], PROJECT_DIR=str(tmp / "p"))
        last = (res.err.strip().splitlines() or [""])[-1]
        if res.rc != 2 or f"argument {argv[-2]}" not in last or "got" not in last:
            return "unclear", f"{' '.join(argv)}: {last[-120:]}"
    written = [p for p in tmp.rglob("*")]
    return passed(not written, f"{len(bad)} commands refused, nothing written")


# -- messages that ended in a traceback ----------------------------------------------------------


@scenario("guards", "JSON nested 100,000 deep in a scored line", "one line, no crash")
def _(tmp):
    project(tmp, scored=scored_rows(12, key="vader"))
    path = tmp / "p" / "data" / "scored" / EFFECTS
    with path.open("a") as f:
        f.write('{"index": "x", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    return error(rate(tmp, "treatment_effects"), "nested too deeply")


@scenario("guards", "an effect file with intervals: 'oops'", "one line naming the key")
def _(tmp):
    effect = tmp / "p" / "effects" / "e_treatment_effects.json"
    put(effect, {"naive_effect": 1.0, "intervals": "oops"}, meta=False)
    return error(run_cli(["results", str(effect)], PROJECT_DIR=str(tmp / "p")), "intervals")


@scenario("guards", "a remote-code model folder", "one line saying why")
def _(tmp):
    folder = tmp / "remote"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "x", "auto_map": {"a": "b"}}))
    project(tmp, rewrites=None, scored=scored_rows(12, key="vader"))
    res = rate(tmp, "score_dataset", f"scoring.model={folder}", "scoring.dataset_folder=scored")
    return error(res, "auto_map")


@scenario("guards", "a 100-deep include chain", "one line from rate validate")
def _(tmp):
    folder = tmp / "t" / "dataset_templates"
    folder.mkdir(parents=True)
    for i in range(100):
        (folder / f"c{i}.yaml").write_text(f"name: c{i}\ninclude: c{i + 1}\n")
    shutil.copy(ROOT / "dataset_templates" / "drugreview_length.yaml",
                folder / "c100.yaml")  # fmt: skip
    res = run_cli(["validate"], RATE_TEMPLATE_PATH=str(tmp / "t"), PROJECT_DIR=str(tmp / "p"))
    text = res.out + res.err
    return passed("Traceback" not in text and "chains more than 32" in text,
                  "named the chain" if "chains more" in text else text[-150:], "unclear")  # fmt: skip


@scenario("guards", "a hub model id offline without HF_HUB_OFFLINE", "fails within 5 s, advises")
def _(tmp):
    project(tmp, scored=scored_rows(12, key="vader"))
    start = time.monotonic()
    res = rate(tmp, "score_dataset", "scoring.model=some-org/some-rm", "scoring.dataset_folder=scored",
               HF_HUB_OFFLINE="", HF_ENDPOINT="https://hub.invalid")  # fmt: skip
    seconds = time.monotonic() - start
    if seconds > 5:
        return "unclear", f"{seconds:.1f} s"
    return error(res, "local folder")


@scenario("guards", "a scored file that is not UTF-8", "both readers refuse it")
def _(tmp):
    project(tmp, scored=scored_rows(12, key="vader"))
    path = tmp / "p" / "data" / "scored" / EFFECTS
    path.write_bytes(path.read_bytes().replace(b'"', b'"\xff', 1))
    return error(rate(tmp, "treatment_effects"), "not UTF-8")
