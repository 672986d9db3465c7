"""The world builder: from one world config, the whole layout of SPEC B.3.

    policy/ reward_model/ data/ configs/ runs/ truth/ world_info.json

truth/shortcuts.json records what the reward model learned of every planted shortcut and
whether the world is valid (:mod:`tinyworld.shortcuts`).

Everything comes from the config's seed; the same config gives the same world. The output is
assembled in a temporary sibling directory and renamed into place only when complete.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

import torch

from rate import __version__
from rate.errors import BusyError, ConfigError
from rate.io import atomic_directory, atomic_write_json, atomic_write_text, read_json, write_jsonl
from rate.parallel import default_jobs, run_jobs
from rate.progress import steps
from rate.provenance import content_digest, folder_lock
from rate.schema import to_dict
from tinyworld import labels
from tinyworld.data import LabelledSet, PromptPool, labelled_rows, pool_from_records
from tinyworld.dev_eval import dev_evaluate
from tinyworld.evaluate import TRUTH_FILE
from tinyworld.models import load_policy, load_reward_model, save_model
from tinyworld.oracle import Oracle
from tinyworld.prompts import balanced, make_prompts
from tinyworld.reports import run_notes, runs_index, training_notes
from tinyworld.rl import train_rl
from tinyworld.rl_config import RLConfig
from tinyworld.rm_train import train_reward_model
from tinyworld.sampling import sample
from tinyworld.sft import train_sft
from tinyworld.shortcuts import SHORTCUTS_FILE, check_world_shortcuts, shortcut_table
from tinyworld.vocab import FAMILIES
from tinyworld.worldconfig import RunSpec, WorldConfig, load_world_config

log = logging.getLogger(__name__)

HABIT_SEED_OFFSET = 0x4AB1  # the demonstrators' habits draw from their own stream


def run_family_weights(spec: RunSpec, config: WorldConfig) -> dict[str, float] | None:
    """The family weights of a run's prompt mix (None: uniform over the pool)."""
    if spec.mix == "balanced":
        return None
    if spec.mix == "pilot":
        total = sum(config.pools.dev_mix.values())
        return {fam: n / total for fam, n in config.pools.dev_mix.items()}
    chosen = [f.strip() for f in spec.mix.split(",")]
    return {fam: (1.0 if fam in chosen else 0.0) for fam in FAMILIES}


def build_world(
    config: WorldConfig, out: Path, overwrite: bool = False, jobs: int | None = None
) -> dict:
    """Build the world into ``out``; returns the timings and headline statistics.

    The RL runs train ``jobs`` at a time in worker processes (default: one per CPU), each on
    one thread, so the world is the same whatever ``jobs`` is. The workers are spawned, so a
    script calling this with ``jobs`` > 1 needs an ``if __name__ == "__main__":`` guard."""
    timings: dict[str, float] = {}
    t_all = time.perf_counter()
    names = ["sft", "reward model", "shortcut check", "gold labels"]
    names += [f"RL run {spec.name}" for spec in config.runs]
    with (
        atomic_directory(Path(out), overwrite=overwrite) as root,
        steps("world", names) as step,
    ):
        gen = torch.Generator().manual_seed(config.seed)
        torch.manual_seed(config.seed)
        oracle = Oracle.from_world(config)
        pools = config.pools

        # Prompt pools.
        train = make_prompts(balanced(pools.train_per_family), "train", gen)
        dev = make_prompts(pools.dev_mix, "dev", gen)
        gold_prompts = pool_from_records(make_prompts(balanced(pools.gold_per_family), "gold", gen))
        write_jsonl(root / "data" / "prompts_train.jsonl", train)
        write_jsonl(root / "data" / "prompts_dev.jsonl", dev)

        # The reference policy: supervised fine-tuning on expert demonstrations.
        t = time.perf_counter()
        step("sft")
        log.info("world: fine-tuning the reference policy on expert demonstrations")
        demo_pool = pool_from_records(
            make_prompts(balanced(config.demonstrations.per_family), "demo", gen)
        )
        demo_responses = labels.demonstrations(
            oracle,
            demo_pool.tokens,
            config.demonstrations.correct_rate,
            gen,
            config.demonstrations.habits,
            torch.Generator().manual_seed(config.seed + HABIT_SEED_OFFSET),
        )
        sft = config.sft
        policy, _ = train_sft(
            demo_pool.tokens, demo_responses, sft.epochs, sft.lr, sft.batch_size, sft.seed
        )
        save_model(
            policy, root / "policy", extra={"trained_by": "sft", "demonstrations": len(demo_pool)}
        )
        timings["sft_s"] = time.perf_counter() - t

        # The reward model: crowd labels on reference samples at a higher temperature.
        t = time.perf_counter()
        step("reward model")
        log.info("world: labelling reference samples by the crowd and training the reward model")
        rmd, rmt = config.reward_model_data, config.reward_model_training
        rm_pool = pool_from_records(make_prompts(balanced(rmd.per_family), "rm", gen))
        rm_responses = sample(policy, rm_pool.tokens, rmd.temperature, gen).responses
        crowd = labels.crowd_labels(oracle, config.labels, rm_pool.tokens, rm_responses, gen)
        rm, history = train_reward_model(
            rm_pool.tokens, rm_responses, crowd, rmt.epochs, rmt.lr, rmt.batch_size, rmt.seed
        )
        save_model(rm, root / "reward_model")
        rows = labelled_rows(rm_pool, rm_responses, crowd)
        write_jsonl(root / "reward_model" / "train.jsonl", qa_sample(rows, rmd.qa_per_family))
        atomic_write_text(
            root / "reward_model" / "TRAINING.md",
            training_notes(len(rows), rmd.temperature, rmt, history, policy_dir="policy"),
        )
        timings["reward_model_s"] = time.perf_counter() - t

        # The world's validity: every planted shortcut learned by the RM at >= half its bonus
        # (measured by intervention; kept in truth/, which analysts never read).
        t = time.perf_counter()
        step("shortcut check")
        check = check_world_shortcuts(rm, policy, oracle, config.labels)
        atomic_write_json(root / SHORTCUTS_FILE, check)
        if not check["valid"]:
            log.warning("world: a planted shortcut is not learned:\n%s", shortcut_table(check))
        timings["shortcut_check_s"] = time.perf_counter() - t

        # Gold calibration: reference responses with expert labels.
        step("gold labels")
        gold_responses = sample(policy, gold_prompts.tokens, 1.0, gen).responses
        expert = labels.expert_labels(
            oracle, gold_prompts.tokens, gold_responses, config.labels.expert_noise, gen
        )
        write_jsonl(
            root / "data" / "gold_calib.jsonl", labelled_rows(gold_prompts, gold_responses, expert)
        )

        # The default RL recipe and the earlier runs.
        default = RLConfig(**config.rl_default)
        atomic_write_json(root / "configs" / "default.json", to_dict(default))
        atomic_write_json(root / TRUTH_FILE, to_dict(config))

        t = time.perf_counter()
        dev_pool = pool_from_records(dev)
        gold = LabelledSet(
            gold_prompts.records,
            gold_prompts.tokens,
            gold_prompts.families,
            responses=gold_responses,
            labels=expert,
        )
        dev_name = "data/prompts_dev.jsonl"
        reference_eval = dev_evaluate(
            policy, policy, rm, dev_pool, gold, policy_name="policy", prompts_name=dev_name
        )
        atomic_write_json(root / "policy" / "dev_eval.json", reference_eval)
        tasks = [
            RunTask(
                spec,
                dataclasses.replace(
                    default, **spec.overrides, family_weights=run_family_weights(spec, config)
                ),
                root,
                dev_pool,
                gold,
                reference_eval,
            )
            for spec in config.runs
        ]
        jobs = default_jobs(len(tasks)) if jobs is None else jobs
        log.info("world: %d RL runs, %d at a time", len(tasks), jobs)
        dev_evals: dict[int, dict] = {}
        timings["rl_training_s"] = 0.0  # of runs_s: the trainer alone, summed over the runs
        for i, (dev_eval, rl_seconds) in run_jobs(train_world_run, [(t,) for t in tasks], jobs):
            step(f"RL run {tasks[i].spec.name}")
            log.info("world: RL run %s done (%.1f s)", tasks[i].spec.name, rl_seconds)
            dev_evals[i] = dev_eval
            timings["rl_training_s"] += rl_seconds
        run_rows = [(t.spec, t.config, dev_evals[i]) for i, t in enumerate(tasks)]
        atomic_write_text(root / "runs" / "README.md", runs_index(run_rows, reference_eval))
        timings["runs_s"] = time.perf_counter() - t
        timings["total_s"] = time.perf_counter() - t_all
        info = {
            "rate_version": __version__,
            "config_digest": config_digest(config),
            "models_digest": models_digest(config),
            "seed": config.seed,
            "timings": {k: round(v, 2) for k, v in timings.items()},
            "torch_threads": torch.get_num_threads(),
            "rl_jobs": jobs,  # each run on one thread (rate.parallel)
        }
        atomic_write_json(root / "world_info.json", info)
    log.info("world built in %.1f s at %s", timings["total_s"], out)
    return info


@dataclasses.dataclass
class RunTask:
    """One of the world's RL runs, with what its development evaluation needs."""

    spec: RunSpec
    config: RLConfig
    root: Path
    dev_pool: PromptPool
    gold: LabelledSet
    reference_eval: dict


def train_world_run(task: RunTask) -> tuple[dict, float]:
    """Train one world run into runs/NAME and write its dev_eval.json and NOTES.md.
    -> its development evaluation and the trainer's seconds (a worker's job)."""
    run_dir = task.root / "runs" / task.spec.name
    t = time.perf_counter()
    train_rl(task.config, task.root, run_dir)
    rl_seconds = time.perf_counter() - t
    dev_eval = dev_evaluate(
        load_policy(run_dir / "checkpoint"),
        load_policy(task.root / "policy"),
        load_reward_model(task.root / "reward_model"),
        task.dev_pool,
        task.gold,
        policy_name=f"runs/{task.spec.name}/checkpoint",
        prompts_name="data/prompts_dev.jsonl",
    )
    atomic_write_json(run_dir / "dev_eval.json", dev_eval)
    atomic_write_text(
        run_dir / "NOTES.md", run_notes(task.spec, task.config, dev_eval, task.reference_eval)
    )
    return dev_eval, rl_seconds


def build_lock(world: Path, wait: bool = False):
    """The lock of a world's build, beside its folder: held by `rate world build` (a second
    build of the same folder is refused) and by :func:`ensure_world` (which waits)."""
    busy = lambda pid: BusyError(  # noqa: E731
        f"{world}: another run (pid {pid}) is building this world; wait for it to finish"
    )
    return folder_lock(Path(world).parent, busy, name=f".{Path(world).name}.build.lock", wait=wait)


def config_digest(config: WorldConfig) -> str:
    """What a world is built from (its build record keeps it): a digest of its config."""
    return content_digest(to_dict(config))


def models_digest(config: WorldConfig) -> str:
    """What a world's data and models are built from: the digest of its config without the
    RL runs, which are trained last and change nothing before them."""
    return config_digest(dataclasses.replace(config, runs=[]))


def built_from(record: dict, config: WorldConfig) -> bool:
    """Whether a world's build record (world_info.json) says it was built from ``config``. A
    config without RL runs (a study that reads only the data and models) also accepts a world
    built from it with runs; a record without a digest (an older build) is accepted."""
    digest = record.get("config_digest")
    if digest is None or digest == config_digest(config):
        return True
    return not config.runs and record.get("models_digest") == config_digest(config)


def ensure_world(world: Path, small: bool = False, config: WorldConfig | None = None) -> Path:
    """The world at ``world``: reused if it is built, else built from ``config`` (default: the
    packaged default config, or its small variant). Two runs asking at once build it once:
    the second waits for the first's build and reuses it. A world built from another config
    than the ``config`` given is refused, never reused (a world the user names, with no
    config asked for, is theirs to choose; :func:`built_from` says what counts as the same)."""
    world = Path(world)
    info = world / "world_info.json"
    if not info.is_file():
        with build_lock(world, wait=True):
            if not info.is_file():  # not built while this one waited
                log.info("building the tiny RLHF world at %s (minutes on 2 cores)", world)
                build_world(config or load_world_config(small=small), world)
                return world
    if config is not None and not built_from(read_json(info), config):
        raise ConfigError(
            f"{world}: this world was built from another world config than the one asked for "
            "(its world_info.json says which digest); remove the folder to rebuild it, or "
            "choose another folder"
        )
    log.info("reusing the world at %s", world)
    return world


def qa_sample(rows: list[dict], per_family: int) -> list[dict]:
    """The first ``per_family`` rows of each family (rows are already in random order)."""
    taken: dict[str, int] = {}
    out = []
    for row in rows:
        if taken.get(row["family"], 0) < per_family:
            taken[row["family"]] = taken.get(row["family"], 0) + 1
            out.append(row)
    return out


__all__ = [
    "build_lock",
    "build_world",
    "ensure_world",
    "qa_sample",
    "run_family_weights",
    "train_world_run",
]
