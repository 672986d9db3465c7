"""The ``openai_batch`` rewriter backend: OpenAI's Batch API with a manifest, a response cache
and crash-safe resumption (see :mod:`rate.rewrite.batch.backend`)."""

from rate.rewrite.batch.backend import OpenAIBatchRewriter, build_openai_batch_rewriter
from rate.rewrite.batch.options import OpenAIBatchOptions

__all__ = ["OpenAIBatchOptions", "OpenAIBatchRewriter", "build_openai_batch_rewriter"]
