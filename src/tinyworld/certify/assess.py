"""`rate world assess`: for every run of a world (and any policy given), ship or not, with
the issues found. Analysis code: it reads the runs, the audit's flags and the gold labels,
never the world's truth.

The decision is the certification's guardrails (:func:`tinyworld.certify.certificate.verdict`); the
other findings say why a run failed them, or what to watch in one that passed:

- a flagged shortcut feature (from the audit) whose use rose over the reference's;
- a family whose KL to the reference is far above the run's dev KL (the dev pool's pilot mix
  under-weights it, so the dev figures hide its drift);
- a run trained on a prompt mix that under-weights some families (the pilot-mix trap).

Written into a folder, each run's assessment is kept under ``OUT/assessed/NAME.json`` with a
digest of everything it read, so that a rerun (after a kill, or with a run added) certifies
only the runs whose inputs changed; the folder is locked while an assessment writes it.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import torch

from rate.errors import BusyError, ConfigError, RateError
from rate.filesets import write_set
from rate.io import json_safe, read_json
from rate.provenance import MadeFrom, folder_lock, keep, made_from, read_kept
from tinyworld.certify.certificate import CertifySettings
from tinyworld.certify.certify import Certifier, certifier_digest, load_gold
from tinyworld.data import pool_from_records
from tinyworld.models import load_policy
from tinyworld.prompts import balanced, make_prompts
from tinyworld.sampling import sample
from tinyworld.vocab import FAMILIES, SYLLABLE_ID

log = logging.getLogger(__name__)

# A flagged feature's use "rose" when a response holds this many more of it on average.
USE_RISE = 0.25
# A family's KL is "hidden" by the dev figures when it is this many times the dev KL (and large).
KL_RATIO = 3.0
KL_FLOOR = 2.0
# A mix "under-weights" a family drawn less than half as often as under the uniform mix.
UNDER_WEIGHT = 0.5
# Why a folder under runs/ is left out of an assessment.
NO_CHECKPOINT = "no checkpoint/: still training, killed or failed"
# Where each run's assessment is kept in the output folder (keyed on the code too: rows kept
# by other code are computed anew).
JOURNAL = "assessed"


def feature_use(policy, features: dict[str, list[str]], per_family: int, seed: int) -> dict:
    """Mean occurrences per response of each feature (a token, or two adjacent syllables),
    on fresh balanced samples of ``policy``; ``features``: family -> feature names."""
    gen = torch.Generator().manual_seed(seed)
    pool = pool_from_records(make_prompts(balanced(per_family), "assess", gen, shuffle=False))
    responses = sample(policy, pool.tokens, 1.0, gen).responses
    out: dict[str, dict[str, float]] = {}
    for f, fam in enumerate(FAMILIES):
        r = responses[pool.families == f]
        for feature in features.get(fam, []):
            parts = [SYLLABLE_ID[p] for p in feature.split(" ")]
            if len(parts) == 1:
                count = (r == parts[0]).sum(-1)
            else:
                count = ((r[:, :-1] == parts[0]) & (r[:, 1:] == parts[1])).sum(-1)
            out.setdefault(fam, {})[feature] = round(float(count.double().mean()), 4)
    return out


def flagged_features(audit: dict) -> dict[str, list[str]]:
    """Family -> the features the audit flagged (ours), with the syllables its second stage
    flagged and the pairs that echo a flag (the wrapper corrects those too)."""
    out: dict[str, list[str]] = {}
    for row in audit["candidates"]:
        if row["flagged"] or row.get("pair_syllable_flagged") or row.get("echo_of"):
            out.setdefault(row["family"], []).append(row["feature"])
    return out


def _dev_kl(run: Path) -> float | None:
    path = run / "dev_eval.json"
    if not path.is_file():
        return None
    data = read_json(path)
    value = data.get("kl_mean", data.get("kl"))
    return float(value) if isinstance(value, (int, float)) else None


def mix_findings(run: Path) -> list[str]:
    """The pilot-mix trap: families the run's training mix under-weights."""
    config_path = run / "run_config.json"
    if not config_path.is_file():
        return []
    weights = read_json(config_path).get("family_weights")
    if not weights:
        return []
    total = sum(weights.values())
    light = [
        f"{fam} ({weights.get(fam, 0) / total:.1%})"
        for fam in FAMILIES
        if weights.get(fam, 0) / total < UNDER_WEIGHT / len(FAMILIES)
    ]
    if not light:
        return []
    return [
        f"trained on a prompt mix that under-weights {', '.join(light)}: their drift is barely "
        "seen in training or on the dev pool"
    ]


def assess_policy(
    certifier: Certifier,
    name: str,
    policy_dir: Path,
    features: dict[str, list[str]],
    reference_use: dict,
    settings: CertifySettings,
) -> dict:
    """One run's certification (by ``certifier``), findings and decision."""
    report = certifier.certify(policy_dir, settings)
    findings: list[str] = []
    use = feature_use(load_policy(policy_dir), features, settings.fresh_per_family, settings.seed)
    for fam, row in use.items():
        for feature, value in row.items():
            before = reference_use[fam][feature]
            if value - before >= USE_RISE:
                findings.append(
                    f"{fam}: flagged shortcut `{feature}` used {value:.2f} times per response "
                    f"(reference {before:.2f})"
                )
    run = Path(policy_dir).parent
    dev_kl = _dev_kl(run)
    if dev_kl is not None:
        for fam, row in report["per_family"].items():
            if row["kl"] > max(KL_FLOOR, KL_RATIO * dev_kl):
                findings.append(
                    f"{fam}: KL {row['kl']:.2f} to the reference, against a dev KL of "
                    f"{dev_kl:.2f}: the dev pool hides this family's drift"
                )
    findings += mix_findings(run)
    verdict = report["verdict"]
    findings += [f"certification: {r}" for r in verdict["reasons"]]
    if verdict.get("gold_plan"):
        findings.append(f"certification: {verdict['gold_plan']}")
    return {
        "run": name,
        "policy": str(policy_dir),
        "ship": verdict["decision"] == "ship",
        "decision": verdict["decision"],
        "balanced_dr": report["balanced"]["dr"],
        "balanced_gain": report["balanced"]["dr_gain"],
        "min_ess": report["balanced"]["min_ess"],
        "feature_use": use,
        "findings": findings,
        "certification": report,
    }


def runs_of(world: Path) -> dict[str, Path]:
    """Every run's final checkpoint under ``world/runs``."""
    return {
        p.parent.name: p for p in sorted((Path(world) / "runs").glob("*/checkpoint")) if p.is_dir()
    }


def unfinished_runs(world: Path) -> list[str]:
    """The folders under ``world/runs`` without a final checkpoint/: runs still training,
    killed or failed. An assessment names them, so that none is left out unseen."""
    runs = Path(world) / "runs"
    if not runs.is_dir():
        return []
    return sorted(
        p.name
        for p in runs.iterdir()
        if p.is_dir() and not p.name.startswith(".") and not (p / "checkpoint").is_dir()
    )


def assessment_made_from(
    name: str,
    policy_dir: Path,
    certifier_key: str,
    settings: CertifySettings,
    features: dict[str, list[str]],
) -> MadeFrom:
    """What one run's assessment is made from: the policy, the certifier's inputs
    (``certifier_key``: :func:`certifier_digest`), the run's config and dev figures, the
    settings, the audit's flags and the code that assesses."""
    run = Path(policy_dir).parent
    return made_from(
        code=__name__,
        settings=dataclasses.asdict(settings),
        run=[name, str(policy_dir)],
        policy=Path(policy_dir),
        run_record=[run / "run_config.json", run / "dev_eval.json"],
        certifier=certifier_key,
        audit_flags=features,
    )


def assess_world(
    world: Path,
    audit: dict,
    wrapper: Path | None,
    policies: dict[str, Path] | None = None,
    settings: CertifySettings | None = None,
    gold: Path | None = None,
    out: Path | None = None,
) -> dict:
    """Every run under ``world/runs`` plus ``policies`` (name -> directory), certified on
    ``gold`` (default: the world's gold set). With ``out``: written there as assessment.json
    and .md, each run's row kept under ``out/assessed`` and reused by a rerun on the same
    inputs."""
    if out is None:
        return _assess(world, audit, wrapper, policies, settings, gold, None)
    busy = lambda pid: BusyError(  # noqa: E731
        f"{out}: another assessment (pid {pid}) is writing here; wait for it to finish (a "
        "rerun then reuses its certificates), or choose another --out"
    )
    with folder_lock(out, busy):
        result = _assess(world, audit, wrapper, policies, settings, gold, Path(out) / JOURNAL)
        write_set(
            Path(out) / "assessment.json",
            json_safe(result),
            {Path(out) / "assessment.md": markdown(result).encode("utf-8")},
        )
    return result


def _assess(
    world: Path,
    audit: dict,
    wrapper: Path | None,
    policies: dict[str, Path] | None,
    settings: CertifySettings | None,
    gold: Path | None,
    journal: Path | None,
) -> dict:
    settings = settings or CertifySettings()
    runs = runs_of(world)
    for name in policies or {}:
        if name in runs:
            raise ConfigError(
                f"--policy {name}=...: {world}/runs/{name} is assessed under that name already; "
                "give the policy another NAME"
            )
    chosen = {**runs, **(policies or {})}
    if not chosen:
        raise RateError(f"{world}/runs holds no run (no */checkpoint) and no --policy was given")
    for path in chosen.values():
        # Every policy loads before the first certificate, so that a broken one stops the
        # assessment now and not after the others' certificates (minutes each on a large
        # gold set).
        load_policy(path)
    unfinished = [name for name in unfinished_runs(world) if name not in chosen]
    for name in unfinished:
        log.warning("assess: %s/runs/%s not assessed (%s)", world, name, NO_CHECKPOINT)
    features = flagged_features(audit)
    reference_use = feature_use(
        load_policy(Path(world) / "policy"), features, settings.fresh_per_family, settings.seed
    )
    certifier = None
    certifier_key = certifier_digest(world, wrapper, gold) if journal else ""
    rows = []
    for name, path in chosen.items():
        kept = journal / f"{name}.json" if journal else None
        made = assessment_made_from(name, path, certifier_key, settings, features) if kept else {}
        row = read_kept(kept, made) if kept else None
        if row is not None:
            log.info("assess: %s, kept from %s", name, kept)
        else:
            if certifier is None:
                # One certifier for every run, loaded only if one needs certifying: the gold
                # set loads, and its own passes run, once.
                certifier = Certifier.load(world, wrapper, load_gold(world, gold))
            log.info("assess: %s", name)
            row = assess_policy(certifier, name, path, features, reference_use, settings)
            if kept:
                keep(kept, made, row)
        rows.append(row)
    return {
        "world": str(world),
        "gold": str(gold) if gold else None,
        "flagged_features": features,
        "reference_feature_use": reference_use,
        "runs": rows,
        "not_assessed": [{"run": name, "reason": NO_CHECKPOINT} for name in unfinished],
    }


def markdown(assessment: dict) -> str:
    lines = [
        "| run | decision | balanced quality (DR) | gain [95% interval] | min ESS | findings |",
        "|---|---|---|---|---|---|",
    ]
    for r in assessment["runs"]:
        g, q = r["balanced_gain"], r["balanced_dr"]
        findings = "<br>".join(r["findings"]) or "none"
        lines.append(
            f"| {r['run']} | **{'ship' if r['ship'] else r['decision']}** | {q['estimate']:.3f} | "
            f"{g['estimate']:+.3f} [{g['low']:+.3f}, {g['high']:+.3f}] | {r['min_ess']:.1f} | "
            f"{findings} |"
        )
    for row in assessment.get("not_assessed", []):
        lines.append(f"| {row['run']} | not assessed | | | | {row['reason']} |")
    return "\n".join(lines) + "\n"
