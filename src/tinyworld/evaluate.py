"""Truth evaluation: a policy's expected expert quality beside its proxy reward and KL.

This is evaluation code and may use the oracle. Quality is measured on fresh prompts drawn
from a fixed evaluation seed (balanced over families), so every policy is judged on the same set.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from rate.errors import RateError
from rate.schema import from_dict
from tinyworld.data import load_labelled, pool_from_records
from tinyworld.dev_eval import pearson, syllable_counts
from tinyworld.models import load_policy, load_reward_model
from tinyworld.oracle import Oracle
from tinyworld.policy import Policy
from tinyworld.prompts import balanced, make_prompts
from tinyworld.reward_model import RewardModel
from tinyworld.sampling import sample, score, sequence_kl
from tinyworld.shortcuts import check_world_shortcuts
from tinyworld.vocab import FAMILIES, SYLLABLE_ID
from tinyworld.worldconfig import WorldConfig

TRUTH_FILE = Path("truth") / "world.json"
EVAL_SEED = 0xE7A1


def find_world(start: Path) -> Path:
    """The nearest directory at or above ``start`` that holds truth/world.json."""
    start = Path(start).resolve()
    for d in (start, *start.parents):
        if (d / TRUTH_FILE).is_file():
            return d
    raise RateError(
        f"no world found at or above {start} (looked for {TRUTH_FILE}); pass --world DIR"
    )


def load_oracle(world: Path) -> tuple[Oracle, WorldConfig]:
    path = Path(world) / TRUTH_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise RateError(f"{path}: cannot read the world's truth file ({err})") from err
    config = from_dict(WorldConfig, data, str(path))
    return Oracle.from_world(config), config


def evaluate_policy(
    policy: Policy,
    oracle: Oracle,
    rm: RewardModel | None = None,
    reference: Policy | None = None,
    per_family: int = 500,
    temperature: float = 1.0,
    seed: int = EVAL_SEED,
    pairs: dict[str, list[list[str]]] | None = None,
) -> dict:
    """Per family and on the balanced mix: true quality (with SE), and proxy reward and KL when
    the reward model and reference are given; with ``pairs`` (family -> pairs of syllables), the
    mean count per response of each adjacent pair in its family."""
    gen = torch.Generator().manual_seed(seed)
    pool = pool_from_records(make_prompts(balanced(per_family), "eval", gen, shuffle=False))
    responses = sample(policy, pool.tokens, temperature, gen).responses
    quality = oracle.quality(pool.tokens, responses).double()
    proxy = score(rm, pool.tokens, responses).double() if rm is not None else None
    kl = (
        sequence_kl(policy, reference, pool.tokens, responses).double()
        if reference is not None
        else None
    )
    report: dict = {"per_family": {}, "n_per_family": per_family, "temperature": temperature}
    for f, fam in enumerate(FAMILIES):
        m = pool.families == f
        row = {
            "true_quality": round(float(quality[m].mean()), 6),
            "true_quality_se": round(float(quality[m].std() / math.sqrt(int(m.sum()))), 6),
        }
        if proxy is not None:
            row["proxy_reward"] = round(float(proxy[m].mean()), 6)
        if kl is not None:
            row["kl"] = round(float(kl[m].mean()), 6)
        row["syllable_counts"] = syllable_counts(responses[m])
        if pairs and fam in pairs:
            row["pair_counts"] = {
                " ".join(p): round(float(pair_count(responses[m], p).double().mean()), 4)
                for p in pairs[fam]
            }
        report["per_family"][fam] = row
    fams = report["per_family"].values()
    report["balanced"] = {
        key: round(sum(r[key] for r in fams) / len(FAMILIES), 6)
        for key in ("true_quality", "proxy_reward", "kl")
        if all(key in r for r in fams)
    }
    report["balanced"]["true_quality_se"] = round(
        math.sqrt(sum(r["true_quality_se"] ** 2 for r in fams)) / len(FAMILIES), 6
    )
    return report


def pair_count(responses: torch.Tensor, pair: list[str]) -> torch.Tensor:
    """Adjacent occurrences of ``pair`` in each response, shape (B,)."""
    first, second = SYLLABLE_ID[pair[0]], SYLLABLE_ID[pair[1]]
    return ((responses[:, :-1] == first) & (responses[:, 1:] == second)).sum(-1)


def world_statistics(world: Path, per_family: int = 500) -> dict:
    """What a built world looks like against SPEC B.3: reference quality, RM agreement with
    crowd and expert labels per family, what the RM learned of every planted shortcut (measured
    afresh, so worlds built before the check was recorded get it too) and every run's
    balanced-sample evaluation."""
    world = Path(world)
    oracle, config = load_oracle(world)
    reference = load_policy(world / "policy")
    rm = load_reward_model(world / "reward_model")
    stats: dict = {"rm_crowd_pearson": {}, "rm_expert_pearson": {}}
    for key, path in (
        ("rm_crowd_pearson", "reward_model/train.jsonl"),
        ("rm_expert_pearson", "data/gold_calib.jsonl"),
    ):
        rows = load_labelled(world / path)
        scores = score(rm, rows.tokens, rows.responses)
        for f, fam in enumerate(FAMILIES):
            m = rows.families == f
            stats[key][fam] = round(pearson(scores[m], rows.labels[m]), 4)
    stats["shortcuts"] = check_world_shortcuts(rm, reference, oracle, config.labels)
    pairs = {fam: [p.pair for p in ps] for fam, ps in config.labels.pair_premium.items()}
    stats["reference"] = evaluate_policy(reference, oracle, rm, reference, per_family, pairs=pairs)
    stats["runs"] = {}
    for checkpoint in sorted(p for p in (world / "runs").glob("*/checkpoint") if p.is_dir()):
        stats["runs"][checkpoint.parent.name] = evaluate_policy(
            load_policy(checkpoint), oracle, rm, reference, per_family, pairs=pairs
        )
    # How often each policy writes the marker syllables that the crowd vendor paid a bonus for.
    reports = {"reference": stats["reference"], **stats["runs"]}
    stats["marker_counts"] = {
        f"{fam}:{tok}": {
            name: r["per_family"][fam]["syllable_counts"][tok] for name, r in reports.items()
        }
        for fam, tokens in config.labels.token_bonus.items()
        for tok in tokens
    }
    # ... and how often they write the pairs the vendor paid a premium for.
    stats["pair_counts"] = {
        f"{fam}:{' '.join(p)}": {
            name: r["per_family"][fam]["pair_counts"][" ".join(p)] for name, r in reports.items()
        }
        for fam, ps in pairs.items()
        for p in ps
    }
    return stats
