"""The four stages, each run from one experiment config: the entry points that the command
line, the demos, SLURM jobs and the studies call.

A stage's own logic lives in its package (:mod:`rate.rewrite.stage`, :mod:`rate.score.stage`,
:mod:`rate.effects.stage`, :mod:`rate.plots.stage`); here the config is matched with the
templates it names (:mod:`rate.catalog`).
"""

from __future__ import annotations

from pathlib import Path

from rate.catalog import check_group_by, load_dataset_template
from rate.config import Config
from rate.effects.stage import treatment_effects
from rate.plots.stage import plot_stage
from rate.rewrite import stage as rewrite_stage
from rate.score.stage import score_dataset
from rate.store import Layout

__all__ = ["create_dataset", "plot_stage", "score_dataset", "treatment_effects"]


def create_dataset(config: Config, layout: Layout) -> Path:
    """Stage 1: classify W and rewrite twice; -> the dataset file (the estimate in a dry run)."""
    template = load_dataset_template(config.need("rewrites", "create_dataset").dataset_name)
    check_group_by(config)  # stage 3's grouping, before stage 1's work
    return rewrite_stage.create_dataset(config, layout, template)
