"""Markdown written into a world: the RM's TRAINING.md, each run's NOTES.md, runs/README.md.

Only what an analyst could measure goes here (dev proxy reward, KL, syllable counts); the truth
stays in truth/ and in the evaluation reports.
"""

from __future__ import annotations

from tinyworld.rl_config import RLConfig
from tinyworld.vocab import FAMILIES
from tinyworld.worldconfig import RunSpec, TrainConfig


def training_notes(
    n_rows: int, temperature: float, train: TrainConfig, history: list[dict], policy_dir: str
) -> str:
    per_family = n_rows // len(FAMILIES)
    return f"""# How this reward model was trained

- Data: {n_rows:,} responses ({per_family:,} per family), sampled from the reference policy
  (`{policy_dir}/`) at temperature {temperature}, each labelled once by the crowd vendor.
- Model: 2-layer bidirectional transformer, d_model 96, 4 heads, d_ff 192, mean-pooled,
  MLP head; `config.json` beside the weights.
- Objective: mean-squared error against the crowd label; Adam, lr {train.lr}, batch
  {train.batch_size}, {train.epochs} epochs, seed {train.seed}.
- Final training MSE: {history[-1]["mse"]:.5f} (epoch 1: {history[0]["mse"]:.5f}).
- `train.jsonl` is a quality-assurance sample of the training batch: the first rows of each
  family in the batch's random order, with the crowd label.
"""


def top_shifts(
    run_counts: dict[str, float], ref_counts: dict[str, float], n: int = 2
) -> list[tuple[str, float, float]]:
    """The ``n`` syllables whose mean count rose most from the reference to the run."""
    ranked = sorted(run_counts, key=lambda s: run_counts[s] - ref_counts.get(s, 0.0), reverse=True)
    return [(s, ref_counts.get(s, 0.0), run_counts[s]) for s in ranked[:n]]


def describe_mix(cfg: RLConfig) -> str:
    if cfg.family_weights is None:
        return "balanced"
    used = {f: w for f, w in cfg.family_weights.items() if w > 0}
    if len(set(used.values())) == 1:
        return "/".join(used)
    return "/".join(f"{f} {w:.2f}" for f, w in used.items())


def run_notes(spec: RunSpec, cfg: RLConfig, dev_eval: dict, reference_eval: dict) -> str:
    lines = [
        f"# Run `{spec.name}`",
        "",
        f"KL-regularised REINFORCE from `{cfg.policy}/` against `{cfg.reward_model}/`: kl_coef "
        f"{cfg.kl_coef}, {cfg.steps} steps, {cfg.batch_prompts} prompts x {cfg.samples_per_prompt} "
        f"samples per step, lr {cfg.lr}, temperature {cfg.temperature}, seed {cfg.seed}; prompt mix: "
        f"{describe_mix(cfg)}. Full recipe in `run_config.json`, training curve in `log.jsonl`, "
        "weights in `checkpoint/`.",
        "",
        f"Dev evaluation (`dev_eval.json`, {dev_eval['n_prompts']} dev prompts in the pilot mix, one "
        f"sample each at temperature 1): proxy reward {dev_eval['proxy_reward']['mean']:.3f} "
        f"(reference {reference_eval['proxy_reward']['mean']:.3f}), KL {dev_eval['kl']:.2f}.",
        "",
        "| family | n | proxy (ref -> run) | KL | syllables that rose most (mean count of 8) |",
        "|---|---|---|---|---|",
    ]
    for fam in FAMILIES:
        run, ref = dev_eval["per_family"].get(fam), reference_eval["per_family"].get(fam)
        if run is None or ref is None:
            continue
        shifts = ", ".join(
            f"`{s}` {a:.1f} -> {b:.1f}"
            for s, a, b in top_shifts(run["syllable_counts"], ref["syllable_counts"])
        )
        lines.append(
            f"| {fam} | {run['n']} | {ref['proxy_reward']:.3f} -> {run['proxy_reward']:.3f} | {run['kl']:.2f} | {shifts} |"
        )
    if spec.shows:
        lines += ["", f"What it shows: {spec.shows}"]
    return "\n".join(lines) + "\n"


def runs_index(rows: list[tuple[RunSpec, RLConfig, dict]], reference_eval: dict) -> str:
    lines = [
        "# Earlier RL runs",
        "",
        "Every run starts from `policy/` and is KL-regularised towards it. Dev figures are on the",
        "dev pool (pilot mix); see each run's NOTES.md for per-family detail.",
        "",
        "| run | kl_coef | steps | prompt mix | dev proxy | dev KL | what it shows |",
        "|---|---|---|---|---|---|---|",
        f"| (reference) | - | - | - | {reference_eval['proxy_reward']['mean']:.3f} | 0.00 | the SFT policy |",
    ]
    for spec, cfg, ev in rows:
        lines.append(
            f"| [{spec.name}]({spec.name}/NOTES.md) | {cfg.kl_coef} | {cfg.steps} | {describe_mix(cfg)} | "
            f"{ev['proxy_reward']['mean']:.3f} | {ev['kl']:.2f} | {spec.shows} |"
        )
    return "\n".join(lines) + "\n"
