"""The ``openai_batch`` rewriter backend: OpenAI's Batch API with a manifest, a response cache
and crash-safe resumption (:mod:`.rewriter` adapts it to the rewriter contract; :mod:`.runner`
and :mod:`.collect` are the state machine)."""
