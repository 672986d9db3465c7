"""Runs the openai_batch rewriter in a child process, so that tests can kill it anywhere.

Usage: ``python tests/batch_driver.py CONFIG.json``; the config holds ``options`` (the
rewriter's), ``requests`` (``[key, text, target_w, instruction]`` each) and ``out`` (where the
outputs are written as JSON when the run ends). The API key comes from the environment.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from rate.rewrite.base import RewriteRequest
from rate.rewrite.batch.rewriter import build_openai_batch_rewriter
from rate.rewrite.options import OpenAIBatchOptions


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    options = OpenAIBatchOptions(**config["options"])
    options.validate("batch_driver")
    requests = [RewriteRequest(*r) for r in config["requests"]]
    outputs = build_openai_batch_rewriter(options, None, 0).rewrite(requests)
    Path(config["out"]).write_text(json.dumps(outputs))


if __name__ == "__main__":
    main(sys.argv[1])
