"""tinyworld: a tiny, fully known RLHF world (a policy, a reward model with planted shortcuts,
REINFORCE, evaluation against the truth) and its release tools (audit, correction,
certification, assessment, studies).

It plugs into rate as a third-party package would (entry points, :mod:`rate.plugins`): its
source, W rule, rewriter and scorers join rate's template registries, and its commands join
`rate` as `rate world ...`, `rate demo` and `rate audit-demo`. rate imports nothing of it.
"""
