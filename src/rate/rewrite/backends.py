"""The registry of rewriter backends a dataset template may name in ``rewriter.backend``."""

from __future__ import annotations

from rate.rewrite.batch import OpenAIBatchOptions, build_openai_batch_rewriter
from rate.rewrite.hf_generate import HFGenerateOptions, build_hf_generate_rewriter
from rate.rewrite.openai_chat import OpenAIChatOptions, build_openai_chat_rewriter
from rate.rewrite.rules_en import RulesEnOptions, build_rules_en_rewriter
from rate.rewrite.tinyworld import TinyRewriterOptions, build_tiny_rewriter
from rate.templates import Kind

REWRITERS = {
    "tinyrlhf": Kind(
        TinyRewriterOptions, build_tiny_rewriter, "tiny world: token edits with a style signature"
    ),
    "hf_generate": Kind(
        HFGenerateOptions,
        build_hf_generate_rewriter,
        "a local Hugging Face causal LM (chat template, batched generation)",
    ),
    "openai_chat": Kind(
        OpenAIChatOptions,
        build_openai_chat_rewriter,
        "an OpenAI-compatible chat endpoint (OpenAI, or a local server), synchronous",
    ),
    "openai_batch": Kind(
        OpenAIBatchOptions,
        build_openai_batch_rewriter,
        "the OpenAI Batch API: resumable, cached, never pays twice (half the price, hours)",
    ),
    "rules_en": Kind(
        RulesEnOptions,
        build_rules_en_rewriter,
        "offline English rules: sentiment antonyms or length, with a style signature",
    ),
}


def build_rewriter(template, seed: int):
    """The rewriter a dataset template asks for. -> Rewriter"""
    backend, options = template.parts["rewriter"]
    return REWRITERS[backend].build(options, template, seed)
