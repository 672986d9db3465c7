"""notebooks/results.ipynb runs headless on a small project folder and shows the files' numbers."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from rate.effects.estimators import Scores
from rate.effects.stage import clean, compute_effects
from rate.io import atomic_write_json, write_jsonl

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "results.ipynb"
KERNEL = "rate-test-python3"
STAMP = "20260101_120000"


def _scores(n: int, seed: int, effect: float):
    rng = np.random.default_rng(seed)
    w = rng.random(n) < 0.5
    sign = np.where(w, 1.0, -1.0)
    o = rng.normal(size=n) + effect * w
    perfect = o - sign * effect
    r = perfect + 0.2 + rng.normal(size=n) * 0.1
    rr = r + sign * effect + rng.normal(size=n) * 0.1
    return w, o, r, rr, perfect


def _effect_file(
    folder: Path, concept: str, score: str, effect: float, seed: int, smoke: bool
) -> dict:
    w, o, r, rr, perfect = _scores(120, seed, effect)
    result = compute_effects(Scores(w, o, r, rr), perfect, 40, 0, 0.95, 1)
    result.update(
        dataset_name="tinyrlhf_dune",
        concept=concept,
        score=score,
        reward_key=f"{score}_key",
        dataset_filename=f"tinyrlhf_dune_{STAMP}.jsonl",
        smoke_test=smoke,
    )
    result = clean(result)
    suffix = "_smoke_test" if smoke else ""
    name = f"tinyrlhf_dune_{concept}_{score}_treatment_effects_{STAMP}{suffix}.json"
    atomic_write_json(folder / name, result)
    return result


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder: two smoke-test effect files, one full-run file, one scored file."""
    root = tmp_path / "project"
    effects = root / "effects"
    _effect_file(effects, "pa_pa", "tinyrlhf_rm", 1.0, 0, smoke=True)
    _effect_file(effects, "length", "other_rm", 0.5, 1, smoke=True)
    _effect_file(effects, "pa_pa", "tinyrlhf_rm", 3.0, 2, smoke=False)  # must not be shown
    atomic_write_json(effects / f"x_{STAMP}_smoke_test.json.meta.json", {"stage": "effects"})
    w, o, r, rr, _ = _scores(40, 0, 1.0)
    rows = [
        {
            "index": str(i),
            "w_original": bool(w[i]),
            "completions": {
                "original": f"orig {i}",
                "rewrite": f"rw {i}",
                "rewritten rewrite": f"rr {i}",
            },
            "reward_question": "dune v1 v2 v3 v4 |",
            "tinyrlhf_rm_key": {"original": o[i], "rewrite": r[i], "rewritten rewrite": rr[i]},
        }
        for i in range(40)
    ]
    write_jsonl(root / "data" / "scored" / f"tinyrlhf_dune_{STAMP}_smoke_test.jsonl", rows)
    return root


@pytest.fixture
def kernel_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel spec that starts this interpreter, whatever `python` on PATH is and whether or
    not a python3 kernel is registered (JUPYTER_PATH is searched first); no network needed."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "rate tests", "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("RATE_NOTEBOOK_SMOKE", "1")
    monkeypatch.delenv("GROUP_NAME", raising=False)
    monkeypatch.delenv("MPLBACKEND", raising=False)


def _run(project: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    monkeypatch.setenv("PROJECT_DIR", str(project))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=180,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    ).execute()
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]


def _text(outputs: list[dict]) -> str:
    parts = []
    for out in outputs:
        data = out.get("data", {})
        parts += [out.get("text", ""), data.get("text/markdown", ""), data.get("text/plain", "")]
    return "\n".join(parts)


def test_committed_notebook_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def test_notebook_shows_the_smoke_test_files(project, kernel_env, monkeypatch):
    outputs = _run(project, monkeypatch)
    assert [o for o in outputs if o["output_type"] == "error"] == []
    text = _text(outputs)
    effects = project / "effects"
    smoke = sorted(effects.glob("*_smoke_test.json"))  # not the .meta.json
    assert len(smoke) == 2
    for path in smoke:
        e = json.loads(path.read_text())
        assert path.name in text
        for value in (e["naive_effect"], e["ATE_rewritten_rewrite"], e["truth"]["ATE"]):
            assert f"{value:.4g}" in text
    full = effects / f"tinyrlhf_dune_pa_pa_tinyrlhf_rm_treatment_effects_{STAMP}.json"
    assert full.name not in text
    assert f"{json.loads(full.read_text())['ATE_rewritten_rewrite']:.4g}" not in text
    # 2 effects figures, 2 rewrite-bias figures and the score distributions.
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 5
    assert "tinyrlhf_rm_key" in text and "| orig " in text  # score key, sample rewrites
    assert "No synthetic sweeps" in text


def test_notebook_says_what_to_run_without_effect_files(tmp_path, kernel_env, monkeypatch):
    outputs = _run(tmp_path / "empty_project", monkeypatch)
    assert [o for o in outputs if o["output_type"] == "error"] == []
    text = _text(outputs)
    assert "No smoke-test" in text and "make demo" in text and "make treatment_effects" in text
    assert not [o for o in outputs if "image/png" in o.get("data", {})]


def test_notebook_on_the_demo_smoke_outputs(demo_smoke, kernel_env, monkeypatch):
    """The notebook on real smoke outputs: the demo's six effect files and its scored files."""
    outputs = _run(demo_smoke, monkeypatch)
    assert [o for o in outputs if o["output_type"] == "error"] == []
    text = _text(outputs)
    effects = sorted(
        p for p in (demo_smoke / "effects").glob("*_smoke_test.json") if "coverage" not in p.name
    )
    assert len(effects) == 6
    for path in effects:
        e = json.loads(path.read_text())
        assert path.name in text
        assert f"{e['ATE_rewritten_rewrite']:.4g}" in text
    assert [o for o in outputs if "image/png" in o.get("data", {})]


def test_notebook_recomputes_effects_from_a_config_plotting_file(
    project, kernel_env, monkeypatch, tmp_path
):
    """As the reference's notebook: config_plotting.jsonl names scored files (model-id reward
    keys, the reference's names, scored/complete/); the effects are recomputed, the lines of
    one concept pooled, and shown beside the effect files."""
    from rate.effects.plotting_config import effects_from_plotting_config

    armo = "RLHFlow/ArmoRM-Llama3-8B-v0.1"
    scored = project / "data" / "scored"
    lines = []
    for i, name in enumerate(("imdb_length", "eli5_length")):
        w, o, r, rr, _ = _scores(60, 10 + i, 0.7)
        rows = [
            {
                "w_original": bool(w[j]),
                "completions": {"original": "o", "rewrite": "r", "rewritten rewrite": "rr"},
                "reward_question": "q",
                armo: {"original": o[j], "rewrite": r[j], "rewritten rewrite": rr[j]},
            }
            for j in range(60)
        ]
        filename = f"{name}_armorm_scored_{STAMP}.jsonl"
        write_jsonl(scored / "complete" / filename, rows)
        lines.append(
            {
                "dataset_name": name.split("_")[0].upper(),
                "concept": "Length",
                "score": "ArmoRM",
                "reward_key": armo,
                "dataset_filename": filename,
            }
        )
    config = tmp_path / "config_plotting.jsonl"
    config.write_text("".join(json.dumps(x) + "\n" for x in lines))
    monkeypatch.setenv("RATE_PLOTTING_CONFIG", str(config))
    outputs = _run(project, monkeypatch)
    assert [o for o in outputs if o["output_type"] == "error"] == []
    text = _text(outputs)
    (pooled,) = effects_from_plotting_config(config, scored)
    assert pooled["dataset_name"] == "IMDB+ELI5" and pooled["Y1_count"] + pooled["Y0_count"] == 120
    assert "IMDB+ELI5 (Length, ArmoRM; config_plotting.jsonl)" in text
    assert f"{pooled['ATE_rewritten_rewrite']:.4g}" in text
    # The smoke-test effect files are still there, and one more rewrite-bias figure.
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 6


def test_notebook_selects_effect_files_by_concept_and_pattern(project, kernel_env, monkeypatch):
    """The first cell's parameters (here from the environment) choose the files shown."""
    names = {p.name.split("_")[2]: p.name for p in (project / "effects").glob("*_smoke_test.json")}
    assert sorted(names) == ["length", "pa"]
    for setting, value, shown in (
        ("RATE_NOTEBOOK_CONCEPT", "length", "length"),
        ("RATE_NOTEBOOK_PATTERN", "*_pa_pa_*.json", "pa"),
    ):
        monkeypatch.delenv("RATE_NOTEBOOK_CONCEPT", raising=False)
        monkeypatch.setenv(setting, value)
        outputs = _run(project, monkeypatch)
        assert [o for o in outputs if o["output_type"] == "error"] == []
        text = _text(outputs)
        assert names[shown] in text
        assert all(name not in text for key, name in names.items() if key != shown)
        # 2 effects figures, 1 rewrite-bias figure and the score distributions.
        assert len([o for o in outputs if "image/png" in o.get("data", {})]) == 4
