"""A second quality model for the tilt's model forecast, measured and not kept: neutralise
each flagged token, score, and add its gold quality effect.

    python experiments/tilt/neutralised.py WORLD WRAPPER AUDIT_JSON STUDY_JSON [FAMILY ...]

The model forecast of `rate world tilt` calibrates gold labels on the corrected reward
(the RM minus the wrapper's excesses). Where the RM pays a flagged token more in pi_beta's
contexts (a response written full of it) than the audit measured in the reference's, the
corrected reward keeps the difference. This harness tries the other route: replace each
occurrence of a flagged token (the audit's flagged tokens of the family) by a syllable drawn
from the reference's mix at that position (the flagged ones left out), score that response
through the wrapper (for the pairs), average over two draws; the quality is then
a + b * that score + the tokens' gold-supported quality effects, one per occurrence (quality is
additive over positions, which the audit's quality side also uses), with a, b fitted on the
gold rows' labels less their own tokens' effects, and kept in the labels' range.

It prints, per family, reward and beta: the model forecast's change with this proxy (and with
every flagged token's quality effect moved by -1 and +1 SE) and with the corrected reward,
beside the oracle's change read from a tilt study's JSON; for the raw reward, where pi_beta
writes a flagged token in all 8 slots, that share of pi_beta and the RM's raw and corrected
reward there. It reads no truth itself.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import numpy as np
import torch

from tinyworld.data import load_labelled, pool_from_records
from tinyworld.models import load_policy, load_reward_model
from tinyworld.tilt.forecast import calibration_line, model_forecast
from tinyworld.tilt.guided import additive_fit, sample_tilt
from tinyworld.tilt.run import CORRECTED, RAW, Rewards, reference_samples
from tinyworld.vocab import FAMILIES, N_SYLLABLES, RESPONSE_LEN, SYLLABLE_ID

DRAWS = 2
SAMPLES = 10_000
NEUTRAL, OFFSET, SE_SHIFT, FULL = "neutral", "offset", "se_shift", "full"


def flagged_tokens(audit: dict) -> dict[str, dict[int, dict]]:
    """Per family, each flagged token's id and audit row."""
    out: dict[str, dict[int, dict]] = {}
    for row in audit["candidates"]:
        if row["flagged"] and row["kind"] == "token":
            out.setdefault(row["family"], {})[SYLLABLE_ID[row["feature"]]] = row
    return out


def neutralise(rewards, tokens, mix, gen, pool, responses) -> dict[str, np.ndarray]:
    """Each kind of reward of ``responses`` and: the wrapped RM score with the flagged tokens
    redrawn from the reference's mix at their positions (``neutral``), the sum of their quality
    effects (``offset``) and of their SEs (``se_shift``), and whether all 8 slots hold a
    flagged token (``full``)."""
    out = rewards(pool, responses)
    effect, se = np.zeros(N_SYLLABLES), np.zeros(N_SYLLABLES)
    hit = torch.zeros(responses.shape, dtype=torch.bool)
    for t, row in tokens.items():
        effect[t], se[t] = row["quality_effect"], row["quality_se"]
        hit |= responses == t
    total = np.zeros(len(responses))
    for _ in range(DRAWS if tokens else 1):
        drawn = torch.stack(
            [torch.multinomial(mix[p], len(responses), True, generator=gen)
             for p in range(RESPONSE_LEN)], 1,
        )  # fmt: skip
        total += rewards(pool, torch.where(hit, drawn, responses))[CORRECTED]
    r = responses.numpy()
    out[NEUTRAL] = total / (DRAWS if tokens else 1)
    out[OFFSET], out[SE_SHIFT] = effect[r].sum(1), se[r].sum(1)
    out[FULL] = hit.all(1).numpy().astype(np.float64)
    return out


def neutral_change(y, gold, tilt, w, ref, shift: float = 0.0) -> float:
    """pi_beta's change in quality by the neutralised proxy, the quality effects moved by
    ``shift`` SEs."""
    a, b = calibration_line(gold[NEUTRAL], y - gold[OFFSET] - shift * gold[SE_SHIFT])

    def quality(x):
        q = a + b * x[NEUTRAL] + x[OFFSET] + shift * x[SE_SHIFT]
        return np.clip(q, y.min(), y.max())

    return float(np.dot(w, quality(tilt)) / w.sum() - quality(ref).mean())


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
    print("| family | reward | beta | neutralised: change (-1 SE, +1 SE) | corrected: change "
          "| oracle | pi_beta all flagged: share, RM, corrected |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for f, fam in enumerate(FAMILIES):
        if families and fam not in families:
            continue
        tokens = flagged.get(fam, {})
        ref_responses, ref_pools = [], []
        for pool, responses in reference_samples(policy, fam, SAMPLES, gen):
            ref_responses.append(responses)
            ref_pools.append(pool)
        assert len(ref_pools) == 1, "one chunk of reference samples: SAMPLES <= the chunk"
        ref_resp = ref_responses[0]
        mix = torch.stack(
            [torch.bincount(ref_resp[:, p], minlength=N_SYLLABLES) for p in range(RESPONSE_LEN)]
        ).double()
        mix[:, list(tokens)] = 0.0
        mix /= mix.sum(1, keepdim=True)
        score = partial(neutralise, rewards, tokens, mix, gen)
        ref = score(ref_pools[0], ref_resp)
        m = (gold.families == f).numpy()
        rows = np.nonzero(m)[0]
        gold_x = score(
            pool_from_records([gold.records[i] for i in rows]),
            gold.responses[torch.as_tensor(rows)],
        )
        y = gold.labels.double().numpy()[m]
        for kind in rewards.kinds:
            effects = additive_fit(ref_resp, ref[kind])
            for beta in (0.1, 0.05):
                drawn = sample_tilt(policy, fam, score, kind, beta, effects, SAMPLES, gen)
                tilt, w = drawn.rewards, drawn.weights()
                changes = [neutral_change(y, gold_x, tilt, w, ref, k) for k in (0, -1, 1)]
                corrected = model_forecast(
                    y, gold_x[CORRECTED], tilt[CORRECTED], w, ref[CORRECTED], beta, 1
                )["change"]
                full = w * tilt[FULL]
                packed = (
                    f"{full.sum() / w.sum():.2f}, {np.dot(full, tilt[RAW]) / full.sum():.2f}, "
                    f"{np.dot(full, tilt[CORRECTED]) / full.sum():.2f}"
                    if kind == RAW and full.sum() > 0
                    else "-"
                )
                print(
                    f"| {fam} | {kind} | {beta:g} | {changes[0]:+.3f} ({changes[1]:+.3f}, "
                    f"{changes[2]:+.3f}) | {corrected:+.3f} "
                    f"| {oracle.get((fam, kind, beta), float('nan')):+.3f} | {packed} |",
                    flush=True,
                )
        print(f"{fam}: reference mean corrected reward {ref[CORRECTED].mean():.2f}")
        for row in tokens.values():
            print(
                f"{fam}: flagged {row['feature']}: RM effect {row['rm_effect']:.3f} in reference "
                f"responses, excess {row['excess']:.3f}, quality effect "
                f"{row['quality_effect']:+.3f} (SE {row['quality_se']:.3f})"
            )


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__.split("\n\n")[1])
    main(*(Path(a) for a in sys.argv[1:5]), sys.argv[5:])
