"""The command line on a thread newer code owns: ``plan`` says so, ``plan --take-over``
shows what a rollback re-runs, and ``accept`` takes the thread over."""

from __future__ import annotations

import json

from neograph_ext import PlanKind
from tests.cli import cli_graphs
from tests.cli.support import V1, Database, cli


def _taken_by_v2(db: Database) -> None:
    """``t1`` written by ``v1``, then rewound by ``v2``, the newer code."""
    db.run(cli_graphs.v1, "t1")
    db.run(cli_graphs.v2, "t1")


def test_plan_names_the_newer_code_that_owns_the_thread(db: Database) -> None:
    _taken_by_v2(db)
    rows = db.rows()
    shown = cli("plan", V1, "--db", db.url, "--thread", "t1")
    assert shown.exit_code == 0, shown.output
    assert "superseded" in shown.stdout and "owned by" in shown.stdout
    found = json.loads(cli("plan", V1, "--db", db.url, "--thread", "t1", "--json").stdout)
    owner = db.plan(cli_graphs.v1, "t1").owner
    assert found["kind"] == "superseded" and found["owner"] == owner
    assert db.rows() == rows


def test_plan_take_over_shows_what_a_rollback_re_runs(db: Database) -> None:
    _taken_by_v2(db)
    rows = db.rows()
    shown = cli("plan", V1, "--db", db.url, "--thread", "t1", "--take-over", "--json")
    assert shown.exit_code == 0, shown.output
    found = json.loads(shown.stdout)
    assert found["kind"] == "rewind" and "c" in found["rerun"]
    assert found["taken_from"] == db.plan(cli_graphs.v1, "t1").owner
    assert db.rows() == rows


def test_accept_takes_the_thread_over(db: Database) -> None:
    _taken_by_v2(db)
    result = cli("accept", V1, "--db", db.url, "--thread", "t1", "--yes")
    assert result.exit_code == 0, result.output
    assert "was superseded" in result.stdout and "taken over from newer code" in result.stdout
    assert db.plan(cli_graphs.v1, "t1").kind is PlanKind.UP_TO_DATE
    assert db.plan(cli_graphs.v2, "t1").kind is PlanKind.SUPERSEDED
