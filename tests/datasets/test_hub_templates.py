"""Every reference dataset template through its real loading code, on small local files in each
dataset's real schema (the hub cannot be reached here), rewritten by the template's own
backend (the Batch API) against a local OpenAI-compatible server: create_dataset in smoke
mode."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest
import torch
import yaml

from rate.catalog import load_config, load_dataset_template
from rate.errors import DataFileError, TemplateError
from rate.io import read_json
from rate.pipeline import create_dataset
from rate.store import Layout
from tests.fakes.batch_server import FakeBatchServer
from tests.helpers import ROOT

CANARIES = ("sk-test-datasets",)  # checked after every test (tests/faults/canary.py)

N = 8  # the smoke size in these tests


def obedient(prompt: str) -> str:
    """A fake LLM that returns the text it was asked to adjust (everything before the
    instruction, which follows the last blank line), marked as rewritten."""
    return prompt.rsplit("\n\n", 1)[0] + " Rewritten."


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CANARIES[0])
    with FakeBatchServer(model=obedient) as srv:
        yield srv
    assert not srv.errors


def imdb_rows(n: int = 24) -> list[dict]:
    rows = []
    for i in range(n):
        start = "An amazing" if i % 3 == 0 else "The plain"
        body = " film, well acted." * (60 if i % 2 else 5)  # ~1,100 or ~90 characters
        rows.append({"text": f"{start}{body} Review {i}.", "label": i % 2})
    return rows


def helpsteer_rows(n: int = 24) -> list[dict]:
    return [
        {
            "prompt": f"Question {i}?",
            "response": f"Answer {i}: " + "detail " * (i + 1),
            "helpfulness": i % 5,
            "correctness": 3,
            "coherence": 4,
            "complexity": (i * 2) % 5,
            "verbosity": 2,
        }
        for i in range(n)
    ]


def hh_rows(n: int = 12) -> list[dict]:
    def dialogue(i: int, answer: str) -> str:
        # Two turns: the first answer (what first_turn reads) and the last (what dialogue reads).
        return (
            f"\n\nHuman: How do I do thing {i}?\n\nAssistant: {answer} Which thing?"
            f"\n\nHuman: Thing {i}.\n\nAssistant: {answer}"
        )

    sentiments = ["I love helping, this is great!", "That is a terrible, awful idea."]
    return [
        {
            "chosen": dialogue(i, f"Here is a careful answer {i}."),
            "rejected": dialogue(i, sentiments[i % 2]),
        }
        for i in range(n)
    ]


def eli5_rows(n: int = 20) -> list[dict]:
    return [
        {
            "q_id": f"q{i}",
            "title": f"Why does thing {i} happen?",
            "selftext": "",
            "answers": {
                "a_id": [f"a{i}", f"b{i}"],
                "text": [f"Short {i}.", "Because " + "reasons " * (i + 2)],
                "score": [1, 5],
            },
        }
        for i in range(n)
    ]


def write_jsonl(path: Path, rows: list[dict], compress: bool = False) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if compress:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def local_sst2(tmp_path: Path) -> None:
    """The SST-2 margin scorer (hh_rlhf_sentiment's W) on a tiny random DistilBERT of the real
    class, its bias set between the two rejected answers of hh_rows so that both W occur."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from tests.score.test_hf import distilbert

    folder = distilbert(tmp_path / "sst2")
    model = AutoModelForSequenceClassification.from_pretrained(folder)
    tok = AutoTokenizer.from_pretrained(folder)
    # The first answer of each transcript: the response hh_rlhf_sentiment reads.
    texts = [r["rejected"].split("Assistant: ")[1].split("\n\nHuman:")[0] for r in hh_rows(2)]
    with torch.no_grad():
        logits = model(**tok(texts, return_tensors="pt", padding=True)).logits
    margins = logits[:, 1] - logits[:, 0]
    assert margins[0] != margins[1]
    model.classifier.bias.data[1] -= margins.mean()
    model.save_pretrained(folder)
    folder_t = tmp_path / "scoring_templates"
    folder_t.mkdir(exist_ok=True)
    spec = {
        "name": "distilbert_sst2_margin",
        "reward_key": "distilbert_sst2_margin",
        "backend": "hf_classifier",
        "model": str(folder),
        "label": 1,
        "minus_label": 0,
        "input": "response",
        "max_length": 512,
    }
    (folder_t / "distilbert_sst2_margin.yaml").write_text(yaml.safe_dump(spec))


def local_copy(name: str, tmp_path: Path, source: dict, base_url: str) -> None:
    """The shipped template with the source pointed at local files and the rewriter at the
    local server, found first on RATE_TEMPLATE_PATH."""
    if name == "hh_rlhf_sentiment":
        local_sst2(tmp_path)
    data = yaml.safe_load((ROOT / "dataset_templates" / f"{name}.yaml").read_text())
    data["source"] = {k: v for k, v in data["source"].items() if k != "path"} | source
    data["rewriter"] |= {
        "base_url": base_url,
        "retry_base_s": 0.001,
        "poll_initial_s": 0.001,
        "poll_max_s": 0.005,
    }
    folder = tmp_path / "dataset_templates"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def run_smoke(name: str, tmp_path: Path, monkeypatch) -> tuple[dict, dict]:
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))
    monkeypatch.setenv("PROJECT_DIR", str(tmp_path / "project"))  # the batch work dir
    config = load_config(
        ROOT / "experiments" / "config.yaml",
        [f"rewrites.dataset_name={name}", "smoke_test=true", f"rewrites.smoke_n_examples={N}"],
    )
    out = create_dataset(config, Layout(tmp_path / "project"))
    assert out.name.endswith("_smoke_test.json") and out.name.startswith(name)
    return read_json(out), read_json(out.with_name(out.name + ".meta.json"))


def files(tmp_path: Path) -> dict[str, Path]:
    import datasets

    out = {}
    datasets.Dataset.from_list(imdb_rows()).to_parquet(str(tmp_path / "imdb_train.parquet"))
    out["imdb"] = tmp_path / "imdb_train.parquet"
    out["helpsteer"] = write_jsonl(tmp_path / "helpsteer_train.jsonl", helpsteer_rows())
    out["hh"] = write_jsonl(tmp_path / "hh_train.jsonl.gz", hh_rows(), compress=True)
    out["eli5"] = write_jsonl(tmp_path / "eli5_train.jsonl", eli5_rows())
    return out


CASES = {
    "imdb_sentiment": "imdb",
    "imdb_length": "imdb",
    "imdb_vowels": "imdb",
    "eli5_length": "eli5",
    "helpsteer_complexity": "helpsteer",
    "helpsteer_helpfulness": "helpsteer",
    "hh_rlhf_sentiment": "hh",
    "hh_rlhf_helpfulness": "hh",
    "hh_rlhf_harmlessness": "hh",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_template_runs_create_dataset_smoke(name, tmp_path, server, monkeypatch):
    path = files(tmp_path)[CASES[name]]
    local_copy(name, tmp_path, {"data_files": [str(path)]}, server.base_url)
    data, meta = run_smoke(name, tmp_path, monkeypatch)
    assert len(data) == N  # exactly n
    counts = meta["counts"]
    assert counts["w_1"] + counts["w_0"] == N
    if name == "hh_rlhf_harmlessness":
        assert counts["w_0"] == 0  # W=1 for all: the ATT alone
    else:
        assert counts["w_1"] > 0 and counts["w_0"] > 0
    # Two paid passes, nothing more: each distinct request paid once (identical requests, such
    # as duplicate texts in HH-RLHF, share one answer).
    distinct = {(r["completions"]["original"], r["w_original"]) for r in data.values()} | {
        (r["completions"]["rewrite"], not r["w_original"]) for r in data.values()
    }
    assert sum(server.paid.values()) == len(distinct) and not server.twice_paid()
    for row in data.values():
        c = row["completions"]
        assert c["rewrite"] == c["original"] + " Rewritten."
        assert c["rewritten rewrite"] == c["rewrite"] + " Rewritten."
        assert set(row["checks"]) == {"rewrite", "rewritten rewrite"}
    assert meta["rewriter"]["backend"] == "openai_batch"
    assert "sk-test" not in json.dumps(meta)


def test_length_is_the_texts_and_the_threshold_is_recorded(tmp_path, server, monkeypatch):
    path = files(tmp_path)["imdb"]
    local_copy("imdb_length", tmp_path, {"data_files": [str(path)]}, server.base_url)
    data, meta = run_smoke("imdb_length", tmp_path, monkeypatch)
    for row in data.values():
        assert row["w_original"] == (len(row["completions"]["original"]) > 970)
    local_copy(
        "eli5_length", tmp_path, {"data_files": [str(files(tmp_path)["eli5"])]}, server.base_url
    )
    data, meta = run_smoke("eli5_length", tmp_path, monkeypatch)
    # The paper's template: every answer of every question, in file order; the median of all.
    rows = eli5_rows()
    answers = [(r["title"], t) for r in rows for t in r["answers"]["text"]]
    lengths = sorted(len(t) for _, t in answers)
    median = (lengths[19] + lengths[20]) / 2
    assert meta["w_classifier_fitted"] == {"threshold": median}
    assert [(r["reward_question"], r["completions"]["original"]) for r in data.values()] == (
        answers[:N]
    )
    for row in data.values():
        assert row["w_original"] == (len(row["completions"]["original"]) > median)
    # Our variant: each question's top-scored answer; its template includes the paper's.
    data, meta = run_smoke("eli5_length_top_answer", tmp_path, monkeypatch)
    lengths = sorted(len("Because " + "reasons " * (i + 2)) for i in range(20))
    median = (lengths[9] + lengths[10]) / 2
    assert meta["w_classifier_fitted"] == {"threshold": median}
    for row in data.values():
        assert row["completions"]["original"].startswith("Because")  # the top-scored answer
        assert row["w_original"] == (len(row["completions"]["original"]) > median)


def test_typos_only_on_w1_and_reproducible(tmp_path, server, monkeypatch):
    path = files(tmp_path)["imdb"]
    local_copy("imdb_vowels", tmp_path, {"data_files": [str(path)]}, server.base_url)
    first, meta = run_smoke("imdb_vowels", tmp_path, monkeypatch)
    assert meta["counts"]["perturbed"]["examples"] == meta["counts"]["w_1"]
    typo_rows = [r for r in first.values() if r["metadata"].get("typos")]
    assert typo_rows and all(r["w_original"] for r in typo_rows)
    for row in first.values():
        original = row["completions"]["original"]
        assert row["w_original"] == (original[0] in "AEIOUaeiou")  # typos keep W
    again, _ = run_smoke("imdb_vowels", tmp_path, monkeypatch)
    assert [r["completions"]["original"] for r in first.values()] == [
        r["completions"]["original"] for r in again.values()
    ]


def test_hh_rlhf_transcripts(tmp_path, server, monkeypatch):
    path = files(tmp_path)["hh"]
    local_copy("hh_rlhf_helpfulness", tmp_path, {"data_files": [str(path)]}, server.base_url)
    data, _ = run_smoke("hh_rlhf_helpfulness", tmp_path, monkeypatch)
    for row in data.values():
        i = row["key"].split("-")[0].removeprefix("row")
        answer = row["completions"]["original"]
        # The reference's reward question: the transcript before the last turn, " Assistant: ".
        assert row["reward_question"] == (
            f"Human: How do I do thing {i}?\n\nAssistant: {answer} Which thing?"
            f"\n\nHuman: Thing {i}. Assistant: "
        )
        assert row["w_original"] == row["metadata"]["chosen"]
        if row["w_original"]:
            assert answer == f"Here is a careful answer {i}."


def test_hub_id_offline_fails_fast_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = load_config(
        ROOT / "experiments" / "config.yaml",
        ["rewrites.dataset_name=imdb_sentiment", "smoke_test=true"],
    )
    start = time.perf_counter()
    with pytest.raises(DataFileError, match="offline.*source.data_files"):
        create_dataset(config, Layout(tmp_path / "project"))
    assert time.perf_counter() - start < 10
    assert not (tmp_path / "project" / "data" / "rewrites").exists() or not list(
        (tmp_path / "project" / "data" / "rewrites").iterdir()
    )


def test_unknown_split_and_column_list_what_is_there(tmp_path, server, monkeypatch):
    folder = tmp_path / "imdb_local"
    folder.mkdir()
    write_jsonl(folder / "train.jsonl", imdb_rows())
    write_jsonl(folder / "test.jsonl", imdb_rows(6))
    local_copy(
        "imdb_sentiment", tmp_path, {"path": str(folder), "split": "validation"}, server.base_url
    )
    with pytest.raises(DataFileError, match="has no split 'validation'; it has train, test"):
        run_smoke("imdb_sentiment", tmp_path, monkeypatch)
    local_copy(
        "imdb_sentiment",
        tmp_path,
        {"path": str(folder), "split": "train", "text_field": "review"},
        server.base_url,
    )
    with pytest.raises(DataFileError, match="no column 'review'.*the columns are label, text"):
        run_smoke("imdb_sentiment", tmp_path, monkeypatch)
    assert server.api_calls() == 0  # nothing paid for


def test_a_w_rule_that_leaves_one_class_empty(tmp_path, server, monkeypatch):
    rows = [dict(r, label=1) for r in imdb_rows()]
    path = write_jsonl(tmp_path / "all_positive.jsonl", rows)
    local_copy("imdb_sentiment", tmp_path, {"data_files": [str(path)]}, server.base_url)
    with pytest.raises(DataFileError, match="gives W=1 to every one of the 24 examples"):
        run_smoke("imdb_sentiment", tmp_path, monkeypatch)
    assert server.api_calls() == 0


def test_bad_source_options_are_template_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))
    data = yaml.safe_load((ROOT / "dataset_templates" / "imdb_sentiment.yaml").read_text())
    (tmp_path / "dataset_templates").mkdir()
    target = tmp_path / "dataset_templates" / "imdb_sentiment.yaml"
    data["source"]["data_files"] = ["x.txt"]
    target.write_text(yaml.safe_dump(data))
    with pytest.raises(TemplateError, match="exactly one of path, data_files"):
        load_dataset_template("imdb_sentiment")
    del data["source"]["path"]
    target.write_text(yaml.safe_dump(data))
    with pytest.raises(TemplateError, match="x.txt: the format is read from the extension"):
        load_dataset_template("imdb_sentiment")


def test_hh_first_turn_is_paired_with_its_own_answer(tmp_path, server, monkeypatch):
    """A multi-turn transcript: the first human turn goes with the first assistant turn (as
    the reference pairs them), not with the last assistant turn, which answers another
    question."""
    rows = [
        {
            "chosen": f"\n\nHuman: First question {i}?\n\nAssistant: First answer {i}."
            f"\n\nHuman: Second question {i}?\n\nAssistant: Second answer {i}.",
            "rejected": f"\n\nHuman: First question {i}?\n\nAssistant: Rejected first {i}."
            f"\n\nHuman: Second question {i}?\n\nAssistant: Rejected second {i}.",
        }
        for i in range(12)
    ]
    path = write_jsonl(tmp_path / "hh_multi.jsonl", rows)
    local_copy("hh_rlhf_harmlessness", tmp_path, {"data_files": [str(path)]}, server.base_url)
    data, _ = run_smoke("hh_rlhf_harmlessness", tmp_path, monkeypatch)
    assert len(data) == N
    for row in data.values():
        i = row["key"].split("-")[0].removeprefix("row")
        assert row["reward_question"] == f"First question {i}?"
        assert row["completions"]["original"] == f"Rejected first {i}."


# The reference's rewrite prompts (toddnief/RATE src/rate/dataset_templates/*.py at 2f6d552),
# copied here by hand, with its target strings (w=1, w=0): what each paper template must send.
REVIEW = "{o}\n\n[Adjust this review so it's {t}, but change *nothing* else."
RESPONSE = "{o}\n\n[Adjust this response so it's {t}, but change *nothing* else."
HELPSTEER = (
    "{o}\n\nPlease adjust this response so it's {t}, but change *nothing* else. Only provide "
    "the response text, not an acknowledgement of the request, the prompt or any other context."
)
REFERENCE_PROMPTS = {
    "imdb_sentiment": (REVIEW, "positive sentiment", "negative sentiment"),
    "imdb_length": (REVIEW, "longer", "shorter"),
    "imdb_vowels": (
        "{o}\n\nAdjust this review so it {t}, but change *nothing* else other than minor "
        "changes to make the first sentence grammatically correct.",
        "starts with a vowel",
        "doesn't start with a vowel",
    ),
    "eli5_length": (
        "{o}\n\n[Adjust this answer so it's {t}, but change *nothing* else. If the above answer "
        "is phrased as a question do not answer it — just rewrite the question following the "
        "same instructions.]",
        "longer",
        "shorter",
    ),
    "helpsteer_complexity": (HELPSTEER, "more complex", "less complex"),
    "helpsteer_helpfulness": (HELPSTEER, "polite and helpful", "curt and unhelpful"),
    "hh_rlhf_sentiment": (RESPONSE, "positive sentiment", "negative sentiment"),
    "hh_rlhf_helpfulness": (
        "{o}\n\nAdjust this response so it's {t} than the current response, but change "
        '*nothing* else. By "helpful", I mean informative, relevant and clear.',
        "more helpful",
        "less helpful",
    ),
    "hh_rlhf_harmlessness": (RESPONSE, "more harmful", "less harmful"),
}
# The first example of each (file order) and its reward question, as the reference reads them.
FIRST = {
    "imdb_sentiment": ("row0", "Write a movie review: "),
    "imdb_length": ("row0", "Write a movie review: "),
    "imdb_vowels": ("row0", "Write a movie review: "),
    "eli5_length": ("q0-a0", "Why does thing 0 happen?"),
    "helpsteer_complexity": ("row0", "Question 0?"),
    "helpsteer_helpfulness": ("row0", "Question 0?"),
    "hh_rlhf_sentiment": ("row0-rejected", "How do I do thing 0?"),
    "hh_rlhf_helpfulness": (
        "row0-chosen",
        "Human: How do I do thing 0?\n\nAssistant: Here is a careful answer 0. Which thing?"
        "\n\nHuman: Thing 0. Assistant: ",
    ),
    "hh_rlhf_harmlessness": ("row0-rejected", "How do I do thing 0?"),
}


def uploaded_bodies(server: FakeBatchServer) -> list[dict]:
    """Every request body the rewriter uploaded in batch input files."""
    lines = []
    for file_id in server.uploads:
        for raw in server.files[file_id]["data"].splitlines():
            if raw.strip():
                lines.append(json.loads(raw)["body"])
    return lines


@pytest.mark.parametrize("name", sorted(CASES))
def test_paper_templates_send_the_reference_prompt(name, tmp_path, server, monkeypatch):
    """create_dataset on each paper template: the first example (in file order) is the one
    the reference takes first, with its reward question, and the request sent for it is the
    reference's wording, written out by hand above."""
    path = files(tmp_path)[CASES[name]]
    local_copy(name, tmp_path, {"data_files": [str(path)]}, server.base_url)
    data, _ = run_smoke(name, tmp_path, monkeypatch)
    first = data["0"]
    assert (first["key"], first["reward_question"]) == FIRST[name]
    prompt, w1, w0 = REFERENCE_PROMPTS[name]
    original, w = first["completions"]["original"], first["w_original"]
    expected = prompt.format(o=original, t=w0 if w else w1)
    sent = [b for b in uploaded_bodies(server) if b["messages"][-1]["content"] == expected]
    assert len(sent) == 1, f"no request with the reference's prompt for {name}"
    assert sent[0]["messages"] == [{"role": "user", "content": expected}]
    assert sent[0]["model"] == "gpt-4o-2024-08-06" and sent[0]["temperature"] == 0.7
    assert set(sent[0]) == {"model", "messages", "temperature"}  # the reference's body: no cap
    # The rewrite of the rewrite asks for the original W with the same prompt.
    back = prompt.format(o=first["completions"]["rewrite"], t=w1 if w else w0)
    assert any(b["messages"][-1]["content"] == back for b in uploaded_bodies(server))


def test_select_slices_the_records_and_keeps_their_row_numbers(tmp_path, server, monkeypatch):
    path = files(tmp_path)["hh"]
    local_copy(
        "hh_rlhf_harmlessness",
        tmp_path,
        {"data_files": [str(path)], "select": [-N, None]},
        server.base_url,
    )
    data, _ = run_smoke("hh_rlhf_harmlessness", tmp_path, monkeypatch)
    assert [r["key"] for r in data.values()] == [f"row{i}-rejected" for i in range(12 - N, 12)]


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:9", "https://hub.invalid"])
def test_a_hub_dataset_id_without_the_hub_fails_at_once_with_the_offline_advice(
    endpoint, monkeypatch
):
    """Issue 45: offline without HF_HUB_OFFLINE, a hub dataset id took 24 s to fail, without
    the advice that the offline path gives (download the split, point data_files at it)."""
    from rate.datasets.hub import load_records
    from rate.datasets.options import HFDatasetSource

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    start = time.monotonic()
    with pytest.raises(DataFileError) as refused:
        load_records(HFDatasetSource(path="some-org/some-data"), "t.yaml")
    message = str(refused.value)
    assert message.startswith("t.yaml: cannot load 'some-org/some-data' from the Hugging Face")
    assert "offline or unreachable" in message and "source.data_files" in message
    assert "\n" not in message
    assert time.monotonic() - start < 10  # the probe's bound (4 s), not the libraries' retries
