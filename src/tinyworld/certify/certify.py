"""`rate world certify`: a new policy's expert quality, per family and on the balanced mix,
from the reference policy's gold labels alone (no new expert label of the new policy).

The estimators are in :mod:`tinyworld.certify.estimators`; this module gathers their inputs (exact
sequence likelihood ratios, the corrected reward of every response, fresh samples of the new
policy); :mod:`tinyworld.certify.certificate` turns them into intervals and the release
guardrails' verdict.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rate.provenance import content_digest
from tinyworld.certify.certificate import (
    _PLAN_SEED,
    DEFAULTS,
    CertifyFamilyInputs,
    CertifySettings,
    certify_inputs,
    plan_gold,
)
from tinyworld.certify.estimators import (
    LEVEL,
)
from tinyworld.data import LabelledSet, PromptPool, load_labelled, pool_from_records
from tinyworld.models import load_policy, load_reward_model
from tinyworld.policy import Policy
from tinyworld.prompts import balanced, make_prompts
from tinyworld.reward_model import RewardModel
from tinyworld.rl_config import RewardTransform, apply_reward_wrapper, load_reward_wrapper
from tinyworld.sampling import response_logprobs, sample, score
from tinyworld.vocab import FAMILIES, RESPONSE_LEN, decode_responses

# Rows scored at once: the batch of every log-probability pass, so that a kept pass and a
# fresh one see the same batches and give the same bits.
CHUNK = 4096


@torch.inference_mode()
def token_logprobs(policy: Policy, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    """Per-token log pi(y_t | x, y_<t) of whole responses (temperature 1), (B, RESPONSE_LEN)."""
    chunks = [
        response_logprobs(policy, prompts[i : i + CHUNK], responses[i : i + CHUNK])
        for i in range(0, len(prompts), CHUNK)
    ]
    return torch.cat(chunks) if chunks else torch.zeros(0, RESPONSE_LEN)


@torch.inference_mode()
def log_ratios(
    policy: Policy,
    reference: Policy,
    prompts: torch.Tensor,
    responses: torch.Tensor,
    reference_logprobs: torch.Tensor | None = None,
) -> np.ndarray:
    """Exact log pi_new(y|x) - log pi_ref(y|x) of whole responses (temperature 1), (B,).
    ``reference_logprobs``: the reference's :func:`token_logprobs` of these rows, when known."""
    out = []
    for i in range(0, len(prompts), CHUNK):
        p, r = prompts[i : i + CHUNK], responses[i : i + CHUNK]
        ref = (
            response_logprobs(reference, p, r)
            if reference_logprobs is None
            else reference_logprobs[i : i + CHUNK]
        )
        out.append((response_logprobs(policy, p, r) - ref).sum(-1))
    return torch.cat(out).double().numpy() if out else np.zeros(0)


def corrected_reward(
    rm: RewardModel,
    transform: RewardTransform | None,
    wrapper_name: str,
    pool: PromptPool,
    responses: torch.Tensor,
) -> np.ndarray:
    """The reward model's score, through the reward wrapper when one is given."""
    raw = score(rm, pool.tokens, responses)
    if transform is None:
        return raw.double().numpy()
    out = apply_reward_wrapper(
        transform, wrapper_name, pool.records, decode_responses(responses), raw
    )
    return out.double().numpy()


@dataclass
class Certifier:
    """Certifies policies against one gold set. What does not depend on the new policy (the
    reference's log-probabilities and the corrected reward of every gold response) is computed
    on first use and kept: a sweep screens 40-odd checkpoints against one set, and at 25,600
    rows per family those passes took most of each screen (experiments/RESULTS.md at commit
    825f898)."""

    gold: LabelledSet
    reference: Policy
    rm: RewardModel
    transform: RewardTransform | None = None
    wrapper_name: str = ""
    _reference_logprobs: torch.Tensor | None = dataclasses.field(default=None, repr=False)
    _corrected: np.ndarray | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def load(
        cls, world: Path, wrapper: Path | None = None, gold: LabelledSet | None = None
    ) -> Certifier:
        """The world's reference and reward model, the wrapper at ``wrapper`` and ``gold``
        (default: the world's gold set)."""
        world = Path(world)
        return cls(
            gold if gold is not None else load_gold(world),
            load_policy(world / "policy"),
            load_reward_model(world / "reward_model"),
            load_reward_wrapper(wrapper) if wrapper else None,
            str(wrapper or ""),
        )

    def subset(self, rows: np.ndarray) -> Certifier:
        """The same certifier on ``rows`` of its gold set (their passes computed anew, in the
        batches a certifier of those rows alone would use)."""
        return Certifier(
            subset(self.gold, rows), self.reference, self.rm, self.transform, self.wrapper_name
        )

    def reference_logprobs(self) -> torch.Tensor:
        """The reference's :func:`token_logprobs` of every gold response."""
        if self._reference_logprobs is None:
            self._reference_logprobs = token_logprobs(
                self.reference, self.gold.tokens, self.gold.responses
            )
        return self._reference_logprobs

    def corrected(self) -> np.ndarray:
        """The corrected reward of every gold response."""
        if self._corrected is None:
            self._corrected = corrected_reward(
                self.rm, self.transform, self.wrapper_name, self.gold, self.gold.responses
            )
        return self._corrected

    def inputs(
        self, policy: Policy, settings: CertifySettings = DEFAULTS
    ) -> dict[str, CertifyFamilyInputs]:
        """Per family present in the gold set: the inputs of the estimators.

        The KL that decides abstention comes from its own draw of the new policy, not from the
        samples the DR's outcome model averages over: from the same samples, the certificates
        that answer near the KL floor would be those whose samples moved least, whose model
        term runs low (at kl05-s800's dune, 0.137 where it answered against 0.165 where it
        abstained, with the truth at 0.242; experiments/RESULTS.md at commit 825f898)."""
        gold, reference = self.gold, self.reference
        gen = torch.Generator().manual_seed(settings.seed)
        fresh = pool_from_records(
            make_prompts(balanced(settings.fresh_per_family), "certify", gen, shuffle=False)
        )
        fresh_responses = sample(policy, fresh.tokens, 1.0, gen).responses
        s_fresh = corrected_reward(
            self.rm, self.transform, self.wrapper_name, fresh, fresh_responses
        )
        log_w_fresh = log_ratios(policy, reference, fresh.tokens, fresh_responses)
        kl_responses = sample(policy, fresh.tokens, 1.0, gen).responses
        log_w_kl = log_ratios(policy, reference, fresh.tokens, kl_responses)
        log_w = log_ratios(
            policy, reference, gold.tokens, gold.responses, self.reference_logprobs()
        )
        s = self.corrected()
        y = gold.labels.double().numpy()
        out = {}
        for f, fam in enumerate(FAMILIES):
            m = (gold.families == f).numpy()
            if not m.any():
                continue
            mf = (fresh.families == f).numpy()
            out[fam] = CertifyFamilyInputs(
                y[m], log_w[m], s[m], s_fresh[mf], log_w_fresh[mf], log_w_kl[mf]
            )
        return out

    def certify(self, policy_dir: Path, settings: CertifySettings = DEFAULTS) -> dict:
        """The certificate of the policy at ``policy_dir``, with a gold plan where it
        abstains."""
        policy = load_policy(Path(policy_dir))
        inputs = self.inputs(policy, settings)
        report = certify_inputs(inputs, settings)
        if settings.plan_per_family and report.get("balanced", {}).get("abstain"):
            plans = plan_log_ratios(policy, self.reference, list(inputs), settings)
            plan_gold(report, plans, settings)
        report["policy"] = str(policy_dir)
        report["wrapper"] = self.wrapper_name or None
        report["level"] = LEVEL
        return report


def gather(
    policy: Policy,
    reference: Policy,
    rm: RewardModel,
    gold: LabelledSet,
    transform: RewardTransform | None = None,
    wrapper_name: str = "",
    settings: CertifySettings = DEFAULTS,
) -> dict[str, CertifyFamilyInputs]:
    """Per family present in ``gold``: the inputs of the estimators (:meth:`Certifier.inputs`
    of a certifier used once)."""
    return Certifier(gold, reference, rm, transform, wrapper_name).inputs(policy, settings)


def plan_log_ratios(
    policy: Policy, reference: Policy, families: list[str], settings: CertifySettings
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per family, log pi_new / pi_ref of ``settings.plan_per_family`` fresh, unlabelled
    samples of the reference and as many of the new policy: what a larger gold set's weights
    would look like, tail included, before anyone labels it."""
    gen = torch.Generator().manual_seed(_PLAN_SEED + settings.seed)
    counts = dict.fromkeys(families, settings.plan_per_family)
    pool = pool_from_records(make_prompts(counts, "certify-plan", gen, shuffle=False))
    drawn = [
        log_ratios(policy, reference, pool.tokens, sample(p, pool.tokens, 1.0, gen).responses)
        for p in (reference, policy)
    ]
    return {
        fam: tuple(lw[(pool.families == FAMILIES.index(fam)).numpy()] for lw in drawn)
        for fam in families
    }  # type: ignore[misc]


def gold_path(world: Path, gold: Path | None = None) -> Path:
    """The gold labels' file: ``gold``, else the world's gold set."""
    return Path(gold) if gold else Path(world) / "data" / "gold_calib.jsonl"


def load_gold(world: Path, gold: Path | None = None) -> LabelledSet:
    return load_labelled(gold_path(world, gold))


def certifier_digest(world: Path, wrapper: Path | None, gold: Path | None) -> str:
    """A :func:`~rate.provenance.content_digest` of what a :class:`Certifier` reads (the reference,
    the reward model, the wrapper, the gold labels), for results kept for a rerun."""
    world = Path(world)
    return content_digest(
        paths=[world / "policy", world / "reward_model", wrapper, gold_path(world, gold)]
    )


def certify_policy(
    world: Path,
    policy_dir: Path,
    wrapper: Path | None = None,
    gold: Path | None = None,
    settings: CertifySettings = DEFAULTS,
    gold_rows: np.ndarray | None = None,
) -> dict:
    """Certify the policy at ``policy_dir`` against the world's reference from its gold set
    (``gold_rows``: only those rows of it)."""
    gold_set = load_gold(world, gold)
    if gold_rows is not None:
        gold_set = subset(gold_set, gold_rows)
    return Certifier.load(world, wrapper, gold_set).certify(policy_dir, settings)


def subset(gold: LabelledSet, rows: np.ndarray) -> LabelledSet:
    idx = torch.as_tensor(np.asarray(rows), dtype=torch.long)
    return LabelledSet(
        [gold.records[i] for i in idx.tolist()],
        gold.tokens[idx],
        gold.families[idx],
        responses=gold.responses[idx],
        labels=gold.labels[idx],
    )
