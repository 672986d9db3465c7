"""`rate profile`: a causal bias profile of a reward model, RATE for every attribute of the
catalogue (:mod:`rate.attributes`), as a sweep generated from it (:mod:`rate.profile.plan`),
then one table and one forest plot (:mod:`rate.profile.report`, :mod:`rate.profile.figure`)."""

RULES = "rules"  # --rewriter: each attribute's offline rules; the others are LLM backends
REWRITERS = (RULES, "openai_batch", "openai_chat", "hf_generate")
