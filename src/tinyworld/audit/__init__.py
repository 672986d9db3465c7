"""The attribute audit: which features does a reward model reward beyond what experts support?

Every candidate feature of the tiny world (each of the 24 syllables and each of the 576 ordered
adjacent pairs, in every family) gets its causal effect on the reward model (by intervention on
reference responses, and by RATE through the world's imperfect rewriter), the effect on expert
quality that the gold labels support, the excess of the first over the second with its standard
error, and a flag under family-wise error control. The audit reads only what an analyst can
see: the reward model, the reference policy, the prompt pools, the crowd-labelled QA sample and
the gold labels; never the world's truth.
"""
