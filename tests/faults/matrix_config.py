"""Scenarios of the failure matrix that run `rate` in this process: bad config and broken
templates."""

from __future__ import annotations

import json
from pathlib import Path

from tests.factories import put, scored_rows
from tests.faults.scenarios import (
    EFFECTS,
    error,
    outside,
    passed,
    project,
    rate,
    scenario,
)

# -- config --------------------------------------------------------------------------------------

for what, override, fragments in (
    (
        "misspelt top-level key",
        "smoke_tset=true",
        ("unknown key 'smoke_tset'", "did you mean 'smoke_test'"),
    ),
    (
        "misspelt rewrites key",
        "rewrites.n_exampels=3",
        ("'rewrites.n_exampels'", "'rewrites.n_examples'"),
    ),
    ("misspelt scoring key", "scoring.chunksize=3", ("'scoring.chunk_size'",)),
    ("misspelt effects key", "effects.n_boostrap=3", ("'effects.n_bootstrap'",)),
    ("misspelt slurm key", "slurm.partion=gpu", ("'slurm.partition'",)),
    (
        "integer given as text",
        "effects.n_bootstrap=many",
        ("effects.n_bootstrap", "expected an integer"),
    ),
    ("bool given as text", "smoke_test=yes please", ("smoke_test", "expected true or false")),
    ("level out of range", "effects.level=1.5", ("key 'effects.level' must be > 0 and < 1",)),
    ("negative bootstrap", "effects.n_bootstrap=-1", ("'effects.n_bootstrap' must be >= 0",)),
    ("chunk size 0", "scoring.chunk_size=0", ("'scoring.chunk_size' must be >= 1",)),
    ("batch size 0", "scoring.batch_size=0", ("'scoring.batch_size' must be >= 1",)),
    ("one example", "rewrites.n_examples=1", ("'rewrites.n_examples' must be >= 2",)),
    (
        "unknown dataset_folder",
        "scoring.dataset_folder=raw",
        ("scoring.dataset_folder", "'rewrites' or 'scored'"),
    ),
    (
        "SLURM time as a number",
        "slurm.score_dataset.time=43200",
        ("slurm.score_dataset.time", "quote it"),
    ),
    (
        "SLURM memory malformed",
        "slurm.plots.mem=16 GB",
        ("slurm.plots.mem", "not a SLURM memory size"),
    ),
    (
        "sbatch option rate sets",
        "slurm.extra_args=[--output=x]",
        ("--output is set by rate itself",),
    ),
    ("reward key null", "effects.reward_key=null", ("effects.reward_key", "expected a string")),
    (
        "unknown dataset template",
        "rewrites.dataset_name=minii",
        ("unknown dataset template 'minii'", "did you mean 'mini'"),
    ),
    (
        "unknown scoring template",
        "scoring.model=vaderr",
        ("unknown scoring template 'vaderr'", "did you mean 'vader'"),
    ),
    (
        "path in effects.dataset_name",
        "effects.dataset_name=../../escaped",
        ("'effects.dataset_name'", "no '/', no '..'"),
    ),
    ("path in effects.concept", "effects.concept=x/../../../../y", ("'effects.concept'", "no '/'")),
    ("path in effects.score", "effects.score=/abs/path", ("'effects.score'",)),
    (
        "absolute scoring.dataset_name",
        "scoring.dataset_name=/abs/path",
        ("'scoring.dataset_name'",),
    ),
    ("'..' as scoring.dataset_name", "scoring.dataset_name=..", ("'scoring.dataset_name'",)),
    (
        "'..' in effects.dataset_folder",
        "effects.dataset_folder=../out",
        ("'effects.dataset_folder'", "without '..'"),
    ),
    (
        "absolute effects.dataset_folder",
        "effects.dataset_folder=/abs",
        ("'effects.dataset_folder'",),
    ),
):

    @scenario(
        "config", what, f"one line naming {fragments[0]}; nothing written outside PROJECT_DIR"
    )
    def _(tmp, override=override, fragments=fragments):
        project(tmp, scored=scored_rows(key="vader"))
        verdict, observed = error(rate(tmp, "treatment_effects", override), *fragments)
        if outside(tmp):
            return "data-loss", f"wrote outside PROJECT_DIR: {outside(tmp)}"
        return verdict, observed


@scenario("config", "config file missing", "one line naming the file and the shipped configs")
def _(tmp):
    project(tmp)
    return error(
        rate(tmp, "treatment_effects", config=tmp / "nope.yaml"), "nope.yaml: no such config file"
    )


@scenario("config", "config not valid YAML", "one line with the file and the line")
def _(tmp):
    project(tmp)
    (tmp / "bad.yaml").write_text("rewrites:\n  dataset_name: [\n")
    return error(
        rate(tmp, "treatment_effects", config=tmp / "bad.yaml"), "bad.yaml:", "not valid YAML"
    )


@scenario("config", "config is a list", "one line: expected a mapping of sections")
def _(tmp):
    project(tmp)
    (tmp / "list.yaml").write_text("- a\n- b\n")
    return error(
        rate(tmp, "treatment_effects", config=tmp / "list.yaml"), "expected a mapping of sections"
    )


@scenario("config", "--set without '='", "one line showing the form section.key=value")
def _(tmp):
    project(tmp)
    return error(rate(tmp, "treatment_effects", "effects.level"), "expected section.key=value")


@scenario("config", "--set below a value", "one line: 'effects.level' is a value, not a section")
def _(tmp):
    project(tmp)
    return error(rate(tmp, "treatment_effects", "effects.level.x=1"), "'effects.level' is a value")


@scenario("config", "dataset_filename names a folder", "one line: is a folder, not a file")
def _(tmp):
    root = project(tmp)
    (root / "data" / "scored" / "sub").mkdir(parents=True)
    return error(
        rate(tmp, "treatment_effects", "effects.dataset_filename=sub"), "is a folder, not a file"
    )


@scenario("config", "dataset_filename missing", "one line: no such file, use 'latest'")
def _(tmp):
    project(tmp, scored=scored_rows(key="vader"))
    return error(
        rate(tmp, "treatment_effects", "effects.dataset_filename=x.jsonl"),
        "no such file",
        "'latest'",
    )


@scenario("config", "latest with nothing to take", "one line: run the previous stage first")
def _(tmp):
    project(tmp)
    return error(
        rate(tmp, "treatment_effects"),
        "no smoke-test file 'mini_vader_scored_<timestamp>.jsonl' or 'mini_scored_<timestamp>.jsonl'",
        "previous stage",
    )


@scenario(
    "config", "latest beside a newer dataset whose name starts the same", "takes mini, not mini_v2"
)
def _(tmp):
    root = project(tmp, scored=scored_rows(key="vader"))
    put(
        root / "data" / "scored" / "mini_v2_scored_20270101_000000_smoke_test.jsonl",
        scored_rows(seed=1, key="vader"),
    )
    res = rate(tmp, "treatment_effects")
    if res.rc:
        return "defect", res.last
    data = json.loads(Path(res.out.strip()).read_text())
    return passed(
        data["dataset_filename"] == EFFECTS, f"read {data['dataset_filename']}", "data-loss"
    )


@scenario("config", "group_by names no field", "one line naming the field and the example")
def _(tmp):
    project(tmp, scored=scored_rows(key="vader"))
    return error(
        rate(tmp, "treatment_effects", "effects.group_by=colour"),
        "has no field 'colour'",
        "effects.group_by",
    )


@scenario(
    "config", "only_successful_rewrites without checks", "one line naming the example and the fix"
)
def _(tmp):
    rows = scored_rows(key="vader")
    for r in rows:
        r.pop("checks")
    project(tmp, scored=rows)
    return error(
        rate(tmp, "treatment_effects", "effects.only_successful_rewrites=true"),
        "has no rewrite checks",
        "only_successful_rewrites: false",
    )


@scenario("config", "plots.formats unknown", "one line naming the formats")
def _(tmp):
    project(tmp)
    return error(rate(tmp, "plot", "plots.formats=[jpg]"), "plots.formats", "png, pdf or svg")
