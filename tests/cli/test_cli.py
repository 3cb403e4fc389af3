"""The ``neograph-ext`` CLI, run for real against databases the engine wrote.

See ``support`` for the databases; ``db`` runs a test on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import psycopg
import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from typer.testing import Result

from neograph_ext import PlanKind
from neograph_ext.cli._database import open_database
from tests.cli import cli_graphs
from tests.cli.support import (
    ROOT,
    V1,
    V2,
    Database,
    cli,
    one_error_line,
    pg_url,
    program,
    run_program,
)

# --- plan -------------------------------------------------------------------------------


def test_plan_shows_the_rewind_the_changed_node_and_its_field_diff(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    expected = db.plan(cli_graphs.v2, "t1")

    result = cli("plan", V2, "--db", db.url, "--thread", "t1")

    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "rewind" in out
    assert f"step {expected.step}, checkpoint {expected.checkpoint_id}" in out
    assert "node `c`: output type changed" in out
    assert "Review.score: int -> float" in out
    assert "re-runs      c, d" in out
    assert "kept         a, b" in out


def test_plan_names_the_steps_of_nodes_that_ran_several_times(db: Database) -> None:
    db.run(cli_graphs.loop_v1, "t1")

    result = cli("plan", "tests.cli.cli_graphs:loop_v2", "--db", db.url, "--thread", "t1")

    assert result.exit_code == 0, result.output
    assert "kept         a, b" in result.stdout
    assert "steps        a (steps 1, 3) kept; b (steps 2, 4) kept" in result.stdout
    got = json.loads(
        cli(
            "plan", "tests.cli.cli_graphs:loop_v2", "--db", db.url, "--thread", "t1", "--json"
        ).stdout
    )
    assert [(s["node"], s["step"], s["kept"]) for s in got["steps"]] == [
        ("a", 1, True),
        ("b", 2, True),
        ("a", 3, True),
        ("b", 4, True),
        ("c", 5, False),
    ]


def test_plan_json_is_the_engine_plan(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    expected = db.plan(cli_graphs.v2, "t1")

    result = cli("plan", V2, "--db", db.url, "--thread", "t1", "--json")

    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["kind"] == "rewind"
    assert got["thread_id"] == "t1"
    assert (got["head_id"], got["checkpoint_id"], got["step"]) == (
        expected.head_id,
        expected.checkpoint_id,
        expected.step,
    )
    assert got["invalidated_nodes"] == ["c"]
    assert got["rerun"] == ["c", "d"] and got["kept"] == ["a", "b"]
    [change] = got["changes"]
    assert change["node"] == "c" and change["reason"] == "output type"
    assert change["diff"] == ["Review.score: int -> float"]
    assert got["blocker"] is None


def test_plan_of_an_unchanged_thread_is_up_to_date(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")

    result = cli("plan", V1, "--db", db.url, "--thread", "t1", "--json")

    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["kind"] == "up_to_date" and got["changes"] == [] and got["rerun"] == []


def test_plan_from_a_given_checkpoint(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    target = db.plan(cli_graphs.v2, "t1").checkpoint_id

    result = cli("plan", V2, "--db", db.url, "--thread", "t1", "--checkpoint", target, "--json")

    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["head_id"] == target
    assert got["kind"] == "rewind" and got["next_nodes"] == ["c"]


def test_a_graph_compiled_by_neograph_ext_keeps_its_stamp(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")

    result = cli("plan", "tests.cli.cli_graphs:compiled_v2", "--db", db.url, "--thread", "t1")

    assert result.exit_code == 0, result.output
    assert "Review.score: int -> float" in result.stdout


# --- check ------------------------------------------------------------------------------


def test_check_fails_and_lists_the_threads_that_would_not_resume_cleanly(db: Database) -> None:
    db.run(cli_graphs.v1, "t1", "t2", "chat")
    db.run(cli_graphs.v1, "chat", doc="a second turn")
    db.run(cli_graphs.other, "foreign")
    db.run(cli_graphs.v2, "fine")

    result = cli("check", V2, "--db", db.url)

    assert result.exit_code == 1, result.output
    table = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert set(table) >= {"t1", "t2", "chat", "foreign"} and "fine" not in table
    assert "rewind" in table["t1"] and "rewind" in table["t2"]
    # The chat's first-turn value was written again by its second turn: dead, so only
    # the latest turn rewinds.
    assert "rewind" in table["chat"] and "blocked" not in table["chat"]
    assert "blocked" in table["foreign"] and "written by a different graph" in result.stdout
    assert "Review.score: int -> float" in result.stdout
    assert "5 threads checked: 1 blocked, 3 rewind, 1 up_to_date" in result.stdout


def test_check_passes_when_nothing_changed(db: Database) -> None:
    db.run(cli_graphs.v1, "t1", "t2")

    result = cli("check", V1, "--db", db.url)

    assert result.exit_code == 0, result.output
    assert result.stdout == "ok: 2 threads checked: 2 up_to_date\n"
    assert result.stderr == ""  # no progress bar off a terminal


def test_check_only_the_threads_named(db: Database) -> None:
    db.run(cli_graphs.v1, "t1", "t2")
    db.run(cli_graphs.v2, "t3")

    passed = cli("check", V2, "--db", db.url, "--thread", "t3", "--json")
    failed = cli("check", V2, "--db", db.url, "--thread", "t1", "--thread", "t3", "--json")

    assert passed.exit_code == 0, passed.output
    assert [p["thread_id"] for p in json.loads(passed.stdout)["plans"]] == ["t3"]
    assert failed.exit_code == 1, failed.output
    report = json.loads(failed.stdout)
    assert report["ok"] is False and report["failing"] == ["t1"]
    assert [p["kind"] for p in report["plans"]] == ["rewind", "up_to_date"]


def test_unverified_threads_pass_unless_strict(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    db.run_unstamped("old")

    lenient = cli("check", V1, "--db", db.url)
    strict = cli("check", V1, "--db", db.url, "--strict-unverified")

    assert lenient.exit_code == 0, lenient.output
    assert "1 unverified" in lenient.stdout and "--strict-unverified" in lenient.stdout
    assert strict.exit_code == 1, strict.output
    assert "old" in strict.stdout and "written without a stamp" in strict.stdout
    assert "│ t1" not in strict.stdout


def test_check_fails_on_a_type_whose_values_cannot_read_back(db: Database) -> None:
    graph = "tests.cli.cli_graphs:local_model"

    result = cli("check", graph, "--db", db.url)
    as_json = cli("check", graph, "--db", db.url, "--json")

    assert result.exit_code == 1, result.output
    assert "failed: values of" in result.stdout and "local class" in result.stdout
    assert as_json.exit_code == 1 and json.loads(as_json.stdout)["ok"] is False
    assert "_with_local_model.<locals>.Draft" in json.loads(as_json.stdout)["types"][0]


def test_check_an_empty_database(db: Database) -> None:
    result = cli("check", V2, "--db", db.url)

    assert result.exit_code == 0, result.output
    assert "0 threads checked" in result.stdout


def test_check_with_a_progress_bar_on_a_terminal(db: Database) -> None:
    db.run(cli_graphs.v1, *(f"t{i}" for i in range(12)))

    result = cli("check", V2, "--db", db.url, env={"TTY_COMPATIBLE": "1"})

    assert result.exit_code == 1, result.output
    assert "12 threads checked: 12 rewind" in result.stdout
    assert "checking threads" in result.stderr  # the bar, on stderr only


# --- history ----------------------------------------------------------------------------


def history_rows(result: Result) -> dict[str, list[str]]:
    """Table rows by step; a parallel step's extra lines are not needed here."""
    assert result.exit_code == 0, result.output
    rows = {}
    for line in result.stdout.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if cells and cells[0].lstrip("-").isdigit():
            rows[cells[0]] = cells[1:]
    return rows


def test_history_marks_each_task_against_the_graph(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")

    rows = history_rows(cli("history", "--db", db.url, "--thread", "t1", V2))

    assert list(rows) == ["-1", "0", "1", "2", "3", "4"]
    assert rows["-1"][1:4] == ["input", "-", "-"]
    assert [rows[step][2:4] for step in ("1", "2", "3", "4")] == [
        ["a", "same"],
        ["b", "same"],
        ["c", "changed"],
        ["d", "same"],
    ]


def test_history_marks_unstamped_tasks(db: Database) -> None:
    db.run_unstamped("old")

    rows = history_rows(cli("history", "--db", db.url, "--thread", "old", V1))

    assert {rows[step][3] for step in ("1", "2", "3", "4")} == {"unstamped"}


def test_history_marks_forks_after_a_rewind(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    target = db.plan(cli_graphs.v2, "t1").checkpoint_id
    db.run(cli_graphs.v2, "t1")  # rewinds: forks from before c

    result = cli("history", "--db", db.url, "--thread", "t1", V2, "--json")

    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    by_id = {row["checkpoint_id"]: row for row in rows}
    assert by_id[target]["fork"] == "2 branches"
    forks = [row for row in rows if row["source"] == "fork"]
    assert len(forks) == 1 and forks[0]["fork"] == "fork" and forks[0]["parent_id"] == target
    assert [row["tasks"] for row in rows if row["tasks"]] == [
        {"a": "same"},
        {"b": "same"},
        {"c": "same"},
        {"d": "same"},
    ]
    table = cli("history", "--db", db.url, "--thread", "t1", V2)
    assert "2 branches" in table.stdout and "7 of 9 checkpoints" in table.stdout


def test_history_without_a_graph_has_no_status(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")

    result = cli("history", "--db", db.url, "--thread", "t1")

    rows = history_rows(result)
    assert "status" not in result.stdout
    assert rows["3"][1:3] == ["loop", "c"]


# --- read-only, databases ---------------------------------------------------------------


def test_the_cli_never_writes(db: Database) -> None:
    db.run(cli_graphs.v1, "t1", "t2")
    db.run_unstamped("old")
    before = db.rows()

    runs = [
        cli("plan", V2, "--db", db.url, "--thread", "t1"),
        cli("plan", V2, "--db", db.url, "--thread", "old", "--json"),
        cli("history", "--db", db.url, "--thread", "t1", V2),
        cli("check", V2, "--db", db.url),
        cli("check", V1, "--db", db.url, "--strict-unverified", "--json"),
    ]

    assert [result.exit_code for result in runs] == [0, 0, 0, 1, 1]
    assert db.rows() == before


def test_databases_are_opened_read_only(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    before = db.rows()

    errors = (sqlite3.OperationalError, psycopg.errors.ReadOnlySqlTransaction)
    with open_database(db.url) as saver, pytest.raises(errors, match=r"read-?only"):
        saver.delete_thread("t1")

    assert db.rows() == before


def test_sqlite_url_and_a_database_not_in_wal_mode(lite: Database, tmp_path: Path) -> None:
    lite.run(cli_graphs.v1, "t1")
    assert isinstance(lite.saver, SqliteSaver)
    # SqliteSaver.setup() would switch it back to WAL: a write a read-only connection refuses.
    assert lite.saver.conn.execute("PRAGMA journal_mode=DELETE").fetchone() == ("delete",)

    result = cli("plan", V2, "--db", f"sqlite:///{tmp_path / 'threads.sqlite'}", "--thread", "t1")

    assert result.exit_code == 0, result.output
    assert "rewind" in result.stdout


def test_a_graph_given_by_file_path(lite: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    lite.run(cli_graphs.v1, "t1")
    monkeypatch.chdir(ROOT / "tests")

    result = cli("plan", "cli/cli_graphs.py:v2", "--db", lite.url, "--thread", "t1", "--json")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["invalidated_nodes"] == ["c"]


# --- errors -----------------------------------------------------------------------------

ERRORS = {
    "no colon": (["plan", "cli_graphs"], "GRAPH must be module:attribute"),
    "no module": (["plan", "no_such_module:g"], "No module named 'no_such_module'"),
    "no file": (["plan", "no/such/file.py:g"], "does not exist"),
    "no attribute": (["plan", "tests.cli.cli_graphs:nope"], "has no attribute 'nope'"),
    "not a graph": (["plan", "tests.cli.cli_graphs:not_a_graph"], "not a StateGraph builder"),
    "a Pregel of no builder": (["plan", "tests.cli.cli_graphs:raw_pregel"], "nor @entrypoint"),
    "unknown thread": (["plan", V1, "--thread", "nope"], "thread 'nope' has no checkpoints"),
    "unknown checkpoint": (["plan", V1, "--checkpoint", "nope"], "has no checkpoint 'nope'"),
    "history of an unknown thread": (["history", "--thread", "nope"], "'nope' has no checkpoints"),
    "check of an unknown thread": (["check", V1, "--thread", "nope"], "'nope' has no checkpoints"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_are_one_line_on_stderr_and_exit_2(db: Database, case: str) -> None:
    db.run(cli_graphs.v1, "t1")
    args, expected = ERRORS[case]
    options = ["--db", db.url] + (["--thread", "t1"] if "--thread" not in args else [])

    line = one_error_line(cli(*args, *options))

    assert expected in line


@pytest.mark.parametrize("what", ["missing file", "not SQLite", "no checkpoint tables", "url"])
def test_sqlite_databases_that_cannot_be_read(tmp_path: Path, what: str) -> None:
    path = tmp_path / "x.sqlite"
    if what == "not SQLite":
        path.write_text("hello " * 100)
    elif what == "no checkpoint tables":
        sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.commit()
    url = "mysql://localhost/x" if what == "url" else str(path)

    line = one_error_line(cli("check", V1, "--db", url))

    assert {
        "missing file": "no SQLite database at",
        "not SQLite": "is not an SQLite database",
        "no checkpoint tables": "is not a LangGraph checkpoint database",
        "url": "--db must be",
    }[what] in line


def test_unreachable_postgres_is_one_line_without_the_password() -> None:
    line = one_error_line(cli("check", V1, "--db", "postgresql://me:s3cret@127.0.0.1:1/x"))

    assert "cannot connect to PostgreSQL" in line and "s3cret" not in line


@pytest.mark.postgres
def test_a_postgres_database_without_checkpoint_tables(pg_dsn: str) -> None:
    schema = f"cli_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            line = one_error_line(cli("check", V1, "--db", pg_url(pg_dsn, schema)))
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")

    assert "not a LangGraph checkpoint database" in line


def test_debug_shows_the_traceback(lite: Database) -> None:
    result = cli("plan", "no_such_module:g", "--db", lite.url, "--thread", "t1", "--debug")

    assert result.exit_code == 2
    assert "Traceback" in result.stderr and "ModuleNotFoundError" in result.stderr


# --- as a program -----------------------------------------------------------------------


@pytest.mark.slow
def test_the_module_runs_as_a_program(lite: Database) -> None:
    lite.run(cli_graphs.v1, "t1")

    failed = run_program("-m", "neograph_ext.cli", "check", V2, "--db", lite.url)
    passed = program("check", "tests/cli/cli_graphs.py:v1", "--db", lite.url)

    assert failed.returncode == 1, failed.stderr
    assert "t1" in failed.stdout and "Review.score: int -> float" in failed.stdout
    assert passed.returncode == 0, passed.stderr
    assert "ok: 1 thread checked" in passed.stdout


@pytest.mark.slow
def test_without_the_cli_extra_it_says_what_to_install() -> None:
    result = program("--help", prelude="import sys; sys.modules['typer'] = None; ")

    assert result.returncode == 2
    assert "neograph-ext[cli]" in result.stderr and "Traceback" not in result.stderr


def test_accept_writes_one_fork_and_the_next_plan_carries_on(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    assert db.plan(cli_graphs.v2, "t1").kind is PlanKind.REWIND
    rows = db.rows()

    result = cli("accept", V2, "--db", db.url, "--thread", "t1", "--yes")

    assert result.exit_code == 0, result.output
    assert "accepted" in result.stdout and "was rewind" in result.stdout
    assert db.rows() > rows
    assert db.plan(cli_graphs.v2, "t1").kind is PlanKind.UP_TO_DATE


def test_accept_of_an_unknown_thread_is_one_line(db: Database) -> None:
    rows = db.rows()
    line = one_error_line(cli("accept", V2, "--db", db.url, "--thread", "nope"))
    assert "thread 'nope' has no checkpoints" in line and db.rows() == rows
