"""`make gpu-check`: the scoring path on a GPU, measured (bf16, SDPA, out-of-memory back-off).

A randomly initialised Llama sequence classifier of about 1.1B parameters (TinyLlama's shape;
built here, nothing is downloaded) is saved in bf16 with the packaged MiniLM tokenizer, then
loaded and run by the real scorer (:class:`rate.score.hf.HFClassifierScorer`, through
:func:`rate.hf_models.load_pretrained`, batches by :func:`rate.oom.run_halving`) over a few
thousand real texts of mixed length (the drug reviews and chatterbot responses):

1. batched (length-sorted batches of ``--batch-size``) and one text at a time: the scores agree
   within bf16 tolerance, and the speed-up of batching is printed (expected: >= 10x);
2. a real CUDA out-of-memory error, forced by filling the GPU but for a little headroom: the
   scorer halves its batch until it fits, and its scores still agree.

Without CUDA it prints why it skipped and exits 0. ``--size tiny --device cpu`` runs step 1
with a small model on the CPU (the test of this script's own logic). It exits 1 when a check
fails. The numbers go to stdout and, with ``--out``, to a JSON file.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForSequenceClassification

from rate.io import atomic_write_json
from rate.packaged import chatterbot_pairs, drug_reviews, minilm_dir
from rate.score.hf import HFClassifierScorer
from rate.score.options import HFClassifierOptions

log = logging.getLogger(__name__)

# TinyLlama-1.1B's shape (1.1B parameters with this vocabulary), and a tiny one for CPU tests.
SIZES = {
    "1b": dict(
        hidden_size=2048, intermediate_size=5632, num_hidden_layers=22, num_attention_heads=32,
        num_key_value_heads=4,
    ),
    "tiny": dict(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2,
    ),
}  # fmt: skip
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)
# Scores of one text batched and alone differ by bf16 rounding (other kernels for other shapes,
# accumulated over the layers): each may differ by this share of its size plus the scores'
# spread (random weights can give scores that differ little from text to text).
BF16_RTOL = 0.05


def texts(n: int) -> list[str]:
    """``n`` real texts of mixed length: drug reviews (long) and chatterbot responses (short),
    interleaved."""
    reviews = [r["review"] for split in ("train", "test") for r in drug_reviews(split)]
    short = [p[2] for p in chatterbot_pairs()]
    mixed = [t for pair in zip(reviews, short, strict=False) for t in pair]
    mixed += reviews[len(short) :] + short[len(reviews) :]
    if n > len(mixed):
        raise SystemExit(f"gpu-check: --n-texts {n}: only {len(mixed)} texts ship offline")
    return mixed[:n]


def build_model(folder: Path, size: str, seed: int = 0) -> int:
    """A random Llama classifier (one label) and the MiniLM tokenizer, saved in ``folder``;
    -> its parameter count."""
    tok = minilm_dir()
    for name in TOKENIZER_FILES:
        shutil.copy(tok / name, folder / name)
    vocab = sum(1 for _ in (tok / "vocab.txt").open(encoding="utf-8"))
    config = LlamaConfig(
        vocab_size=vocab, num_labels=1, pad_token_id=0, max_position_embeddings=2048,
        **SIZES[size],
    )  # fmt: skip
    torch.manual_seed(seed)
    model = LlamaForSequenceClassification(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def agreement(a: list[float], b: list[float]) -> dict:
    """Whether ``a`` agrees with the reference ``b`` within bf16 tolerance, elementwise
    (|a - b| <= BF16_RTOL * (|b| + std(b))); the largest difference, the spread and the
    Pearson correlation, for the report."""
    x, y = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    std = float(y.std()) if len(b) > 1 else 0.0
    corr = float(torch.corrcoef(torch.stack([x, y]))[0, 1]) if std > 0 else float("nan")
    diff = (x - y).abs()
    ok = bool((diff <= BF16_RTOL * (y.abs() + std)).all())
    return {"max_abs_diff": float(diff.max()), "std": std, "correlation": corr, "agree": ok}


def _timed(device: str, fn):
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return out, time.perf_counter() - t0


def batched_vs_single(scorer: HFClassifierScorer, ids: list[list[int]], batch: int) -> dict:
    """Step 1: the same token ids batched and one at a time, through ``score_ids``."""
    scorer.batch_size = 1
    scorer.score_ids(ids[:8])  # warm-up: kernels, allocator
    scorer.batch_size = batch
    batched, batched_s = _timed(scorer.device, lambda: scorer.score_ids(ids))
    scorer.batch_size = 1
    single, single_s = _timed(scorer.device, lambda: scorer.score_ids(ids))
    return {
        "texts": len(ids),
        "tokens": sum(len(s) for s in ids),
        "batch_size": batch,
        "batched_s": batched_s,
        "single_s": single_s,
        "speedup": single_s / batched_s,
        **agreement(batched, single),
        "_batched": batched,
    }


def forced_oom(
    scorer: HFClassifierScorer, ids: list[list[int]], batch: int, reference: list[float]
) -> dict:
    """Step 2: fill the GPU but for ``headroom``, score with a batch too big for it: a real
    CUDA out-of-memory error must halve the batch until it fits, with the same scores."""
    longest = sorted(range(len(ids)), key=lambda i: -len(ids[i]))[: 4 * batch]
    torch.cuda.empty_cache()
    free, _ = torch.cuda.mem_get_info()
    # Room for the weights' working set at a small batch, not for `batch` long texts.
    headroom = 1024**3
    hog = torch.empty(max(0, free - headroom), dtype=torch.uint8, device=scorer.device)
    halvings: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "out of memory" in record.getMessage():
                halvings.append(record.getMessage())

    handler = Catch()
    logging.getLogger("rate.oom").addHandler(handler)
    scorer.batch_size = batch
    try:
        scores = scorer.score_ids([ids[i] for i in longest])
    finally:
        logging.getLogger("rate.oom").removeHandler(handler)
        del hog
        torch.cuda.empty_cache()
    fitted = scorer.batch_size
    return {
        "texts": len(longest),
        "headroom_gib": headroom / 1024**3,
        "start_batch_size": batch,
        "fitted_batch_size": fitted,
        "halvings": halvings,
        "backed_off": bool(halvings) and fitted < batch,
        **agreement(scores, [reference[i] for i in longest]),
    }


def run_check(size: str, device: str, n_texts: int, batch: int, oom: bool, work: Path) -> dict:
    """Both steps (the out-of-memory one only with ``oom``, on CUDA); -> the report."""
    folder = work / f"llama_cls_{size}"
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    params = build_model(folder, size)
    built_s = time.perf_counter() - t0
    options = HFClassifierOptions(
        model=str(folder), dtype="bfloat16", device=device, max_length=512
    )
    scorer = HFClassifierScorer(options, batch_size=batch)
    ids = scorer.encode_pairs([""] * n_texts, texts(n_texts))
    report: dict = {
        "model": f"random LlamaForSequenceClassification ({size})",
        "parameters": params,
        "build_s": built_s,
        "device": scorer.device,
        "gpu": torch.cuda.get_device_name() if scorer.device.startswith("cuda") else None,
        "torch": torch.__version__,
        "scorer": scorer.describe(),
        "truncated": scorer.truncated,
    }
    report["batched_vs_single"] = step = batched_vs_single(scorer, ids, batch)
    batched = step.pop("_batched")
    if oom:
        report["oom"] = forced_oom(scorer, ids, batch, batched)
    return report


def verdict(report: dict, min_speedup: float) -> list[str]:
    """The failed checks (none: all passed)."""
    step = report["batched_vs_single"]
    failed = []
    if not step["agree"]:
        failed.append("batched and one-at-a-time scores disagree beyond bf16 tolerance")
    if step["speedup"] < min_speedup:
        failed.append(f"batching sped scoring up {step['speedup']:.1f}x, < {min_speedup}x")
    if report["scorer"]["dtype"] != "torch.bfloat16":
        failed.append(f"the scorer ran in {report['scorer']['dtype']}, not bfloat16")
    if "oom" in report:
        if not report["oom"]["backed_off"]:
            failed.append("the forced out-of-memory error did not halve the batch")
        if not report["oom"]["agree"]:
            failed.append("scores after the out-of-memory back-off disagree")
    return failed


def summary(report: dict) -> str:
    s = report["batched_vs_single"]
    lines = [
        f"{report['model']}: {report['parameters'] / 1e9:.2f}B parameters on "
        f"{report['gpu'] or report['device']}, {report['scorer']['dtype']}, attention "
        f"{report['scorer']['attention']}",
        f"{s['texts']} texts ({s['tokens']} tokens, {report['truncated']} cut at 512): batched "
        f"(batch {s['batch_size']}) {s['batched_s']:.1f} s, one at a time {s['single_s']:.1f} s"
        f": speed-up {s['speedup']:.1f}x",
        f"agreement: max |diff| {s['max_abs_diff']:.4g} (score std {s['std']:.4g}), "
        f"correlation {s['correlation']:.6f}: {'ok' if s['agree'] else 'FAILED'}",
    ]
    if "oom" in report:
        o = report["oom"]
        lines.append(
            f"forced out-of-memory ({o['headroom_gib']:.0f} GiB left free, {o['texts']} longest "
            f"texts): batch {o['start_batch_size']} -> {o['fitted_batch_size']} after "
            f"{len(o['halvings'])} halvings; max |diff| {o['max_abs_diff']:.4g}: "
            f"{'ok' if o['backed_off'] and o['agree'] else 'FAILED'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check", description=__doc__)
    p.add_argument("--size", choices=sorted(SIZES), default="1b")
    p.add_argument("--device", default="cuda", help="cuda (the check) or cpu (--size tiny)")
    p.add_argument("--n-texts", type=int, default=3000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--min-speedup", type=float, default=10.0)
    p.add_argument("--out", type=Path, help="also write the report here (JSON)")
    args = p.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(
            f"gpu-check: skipped: no CUDA device (torch {torch.__version__}, "
            f"cuda {torch.version.cuda}); run `make gpu-check` on a machine with a GPU"
        )
        return 0
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    with tempfile.TemporaryDirectory(prefix="rate_gpu_check_") as work:
        report = run_check(
            args.size,
            args.device,
            args.n_texts,
            args.batch_size,
            oom=args.device.startswith("cuda"),
            work=Path(work),
        )
    report["failed"] = verdict(report, args.min_speedup)
    print(summary(report))
    if args.out:
        atomic_write_json(args.out, report)
    for line in report["failed"]:
        print(f"gpu-check: FAILED: {line}")
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
