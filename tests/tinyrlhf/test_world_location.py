"""Where a tiny-world part finds the world: its template option, else RATE_WORLD, else
PROJECT_DIR/tinyrlhf/world; and the error that names the place looked at."""

from __future__ import annotations

import pytest

from rate.errors import DataFileError
from tinyworld.options import OracleOptions, TinyRMOptions, TinyWorldSource, using_world, world_dir


def test_the_option_wins_then_the_setting_then_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("PROJECT_DIR", str(tmp_path / "p"))
    monkeypatch.delenv("RATE_WORLD", raising=False)
    assert world_dir() == tmp_path / "p" / "tinyrlhf" / "world"
    monkeypatch.setenv("RATE_WORLD", str(tmp_path / "w"))
    assert world_dir() == tmp_path / "w"
    assert world_dir(str(tmp_path / "mine")) == tmp_path / "mine"
    with using_world(tmp_path / "other"):
        assert world_dir() == tmp_path / "other"
    assert world_dir() == tmp_path / "w"  # restored


def test_each_world_part_names_the_world_it_reads(tmp_path, monkeypatch):
    monkeypatch.setenv("RATE_WORLD", str(tmp_path / "w"))
    parts = [TinyWorldSource(policies={"policy": 1.0}), TinyRMOptions(), OracleOptions()]
    assert [p.inputs() for p in parts] == [{"world": str(tmp_path / "w")}] * 3
    assert TinyRMOptions(world=str(tmp_path / "x")).inputs() == {"world": str(tmp_path / "x")}


def test_a_missing_world_is_one_line_naming_where_it_looked(tmp_path, monkeypatch):
    from tinyworld.scorers import OracleScorer

    monkeypatch.setenv("RATE_WORLD", str(tmp_path / "nowhere"))
    with pytest.raises(DataFileError, match=r"no tiny RLHF world at .*nowhere.*RATE_WORLD"):
        OracleScorer(OracleOptions())
