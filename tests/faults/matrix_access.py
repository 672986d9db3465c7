"""Scenarios of the failure matrix about access: secrets at a local OpenAI-compatible server,
GROUP_NAME on the folders of every stage, and the RL run directories (with --world)."""

from __future__ import annotations

import contextlib
import functools
import grp
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

from rate.errors import RateError
from tests.factories import english_template
from tests.fakes.openai_server import FakeOpenAIServer
from tests.faults.harness import (
    STAGES,
    Project,
)
from tests.faults.matrix_runs import CANARY
from tests.faults.scenarios import passed, scenario
from tinyworld.rl import train_rl
from tinyworld.rl_config import load_rl_config

# -- secrets -------------------------------------------------------------------------------------


def _leaks(canary: str, root: Path, *texts: str) -> list[str]:
    found = [f"stream {i}" for i, t in enumerate(texts) if canary in t]
    return found + [
        str(p) for p in root.rglob("*") if p.is_file() and canary.encode() in p.read_bytes()
    ]


def _chat(
    tmp: Path,
    server: FakeOpenAIServer,
    base_url: str | None = None,
    env_name: str = "LLM_CREDENTIALS",
    **env,
):
    english_template(
        tmp / "templates",
        "mini",
        n=4,
        rewriter={
            "backend": "openai_chat",
            "model": "m",
            "base_url": base_url or server.base_url,
            "api_key_env": env_name,
            "max_retries": 1,
            "retry_base_s": 0.001,
        },
    )
    project = Project(tmp / "p", tmp / "templates", 4)
    project.root.mkdir()
    return project, project.run("create_dataset", **{env_name: CANARY, **env})


for what, fault, env_name in (
    (
        "a 400 echoing the key of LLM_CREDENTIALS",
        {"status": 400, "message": f"bad key {CANARY}"},
        "LLM_CREDENTIALS",
    ),
    (
        "a 400 echoing the Authorization header",
        {"status": 400, "message": f"got Authorization: Bearer {CANARY}"},
        "LLM_CREDENTIALS",
    ),
    (
        "a 403 echoing the key of OPENAI_API_KEY",
        {"status": 403, "message": f"key {CANARY} lacks access"},
        "OPENAI_API_KEY",
    ),
    (
        "5xx to the end, echoing the key",
        {"status": 500, "message": f"overloaded for {CANARY}"},
        "MY_CREDS",
    ),
    (
        "a 401 for the key",
        {"status": 401, "message": f"Incorrect API key provided: {CANARY}"},
        "LLM_CREDENTIALS",
    ),
):

    @scenario("secrets", what, "one clear line; the key in no stream, log or file")
    def _(tmp, fault=fault, env_name=env_name):
        with FakeOpenAIServer() as server:
            # Twice for each request: a 5xx fails its retry too (max_retries 1)
            server.add_faults(*[fault] * (2 if fault["status"] < 500 else 40))
            project, done = _chat(tmp, server, env_name=env_name)
        found = _leaks(CANARY, project.root, done.stdout, done.stderr)
        if found:
            return "leak", f"found in {found[:3]}"
        # Requests already on the wire when the first failed finish in the background (and
        # are dropped), so their log lines may follow the error: the error line is found.
        lines = done.stderr.strip().splitlines()
        errors = [x for x in lines if x.startswith("rate: error:")]
        last = errors[-1] if errors else (lines[-1] if lines else "")
        after = len(lines) - 1 - lines.index(last) if errors else 0
        return passed(
            done.returncode == 2 and len(errors) == 1 and "HTTP" in last and len(last) < 600,
            last[13:150] + (f" (then {after} log lines of requests in flight)" if after else ""),
            "unclear",
        )


@scenario("secrets", "credentials inside base_url", "not in the .meta.json, logs or streams")
def _(tmp):
    with FakeOpenAIServer() as server:
        host = server.base_url.split("://", 1)[1]
        project, done = _chat(tmp, server, base_url=f"http://user:{CANARY}@{host}")
    found = _leaks(CANARY, project.root, done.stdout, done.stderr)
    if found:
        return "leak", f"found in {found[:3]}"
    return passed(done.returncode == 0, "rc 0, base_url recorded as http://***@...")


# -- permissions ---------------------------------------------------------------------------------


def _group() -> str | None:
    ours = os.getgid()
    for g in grp.getgrall():
        if g.gr_gid != ours and (os.geteuid() == 0 or g.gr_gid in os.getgroups()):
            return g.gr_name
    return None


for stage, folders in (
    ("create_dataset", ("data", "data/rewrites", "logs")),
    ("score_dataset", ("data/scored", "data/scored/.partial")),
    ("treatment_effects", ("effects",)),
    ("plot", ("plots",)),
):

    @scenario(
        "permissions", f"GROUP_NAME, umask 077: folders {stage} makes", "the group and g+rx on each"
    )
    def _(tmp, stage=stage, folders=folders):
        group = _group()
        if group is None:
            return "skipped", "no second group to use"
        project = Project.make(tmp, n=12)
        old = os.umask(0o077)
        try:
            for s in STAGES[: STAGES.index(stage) + 1]:
                done = project.run(s, GROUP_NAME=group)
                if done.returncode:
                    return "defect", done.stderr.strip().splitlines()[-1]
        finally:
            os.umask(old)
        paths = [project.root / f for f in folders]
        if stage == "plot":
            paths += project.outputs("plot")
        gid = grp.getgrnam(group).gr_gid
        bad = [
            f"{p.relative_to(project.root)} {stat.filemode(p.stat().st_mode)} gid {p.stat().st_gid}"
            for p in paths
            if p.stat().st_gid != gid or p.stat().st_mode & 0o050 != 0o050
        ]
        return passed(
            not bad, f"{len(paths)} folders {group}, g+rx" if not bad else f"not shared: {bad}"
        )


# -- RL run directories (need a world) -----------------------------------------------------------


@functools.cache
def _world() -> Path:
    """--world, or the packaged small world built once (about 15 s)."""
    value = os.environ.get("RATE_MATRIX_WORLD")
    if value:
        return Path(value)
    from tinyworld.build import build_world
    from tinyworld.worldconfig import load_world_config

    out = Path(tempfile.mkdtemp(prefix="rate-matrix-world-")) / "world"
    build_world(load_world_config(small=True), out)
    return out


@scenario(
    "rl", "rl --overwrite over a killed run", "none of the killed run's checkpoints/step_* left"
)
def _(tmp):
    world = _world()
    out = tmp / "run"
    (out / "checkpoints").mkdir(parents=True)
    shutil.copytree(world / "policy", out / "checkpoints" / "step_000010")
    (out / "run_config.json").write_text("{}")
    train_rl(load_rl_config(None, ["steps=1", "batch_prompts=2"]), world, out, overwrite=True)
    left = sorted(p.name for p in out.iterdir())
    return passed(
        left == ["checkpoint", "log.jsonl", "run_config.json"], f"left {left}", "data-loss"
    )


@scenario(
    "rl",
    "rl after a wrapper failed at step 1",
    "the rerun replaces the unfinished run without --overwrite",
)
def _(tmp):
    world = _world()
    wrapper = tmp / "w.py"
    wrapper.write_text(
        "def transform(records, tokens, rewards):\n    if len(records) > 4:\n        raise ValueError('x')\n    return rewards\n"
    )
    base = ["steps=1", "batch_prompts=4", "samples_per_prompt=2"]
    with contextlib.suppress(RateError):  # the failure this scenario is about
        train_rl(
            load_rl_config(None, [*base, f"reward_wrapper={json.dumps(str(wrapper))}"]),
            world,
            tmp / "run",
        )
    try:
        train_rl(load_rl_config(None, base), world, tmp / "run")
    except RateError as err:
        return "defect", str(err)[:150]
    return passed((tmp / "run" / "checkpoint").is_dir(), "replaced; checkpoint/ written")
