"""A second quality model for the tilt's model forecast, measured and not kept: neutralise
each flagged token, score, and add its gold quality effect.

    python experiments/tilt/neutralised.py WORLD WRAPPER AUDIT_JSON STUDY_JSON [FAMILY ...]

The model forecast of `rate tinyrlhf tilt` calibrates gold labels on the corrected reward
(the RM minus the wrapper's excesses). Where the RM pays a flagged token more in pi_beta's
contexts (a response written full of it) than the audit measured in the reference's, the
corrected reward keeps the difference. This harness tries the other route: replace each
occurrence of a flagged token (the audit's flagged tokens of the family) by a syllable drawn
from the reference's mix at that position (the flagged ones left out), score that response
through the wrapper (for the pairs), average over two draws, and add the token's
gold-supported quality effect per occurrence (quality is additive over positions, which the
audit's quality side also uses). Gold labels are calibrated on the same neutralised reward.

It prints, per family, reward and beta: the model forecast's change with this proxy and with
the corrected reward, beside the oracle's change read from a tilt study's JSON. It reads no
truth itself.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import numpy as np
import torch

from rate.tilt.forecast import model_forecast
from rate.tilt.guided import additive_fit, sample_tilt
from rate.tilt.run import CORRECTED, RAW, Rewards, reference_samples
from rate.tinyrlhf.data import load_labelled, pool_from_records
from rate.tinyrlhf.models import load_policy, load_reward_model
from rate.tinyrlhf.vocab import FAMILIES, N_SYLLABLES, RESPONSE_LEN, SYLLABLE_ID

DRAWS = 2
SAMPLES = 10_000


def flagged_tokens(audit: dict) -> dict[str, dict[int, float]]:
    """Per family, each flagged token's id and gold quality effect."""
    out: dict[str, dict[int, float]] = {}
    for row in audit["candidates"]:
        if row["flagged"] and row["kind"] == "token":
            out.setdefault(row["family"], {})[SYLLABLE_ID[row["feature"]]] = row["quality_effect"]
    return out


def neutralise(rewards, tokens, mix, effect, gen, pool, responses) -> np.ndarray:
    """The neutralised reward of ``responses``: flagged tokens redrawn from the reference's mix
    at their positions, scored through the wrapper, plus their quality effects."""
    if not tokens:
        return rewards(pool, responses)[CORRECTED]
    hit = torch.zeros(responses.shape, dtype=torch.bool)
    for t in tokens:
        hit |= responses == t
    total = np.zeros(len(responses))
    for _ in range(DRAWS):
        drawn = torch.stack(
            [torch.multinomial(mix[p], len(responses), True, generator=gen)
             for p in range(RESPONSE_LEN)], 1,
        )  # fmt: skip
        total += rewards(pool, torch.where(hit, drawn, responses))[CORRECTED]
    return total / DRAWS + effect[responses.numpy()].sum(1)


def with_neutralised(rewards, neutralised, pool, responses) -> dict[str, np.ndarray]:
    return {**rewards(pool, responses), "neutral": neutralised(pool, responses)}


def main(world: Path, wrapper: Path, audit_path: Path, study_path: Path, families: list[str]):
    rewards = Rewards(load_reward_model(world / "reward_model"), wrapper)
    policy = load_policy(world / "policy")
    gold = load_labelled(world / "data" / "gold_calib.jsonl")
    flagged = flagged_tokens(json.loads(audit_path.read_text()))
    oracle = {
        (r["family"], r["reward"], r["beta"]): r["oracle_change"]
        for r in json.loads(study_path.read_text())["rows"]
    }
    gen = torch.Generator().manual_seed(1)
    print("| family | reward | beta | neutralised: change [95%] | corrected: change | oracle |")
    print("|---|---|---|---|---|---|")
    for f, fam in enumerate(FAMILIES):
        if families and fam not in families:
            continue
        tokens = flagged.get(fam, {})
        effect = np.zeros(N_SYLLABLES)
        for t, q in tokens.items():
            effect[t] = q
        ref_responses, ref_pools, ref_r = [], [], {RAW: [], CORRECTED: []}
        for pool, responses in reference_samples(policy, fam, SAMPLES, gen):
            ref_responses.append(responses)
            ref_pools.append(pool)
            for k, v in rewards(pool, responses).items():
                ref_r[k].append(v)
        assert len(ref_pools) == 1, "one chunk of reference samples: SAMPLES <= the chunk"
        ref_resp = torch.cat(ref_responses)
        ref_r = {k: np.concatenate(v) for k, v in ref_r.items()}
        mix = torch.stack(
            [torch.bincount(ref_resp[:, p], minlength=N_SYLLABLES) for p in range(RESPONSE_LEN)]
        ).double()
        mix[:, list(tokens)] = 0.0
        mix /= mix.sum(1, keepdim=True)

        neutralised = partial(neutralise, rewards, tokens, mix, effect, gen)

        m = (gold.families == f).numpy()
        rows = np.nonzero(m)[0]
        gold_pool = pool_from_records([gold.records[i] for i in rows])
        gold_resp = gold.responses[torch.as_tensor(rows)]
        y = gold.labels.double().numpy()[m]
        s_gold = {"neutral": neutralised(gold_pool, gold_resp),
                  CORRECTED: rewards(gold_pool, gold_resp)[CORRECTED]}  # fmt: skip
        s_ref = {"neutral": neutralised(ref_pools[0], ref_resp), CORRECTED: ref_r[CORRECTED]}

        score = partial(with_neutralised, rewards, neutralised)

        for kind in rewards.kinds:
            effects = additive_fit(ref_resp, ref_r[kind])
            for beta in (0.1, 0.05):
                drawn = sample_tilt(policy, fam, score, kind, beta, effects, SAMPLES, gen)
                w = drawn.weights()
                fc = {
                    proxy: model_forecast(
                        y, s_gold[proxy], drawn.rewards[proxy], w, s_ref[proxy], beta, 400
                    )
                    for proxy in ("neutral", CORRECTED)
                }
                lo, hi = fc["neutral"]["interval"]
                print(
                    f"| {fam} | {kind} | {beta:g} | {fc['neutral']['change']:+.3f} "
                    f"[{lo:+.3f}, {hi:+.3f}] | {fc[CORRECTED]['change']:+.3f} "
                    f"| {oracle.get((fam, kind, beta), float('nan')):+.3f} |",
                    flush=True,
                )
        for t, q in tokens.items():
            row = next(
                r for r in json.loads(audit_path.read_text())["candidates"]
                if r["family"] == fam and r["feature"] == list(SYLLABLE_ID)[t]
            )  # fmt: skip
            print(f"{fam}: flagged {list(SYLLABLE_ID)[t]}, quality effect {q:+.3f} "
                  f"(SE {row['quality_se']:.3f})")  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__.split("\n\n")[1])
    main(*(Path(a) for a in sys.argv[1:5]), sys.argv[5:])
