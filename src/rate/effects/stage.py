"""Stage 3, treatment_effects: every estimator, its uncertainty, and the truth where known.

Reads a scored file (ours or the reference pipeline's) and writes the reference's effect keys
(``naive_effect``, ``ATT_single_rewrite``, ..., ``ATE_rewritten_rewrite``, each with
``_stderr``; ``reward_std``, ``Y1_count``, ``Y0_count``; the effects config), then ours:
normalised effects (``normalized``: divided by ``reward_std``, the pooled within-group SD of
the original scores, as the reference does; ``normalized_all``: by ``reward_std_all``, the SD
of all original scores), the reference's unpaired RATE SEs, normal and bootstrap intervals, the
rewrite-effect diagnostics, the estimators that are exactly 0 because no rewrite changed the
score (``no_score_change``), effects per group, and, where the scored file holds the score of
the true counterfactual (``perfect rewrite``, the tiny world), the true effect and each
estimator's error in units of its own SE.

The completions are read under the effects section's ``w_original_key``,
``w_counterfactual_key`` and ``w_rewritten_rewrite_key`` (the reference's keys), and the whole
section is echoed into the output as the reference does. ``pool_with`` pools more scored files
into one estimate, as the paper's figures pool datasets per concept; each file's rows are then
also estimated alone, as groups by source.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from rate.catalog import templates_with_reward_key
from rate.columns import ScoreColumns, columns_from_rows, concat_columns, score_columns
from rate.config import Config, EffectsConfig, config_record
from rate.effects.bootstrap import percentile_intervals
from rate.effects.estimators import (
    ESTIMANDS,
    Scores,
    estimator,
    normalised_keys,
    present,
    unchanged_scores,
)
from rate.effects.inputs import extract_scores, identified_estimates
from rate.errors import DataFileError
from rate.io import json_safe as clean
from rate.io import json_writer
from rate.records import W
from rate.rewrite.checks import PASSING
from rate.schema import to_dict
from rate.stats import z_quantile
from rate.store import Layout, StemSet, effects_stem, publish, resolve_input, scored_stems
from rate.templates import scoring_template_names

log = logging.getLogger(__name__)

# only_successful_rewrites: fewer examples than this left is an error (nothing to estimate).
MIN_KEPT = 2


def true_effects(s: Scores, perfect: np.ndarray) -> dict[str, float]:
    """The effect of changing W and nothing else on these examples: the original against its
    true counterfactual (the perfect rewrite)."""
    sign = np.where(s.w, 1.0, -1.0)
    diff = sign * (s.original - perfect)
    out = {}
    masks = {"ATT": s.w, "ATU": ~s.w, "ATE": np.ones_like(s.w)}
    for name in ESTIMANDS:
        d = diff[masks[name]]
        out[name] = float(d.mean()) if d.size else math.nan
        out[f"{name}_stderr"] = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else math.nan
    return out


def errors_in_se(est: dict, truth: dict) -> dict[str, float]:
    """(estimate - truth) / the estimate's SE, for every estimator ``est`` holds."""
    out = {}
    for e in present(est):
        se = est.get(f"{e.name}_stderr", math.nan)
        out[e.name] = (est[e.name] - truth[e.estimand]) / se if se and se > 0 else math.nan
    return out


def normalised(est: dict, by: str = "reward_std") -> dict[str, float]:
    """The effects in reward units divided by ``est[by]``: ``reward_std`` (the pooled
    within-group SD of the original scores, the reference's) or ``reward_std_all`` (the SD of
    all original scores)."""
    std = est.get(by, math.nan)
    return {k: est[k] / std if std and std > 0 else math.nan for k in normalised_keys(est)}


def unchanged_note(names: list[str]) -> str:
    """Why estimates are exactly 0: every rewrite left the score where it was."""
    verb = "is" if len(names) == 1 else "are"
    return (
        f"{', '.join(names)} {verb} exactly 0 with SE 0: no rewrite changed the score (each "
        "pair of texts compared scored exactly alike)"
    )


def normal_intervals(est: dict, level: float) -> dict[str, list[float]]:
    z = z_quantile(level)
    out = {}
    for e in present(est):
        se = est.get(f"{e.name}_stderr", math.nan)
        out[e.name] = [est[e.name] - z * se, est[e.name] + z * se]
    for e in present(est):
        if e.unpaired_se:
            se = est.get(f"{e.name}_stderr_unpaired", math.nan)
            out[f"{e.name}_unpaired"] = [est[e.name] - z * se, est[e.name] + z * se]
    return out


def compute_effects(
    s: Scores,
    perfect: np.ndarray | None,
    n_bootstrap: int,
    seed: int,
    level: float,
    workers: int = 2,
) -> dict:
    """Every estimate, interval and (where known) truth for one set of scores."""
    est, notes = identified_estimates(s)
    result = dict(est)
    result["stderr_kind"] = "paired"
    result["normalized"] = normalised(est)
    result["normalized_all"] = normalised(est, "reward_std_all")
    unchanged = [k for k in unchanged_scores(s) if math.isfinite(est[k])]
    result["no_score_change"] = unchanged
    if unchanged:
        notes = [*notes, unchanged_note(unchanged)]
    intervals: dict = {"level": level, "normal": normal_intervals(est, level)}
    n1, n0 = est["Y1_count"], est["Y0_count"]
    if n_bootstrap > 0 and (n1 >= 2 or n0 >= 2):
        intervals["bootstrap"] = percentile_intervals(s, n_bootstrap, seed, level, workers)
        intervals["n_bootstrap"], intervals["bootstrap_seed"] = n_bootstrap, seed
        intervals["bootstrap_stratified_by"] = W
    result["intervals"] = intervals
    if perfect is not None:
        truth = true_effects(s, perfect)
        result["truth"] = truth
        result["error_in_se"] = errors_in_se(est, truth)
        std = est.get("reward_std", math.nan)
        result["truth_normalized"] = {k: v / std for k, v in truth.items()} if std else {}
    result["notes"] = notes
    return result


def successful_rewrites(cols: ScoreColumns, source: Path) -> tuple[np.ndarray, dict]:
    """The positions of the rows whose two rewrites passed create_dataset's checks, and the
    counts of the others by the first failing label."""
    kept, dropped = [], {}
    for i, checks in enumerate(cols.checks or []):
        if checks is None:
            raise DataFileError(
                f"{source}: example {cols.index[i]} has no rewrite checks (made before they "
                "existed, or by another pipeline); set effects.only_successful_rewrites: false"
            )
        failed = [lab for lab in checks.values() if lab not in PASSING]
        if failed:
            dropped[failed[0]] = dropped.get(failed[0], 0) + 1
        else:
            kept.append(i)
    return np.array(kept, dtype=np.int64), dropped


def rewrite_checks(cols: ScoreColumns, threshold: float) -> tuple[dict, list[str]]:
    """Per pass of create_dataset (``rewrite``, ``rewritten rewrite``): how many rewrites were
    checked, the share that passed, the failures by label; and a note for each pass whose
    failed share exceeds ``threshold``. Empty for rows without checks."""
    per_pass: dict[str, dict] = {}
    for checks in cols.checks or []:
        for name, label in (checks or {}).items():
            entry = per_pass.setdefault(name, {"checked": 0, "passed": 0, "failed": {}})
            entry["checked"] += 1
            if label in PASSING:
                entry["passed"] += 1
            else:
                entry["failed"][label] = entry["failed"].get(label, 0) + 1
    notes = []
    for name, entry in per_pass.items():
        entry["success_rate"] = entry["passed"] / entry["checked"]
        failed = entry["checked"] - entry["passed"]
        if failed / entry["checked"] > threshold:
            labels = ", ".join(f"{k} {v}" for k, v in sorted(entry["failed"].items()))
            notes.append(
                f"{failed} of {entry['checked']} '{name}' rewrites ({failed / entry['checked']:.0%})"
                f" failed their checks ({labels}), more than effects.max_failed_rewrites "
                f"({threshold:.0%}): RATE takes each rewrite for the text with W flipped, so the "
                "estimate may be shrunk toward 0; improve the rewrites or set "
                "effects.only_successful_rewrites: true"
            )
    return per_pass, notes


def effects_for_rows(rows: list[dict], ec: EffectsConfig, source: Path, workers: int = 2) -> dict:
    """The effects of rows read by :func:`rate.records.read_examples` (their rewrite checks
    always: the output reports them)."""
    cols = columns_from_rows(rows, ec.reward_key, ec.group_by, True, ec.completion_keys())
    return effects_for_columns(cols, ec, source, workers)


def effects_for_columns(
    cols: ScoreColumns,
    ec: EffectsConfig,
    source: Path,
    workers: int = 2,
    group_by: str | None = None,
) -> dict:
    """Every estimate, interval and (where known) truth of one scored file's columns (or of
    several files' pooled columns); per group where ``group_by`` (default: the section's)
    names the groups the columns hold."""
    group_by = group_by or ec.group_by
    n_rows = len(cols)
    by_pass, check_notes = rewrite_checks(cols, ec.max_failed_rewrites)
    checks = None
    if ec.only_successful_rewrites:
        check_notes = []  # the failed rewrites are left out, as the notes would recommend
        passed, dropped = successful_rewrites(cols, source)
        cols = cols.take(passed)
        checks = {"kept": len(cols), "dropped": dropped}
        log.info(
            "only successful rewrites: kept %d of %d examples (dropped: %s)",
            len(cols),
            n_rows,
            ", ".join(f"{k} {v}" for k, v in sorted(dropped.items())) or "none",
        )
        if len(cols) < MIN_KEPT:
            raise DataFileError(
                f"{source}: only {len(cols)} examples have rewrites that passed the checks; "
                "look at the checks in the create_dataset metadata"
            )
    scores, perfect, keep, excluded = extract_scores(
        cols, ec.reward_key, source, ec.drop_incomplete
    )
    result = compute_effects(scores, perfect, ec.n_bootstrap, ec.bootstrap_seed, ec.level, workers)
    result["input"] = {
        "file": str(source),
        "n_rows": n_rows,
        "n_used": len(keep),
        "excluded": excluded,
    }
    if checks is not None:
        result["input"]["only_successful_rewrites"] = checks
    if by_pass:
        result["rewrite_checks"] = by_pass
        result["notes"] = check_notes + result["notes"]
    if group_by:
        result["input"]["groups_by"] = group_by
        result["groups"] = _per_group(cols.take(keep), ec, source, group_by)
    for note in result["notes"]:
        log.warning(note)
    return result


def _per_group(cols: ScoreColumns, ec: EffectsConfig, source: Path, group_by: str) -> dict:
    groups: dict[str, list[int]] = {}
    for i, value in enumerate(cols.groups or []):
        if value is None:
            raise DataFileError(
                f"{source}: example {cols.index[i]} has no field {group_by!r} "
                "(effects.group_by); use a field of the examples or their metadata"
            )
        groups.setdefault(str(value), []).append(i)
    out = {}
    for value, members in sorted(groups.items()):
        part = cols.take(np.array(members, dtype=np.int64))
        scores, perfect, _, _ = extract_scores(part, ec.reward_key, source, True)
        out[value] = compute_effects(scores, perfect, 0, ec.bootstrap_seed, ec.level)
    return out


def pooled_columns(sources: list[Path], ec: EffectsConfig) -> tuple[ScoreColumns, str | None]:
    """The columns of one scored file, or of several pooled (each row's source file recorded
    as its group, unless effects.group_by names another field). -> (columns, group_by)"""
    parts = []
    for path in sources:
        cols = score_columns(path, ec.reward_key, ec.group_by, True, ec.completion_keys())
        if len(sources) > 1 and not cols.has_key:
            raise DataFileError(
                f"{path}: no scores under reward_key {ec.reward_key!r} (a file of "
                f"effects.pool_with); reward keys present: {', '.join(cols.reward_keys) or 'none'}"
            )
        parts.append(cols)
    if len(parts) == 1:
        return parts[0], ec.group_by
    labels = [p.name for p in sources]
    if len(set(labels)) < len(labels):
        raise DataFileError(f"effects.pool_with: a file is pooled twice ({', '.join(labels)})")
    return concat_columns(parts, labels), ec.group_by or "source"


def effects_input_stems(ec: EffectsConfig) -> StemSet:
    """What ``latest`` takes for the effects of ``ec``: ``<dataset>_<models>_scored`` with the
    model ``ec.score`` names, or a scoring template writing ``ec.reward_key``, among the models
    (the reference's names, the reward key being the model id), or ``<dataset>_scored`` (ours
    before); never another dataset's files."""
    return scored_stems(
        ec.dataset_name,
        set(scoring_template_names()),
        {ec.score} | templates_with_reward_key(ec.reward_key),
    )


def treatment_effects(config: Config, layout: Layout) -> Path:
    """Run stage 3 with ``config``; -> the written effects file."""
    ec = config.need("effects", "treatment_effects")
    folder = layout.scored / ec.dataset_folder if ec.dataset_folder else layout.scored
    stems = effects_input_stems(ec)
    source = resolve_input(folder, ec.dataset_filename, stems, ".jsonl", config.smoke_test)
    sources = [source] + [
        resolve_input(folder, name, stems, ".jsonl", config.smoke_test) for name in ec.pool_with
    ]
    log.info(
        "treatment_effects: %s, reward key %s", ", ".join(p.name for p in sources), ec.reward_key
    )
    cols, group_by = pooled_columns(sources, ec)
    result = effects_for_columns(cols, ec, source, group_by=group_by)
    if len(sources) > 1:
        result["input"]["files"] = [str(p) for p in sources]
    # The reference echoes its whole effects section into the file; so does this, with the
    # file actually read (a name, where the config may say 'latest').
    result.update(to_dict(ec))
    result.update(dataset_filename=source.name, smoke_test=config.smoke_test)
    stem = effects_stem(ec.dataset_name, ec.concept, ec.score)
    out = publish(
        layout.effects,
        stem,
        ".json",
        config.smoke_test,
        json_writer(clean(result)),
        "treatment_effects",
        {
            "input": str(source) if len(sources) == 1 else [str(p) for p in sources],
            "config": config_record(config),
        },
    )
    naive, rate = estimator("naive", "ATE").name, estimator("rate", "ATE").name
    log.info(
        "wrote %s: naive %.4g, RATE ATE %.4g (SE %.3g)%s",
        out,
        result[naive],
        result[rate],
        result[f"{rate}_stderr"],
        f", true ATE {result['truth']['ATE']:.4g}" if "truth" in result else "",
    )
    return out
