"""The registry of rewriter backends a dataset template may name in ``rewriter.backend``."""

from __future__ import annotations

from rate.plugins import with_plugins
from rate.registry import Kind
from rate.rewrite.base import Rewriter
from rate.rewrite.options import (
    HFGenerateOptions,
    OpenAIBatchOptions,
    OpenAIChatOptions,
    RulesEnOptions,
)
from rate.templates import DatasetTemplate

# Every factory takes (options, template, seed, rule=) and returns a Rewriter.
REWRITERS = with_plugins(
    {
        "hf_generate": Kind(
            HFGenerateOptions,
            "rate.rewrite.hf_generate:build_hf_generate_rewriter",
            "a local Hugging Face causal LM (chat template, batched generation)",
        ),
        "openai_chat": Kind(
            OpenAIChatOptions,
            "rate.rewrite.openai_chat:build_openai_chat_rewriter",
            "an OpenAI-compatible chat endpoint (OpenAI, or a local server), synchronous",
        ),
        "openai_batch": Kind(
            OpenAIBatchOptions,
            "rate.rewrite.batch.rewriter:build_openai_batch_rewriter",
            "the OpenAI Batch API: resumable, cached, never pays twice (half the price, hours)",
        ),
        "rules_en": Kind(
            RulesEnOptions,
            "rate.rewrite.rules_attributes:build_rules_rewriter",
            "offline English rules: sentiment, length and the attribute catalogue's, with a signature",
        ),
    },
    "rate.rewriters",
)


def build_rewriter(template: DatasetTemplate, seed: int, rule: object = None) -> Rewriter:
    """The rewriter a dataset template asks for; ``rule`` is the live W rule, fitted on the
    data (rewriters that rewrite to its threshold read it)."""
    backend, options = template.parts["rewriter"]
    return REWRITERS[backend].build(options, template, seed, rule=rule)
