"""Small data files of the pipeline's formats, made without the tiny world: English rewrites
(scored by VADER in seconds), scored rows, and the configs that run the stages on them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml

from rate.catalog import load_config
from rate.config import Config
from tests.helpers import ROOT

SMOKE = ROOT / "experiments" / "tinyworld" / "smoke.yaml"
STAMP = "20260101_120000"
WORDS = ("good", "bad", "great", "awful", "fine", "poor", "lovely", "dull")


def english_examples(n: int = 12, seed: int = 0) -> dict[str, dict]:
    """A rewrites file's content (``{index: example}``) of short English texts."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(n):
        a, b, c = (str(rng.choice(WORDS)) for _ in range(3))
        out[str(i)] = {
            "w_original": bool(i % 2),
            "completions": {
                "original": f"The film was {a}.",
                "rewrite": f"The film was {b}.",
                "rewritten rewrite": f"The film was {c}.",
            },
            "reward_question": "Write a movie review: ",
            "key": f"ex{i}",
            "metadata": {},
            "checks": {"rewrite": "ok", "rewritten rewrite": "ok"},
        }
    return out


def scored_rows(n: int = 40, seed: int = 0, key: str = "rm") -> list[dict]:
    """Rows of a scored file with normal scores under ``key``."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, ex in enumerate(english_examples(n, seed).values()):
        o, r, rr = (float(x) for x in rng.normal(size=3))
        rows.append(
            {"index": str(i), **ex, key: {"original": o, "rewrite": r, "rewritten rewrite": rr}}
        )
    return rows


def put(path: Path, data, meta: bool = True) -> Path:
    """Write a data file (JSON, or JSONL for a list of rows) and, unless told not to, its
    record, as a finished stage leaves them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, list):
        path.write_text("".join(json.dumps(r) + "\n" for r in data))
    else:
        path.write_text(json.dumps(data))
    if meta:
        path.with_name(path.name + ".meta.json").write_text(json.dumps({"file": path.name}))
    return path


def config(*overrides: str) -> Config:
    """The smoke config with VADER scoring of dataset 'mini' and quick effects."""
    return load_config(
        SMOKE,
        [
            "scoring.model=vader",
            "scoring.dataset_name=mini",
            "effects.dataset_name=mini",
            "effects.reward_key=vader",
            "effects.score=vader",
            "effects.group_by=null",
            "effects.n_bootstrap=0",
            *overrides,
        ],
    )


def mini_project(root: Path, n: int = 12) -> Path:
    """A PROJECT_DIR holding one smoke rewrites file of dataset 'mini'; -> that file."""
    return put(root / "data" / "rewrites" / f"mini_{STAMP}_smoke_test.json", english_examples(n))


def english_template(root: Path, name: str = "mini", n: int = 12, **parts) -> Path:
    """``root/dataset_templates/<name>.yaml``: ``n`` English reviews in a JSONL file, W = the
    review says 'good' or 'great', rewritten by the offline sentiment rules (``parts``
    replace any part); put ``root`` in RATE_TEMPLATE_PATH. -> the template's path."""
    folder = root / "dataset_templates"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        {
            "id": f"r{i}",
            "text": f"This film was {'good' if i % 2 else 'bad'} and the cast was fine {i}.",
        }
        for i in range(n)
    ]
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    template = {
        "name": name,
        "source": {
            "kind": "jsonl",
            "path": f"{name}.jsonl",
            "text_field": "text",
            "prompt": "Write a movie review: ",
            "id_field": "id",
        },
        "w_classifier": {"rule": "text_matches", "pattern": r"\b(good|great)\b"},
        "w_strings": {"w=1": "positive", "w=0": "negative"},
        "rewrite_prompt": "{original_completion}\n\nMake it {w_counterfactual_string}.",
        "rewriter": {"backend": "rules_en", "attribute": "sentiment"},
        "n_examples": n,
        **parts,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(template, sort_keys=False))
    return path
