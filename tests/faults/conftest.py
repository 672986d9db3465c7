"""The clean run the kill and full-disk tests compare with: every stage once, no fault."""

from __future__ import annotations

import shutil
import time

import pytest

from tests.faults.harness import FIXED_STAMP, STAGES, Project, content

N = 60  # examples: enough for every stage to have a middle to be killed in, small enough for CI


@pytest.fixture(scope="session")
def clean(tmp_path_factory) -> dict:
    """The project before each stage (``states``), each stage's output (``outputs``, as
    :func:`content` gives it), how long it took (``seconds``), the bytes of its output and
    record (``sizes``) and of its data alone (``data``)."""
    where = tmp_path_factory.mktemp("clean")
    project = Project.make(where / "ref", n=N)
    states, outputs, seconds, sizes, data = {}, {}, {}, {}, {}
    for stage in STAGES:
        states[stage] = where / f"before_{stage}"
        shutil.copytree(project.root, states[stage], symlinks=True)
        start = time.monotonic()
        done = project.run(stage, RATE_TEST_FIXED_STAMP=FIXED_STAMP)
        seconds[stage] = time.monotonic() - start
        assert done.returncode == 0, done.stderr
        (out,) = project.outputs(stage)
        outputs[stage] = content(out, project)
        files = (
            [p for p in out.rglob("*") if p.is_file()]
            if out.is_dir()
            else [out, out.with_name(out.name + ".meta.json")]
        )
        sizes[stage] = sum(p.stat().st_size for p in files)
        data[stage] = out.stat().st_size if out.is_file() else sizes[stage]
    return {
        "project": project,
        "states": states,
        "outputs": outputs,
        "seconds": seconds,
        "sizes": sizes,
        "data": data,
    }
