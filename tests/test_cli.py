"""How `rate` ends a failed run: one line on stderr, and the same line (with the traceback of
a bug) at the end of the run's log, secrets redacted either way."""

from __future__ import annotations

import errno
import json
import logging
import subprocess
import sys

import pytest

from rate import cli, pipeline
from rate.errors import RateError
from rate.settings import register_secret_names
from tests.factories import SMOKE
from tests.helpers import ROOT


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("PROJECT_DIR", str(tmp_path))
    root = logging.getLogger()
    handlers = list(root.handlers)
    yield tmp_path
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()


def run(*args: str) -> int:
    return cli.main(["treatment_effects", "--config", str(SMOKE), *args])


def the_log(project) -> str:
    (path,) = (project / "logs").glob("treatment_effects_*.log")
    return path.read_text()


def test_a_failed_run_ends_its_log_with_the_error(project, capsys):
    """main's log of a failed run never got the error: it looked like a run in progress."""
    assert run("--set", "effects.dataset_name=nothing_here") == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("rate: error: dataset_filename 'latest': no smoke-test file")
    last = the_log(project).rstrip("\n").splitlines()[-1]
    assert last.startswith("rate: error: dataset_filename 'latest': no smoke-test file")


def test_a_bug_gives_its_traceback_in_the_log_and_a_line_to_report(project, capsys, monkeypatch):
    def boom(config, layout):
        raise RuntimeError("boom")

    monkeypatch.setattr(pipeline, "treatment_effects", boom)
    assert run() == 1
    err = capsys.readouterr().err
    assert "RuntimeError: boom" in err and err.rstrip().endswith("please report it with the log)")
    text = the_log(project)
    assert "Traceback (most recent call last)" in text and "RuntimeError: boom" in text
    assert "rate: error: an unexpected error" in text


def test_a_full_disk_is_one_line_without_a_traceback(project, capsys, monkeypatch):
    def full(config, layout):
        raise OSError(errno.ENOSPC, "No space left on device", str(project / "effects" / "e.json"))

    monkeypatch.setattr(pipeline, "treatment_effects", full)
    assert run() == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    err = err.splitlines()[-1]  # after the run's first log line
    assert err.startswith(f"rate: error: cannot write {project / 'effects' / 'e.json'}: No space")
    assert "free space" in err


def test_errors_are_redacted_on_stderr_and_in_the_log(project, capsys, monkeypatch):
    monkeypatch.setenv("LLM_CREDENTIALS", "canary-7d1e-credential")
    register_secret_names("LLM_CREDENTIALS")

    def leak(config, layout):
        raise RateError(
            "the server said: bad key canary-7d1e-credential (Authorization: Bearer x1)"
        )

    monkeypatch.setattr(pipeline, "treatment_effects", leak)
    assert run() == 2
    err = capsys.readouterr().err
    for text in (err, the_log(project)):
        assert "canary-7d1e" not in text and "x1)" not in text
        assert "the server said: bad key ***" in text


def loaded(code: str) -> list[str]:
    """The heavy libraries in sys.modules after running ``code`` in a fresh interpreter."""
    code += (
        "\nprint(json.dumps(sorted(m for m in ('torch', 'transformers', 'matplotlib', "
        "'datasets') if m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import json, sys\n" + code],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_the_command_and_the_stages_load_without_heavy_libraries():
    """`rate --help` imports neither torch, transformers, matplotlib nor datasets (registering
    the subcommands; main loaded torch for every command: 5 s on a busy node); score_dataset,
    treatment_effects and plots never need torch."""
    assert loaded("import rate.cli; rate.cli.build_parser()") == []
    assert "torch" not in loaded("import rate.cli, rate.pipeline; rate.cli.build_parser()")


@pytest.mark.parametrize(
    ("argv", "rest", "level"),
    [
        (["validate"], ["validate"], "INFO"),
        (["-v", "validate"], ["validate"], "DEBUG"),
        (["validate", "-v"], ["validate"], "DEBUG"),
        (
            ["treatment_effects", "--set", "effects.level=0.9", "-q"],
            ["treatment_effects", "--set", "effects.level=0.9"],
            "WARNING",
        ),  # fmt: skip
        (["-q", "config", "--verbose"], ["config"], "DEBUG"),  # the last one wins
        (["config", "--", "-v"], ["config", "--", "-v"], "INFO"),  # after --: an argument
    ],
)
def test_verbose_and_quiet_are_taken_anywhere_on_the_line(argv, rest, level):
    assert cli.split_loudness(argv) == (rest, level)


def test_quiet_silences_the_info_lines(project, capsys):
    assert cli.main(["config", "-q"]) == 0
    assert logging.getLogger().level == logging.WARNING
    assert cli.main(["config"]) == 0
    assert logging.getLogger().level == logging.INFO


def test_make_help_lists_the_variables_too():
    out = subprocess.run(
        ["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    for name in ("CONFIG", "PROJECT_DIR", "PARTITION", "WAIT", "SECTIONS"):
        assert f"\n  {name}" in out, name
    assert "\n  create_dataset " in out


# Each command that writes its results only at its end, with the function doing its work:
# the output folder is made first, so that a folder that cannot be made fails at once.
LATE_WRITERS = [
    (["world", "tilt", "--world", "W", "--out", "{bad}"], "tinyworld.tilt.run", "tilt_analysis"),
    (["world", "audit", "--world", "W", "--out", "{bad}/audit.json"], "tinyworld.audit.run", "load_inputs"),
    (["world", "audit", "--world", "W", "--out", "ok.json", "--write-wrapper", "{bad}/ours.py"],
     "tinyworld.audit.run", "load_inputs"),
    (["world", "study", "coverage", "--out", "{bad}"], "tinyworld.build", "ensure_world"),
    (["world", "study", "synthetic", "--out", "{bad}"], "tinyworld.build", "ensure_world"),
    (["world", "study", "audit", "--out", "{bad}"], "tinyworld.studies.audit", "audit_study"),
    (["study", "semisynthetic-text", "--out", "{bad}"], "rate.studies.semisynthetic_text",
     "run_semisynthetic_text"),
    (["study", "profile-check", "--out", "{bad}"], "rate.profile.check", "run_profiles"),
    (["world", "study", "tilt", "--world", "W", "--out", "{bad}"], "tinyworld.studies.tilt", "tilt_study"),
    (["world", "certify", "--world", "W", "--policy", "P", "--out", "{bad}/cert"],
     "tinyworld.certify.certify", "certify_policy"),
    (["world", "assess", "--world", "W", "--audit", "{audit}", "--out", "{bad}"],
     "tinyworld.certify.assess", "_assess"),  # assess_world locks the folder first
]  # fmt: skip


@pytest.mark.parametrize(("argv", "module", "work"), LATE_WRITERS)
def test_an_output_folder_that_cannot_be_made_fails_before_the_work(
    project, capsys, monkeypatch, argv, module, work
):
    import importlib

    def too_soon(*args, **kwargs):
        raise AssertionError(f"{work} ran before the output folder was made")

    monkeypatch.setattr(importlib.import_module(module), work, too_soon)
    in_the_way = project / "a-file"
    in_the_way.write_text("kept")
    audit = project / "audit.json"
    audit.write_text('{"candidates": []}')
    monkeypatch.chdir(project)
    argv = [a.format(bad=in_the_way / "out", audit=audit) for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"rate: error: cannot write {in_the_way}: a file is in the way")
    assert in_the_way.read_text() == "kept"


def test_a_mistyped_command_gets_the_nearest_name(capsys):
    with pytest.raises(SystemExit) as err:
        cli.main(["plto"])
    assert err.value.code == 2
    line = capsys.readouterr().err.splitlines()[-1]
    assert "unknown command 'plto'; did you mean 'plots'?" in line
    with pytest.raises(SystemExit):
        cli.main(["world", "recipe-swep"])
    assert "did you mean 'recipe-sweep'?" in capsys.readouterr().err


@pytest.mark.parametrize(
    "old, said, new",
    [
        (["plot"], "rate plots", "rate plots"),
        (["tinyrlhf", "build"], "rate world", "rate world build"),
        (["tinyrlhf", "sweep"], "rate world recipe-sweep", "rate world recipe-sweep"),
        (["audit"], "rate world audit", "rate world audit"),
        (["demo-audit"], "rate audit-demo", "rate audit-demo"),
        (["study", "coverage"], "rate world study coverage", "rate world study coverage"),
    ],
)
def test_an_old_command_name_still_works_and_says_its_new_one(old, said, new, capsys):
    with pytest.raises(SystemExit) as err:
        cli.main([*old, "--help"])
    assert err.value.code == 0
    out = capsys.readouterr()
    assert f"is now '{said}'" in out.err and len(out.err.splitlines()) == 1
    assert f"usage: {new}" in out.out


def test_the_help_lists_the_pipeline_first_and_hides_the_old_names():
    parser, aliases = cli.build_parser()
    text = parser.format_help()
    stages = [text.index(f"    {name}") for name in ("create_dataset", "score_dataset", "plots")]
    assert stages == sorted(stages) and stages[-1] < text.index("    world ")
    for old in ("tinyrlhf", "demo-audit", "    plot "):
        assert old not in text
    assert ("tinyrlhf",) in aliases  # the world's plugin brings its old names
