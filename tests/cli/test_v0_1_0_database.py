"""The command line reads a database holding 0.1.0 threads and current ones side by side."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

import neograph_ext as ne
from tests.cli.support import cli
from tests.fixtures import v0_1_0 as fx

V1, V2 = "tests.fixtures.v0_1_0:BUILDER_V1", "tests.fixtures.v0_1_0:BUILDER_V2"
CURRENT = "written-now"


def _database(tmp_path: Path) -> Path:
    """The 0.1.0 database, plus one thread written by the current code."""
    path = tmp_path / "mixed.sqlite"
    shutil.copyfile(fx.DATABASE, path)
    with sqlite3.connect(path, check_same_thread=False) as conn:
        ne.run(fx.graph(SqliteSaver(conn), Counter()), {"log": []}, fx.config(CURRENT))
    conn.close()
    return path


def test_plan_reads_both_formats_with_field_level_diffs(tmp_path: Path) -> None:
    db = _database(tmp_path)
    for thread in (fx.DONE, CURRENT):
        result = cli("plan", V2, "--thread", thread, "--db", db)
        assert result.exit_code == 0, result.output
        assert "rewind" in result.stdout and "Analysis.score: int -> float" in result.stdout
        unchanged = cli("plan", V1, "--thread", thread, "--db", db)
        assert "up_to_date" in unchanged.stdout, unchanged.output


def test_history_marks_each_format_against_the_graph(tmp_path: Path) -> None:
    db = _database(tmp_path)
    for thread in (fx.DONE, CURRENT):
        result = cli("history", "--thread", thread, V2, "--db", db)
        assert result.exit_code == 0, result.output
        assert "changed" in result.stdout and "same" in result.stdout, result.stdout


def test_check_lists_the_graphs_threads_and_not_the_stored_descriptions(tmp_path: Path) -> None:
    db = _database(tmp_path)
    result = cli("check", V2, "--db", db, "--json")
    assert result.exit_code == 1, result.output
    threads = {p["thread_id"] for p in json.loads(result.stdout)["plans"]}
    assert threads == {fx.DONE, fx.CRASHED, fx.TWO_TURNS, CURRENT}
