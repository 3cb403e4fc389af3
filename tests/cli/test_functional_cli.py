"""The CLI on an ``@entrypoint`` (``module:entrypoint``): ``plan``, ``history``, ``check``
and ``accept`` read its threads as they read a graph's."""

from __future__ import annotations

import neograph_ext
from tests.cli import cli_functional
from tests.cli.support import Database, cli

V1, V2 = "tests.cli.cli_functional:v1", "tests.cli.cli_functional:v2"


def _ran(db: Database, *threads: str) -> None:
    graph = neograph_ext.compile(cli_functional.v1, checkpointer=db.saver)
    for thread in threads:
        neograph_ext.run(graph, "a document", {"configurable": {"thread_id": thread}})


def test_plan_names_the_changed_task_its_field_diff_and_the_task_kept(db: Database) -> None:
    _ran(db, "t1")
    result = cli("plan", V2, "--db", db.url, "--thread", "t1")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "rewind" in out
    assert "node `review`: output type changed" in out
    assert "Review.score: int -> float" in out
    assert "re-runs      review, workflow" in out
    assert "kept         draft" in out


def test_history_marks_the_turn_against_the_entrypoint(db: Database) -> None:
    _ran(db, "t1")
    result = cli("history", V2, "--db", db.url, "--thread", "t1")
    assert result.exit_code == 0, result.output
    assert "review" in result.stdout and "changed" in result.stdout


def test_check_fails_on_the_changed_task_and_passes_unchanged(db: Database) -> None:
    _ran(db, "t1", "t2")
    failed = cli("check", V2, "--db", db.url)
    assert failed.exit_code == 1, failed.output
    assert "2 rewind" in failed.stdout
    passed = cli("check", V1, "--db", db.url)
    assert passed.exit_code == 0, passed.output
    assert "2 up_to_date" in passed.stdout


def test_accept_stamps_the_head_as_current(db: Database) -> None:
    _ran(db, "t1")
    before = db.rows()
    result = cli("accept", V2, "--db", db.url, "--thread", "t1", "--yes")
    assert result.exit_code == 0, result.output
    assert "was rewind" in result.stdout
    assert db.rows() > before
    after = cli("plan", V2, "--db", db.url, "--thread", "t1")
    assert "up_to_date" in after.stdout
