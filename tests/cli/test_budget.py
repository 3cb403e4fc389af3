"""``history`` shows a budgeted thread's ledger per turn; ``plan`` shows what a rewind
would cost again. Both read only."""

from __future__ import annotations

import json
from collections import Counter

import neograph_ext as ne
from tests.cli.support import Database, cli
from tests.graphs.budget import CALLS, TOKENS, pipeline

reviewed_v2 = ne.compile(
    pipeline(Counter()), checkpointer=None, versions={"review": "v2"}, attach=[ne.budget.Budget()]
)
"""The pipeline after a deploy that changed ``review``."""


def _run_two_turns(db: Database, thread: str) -> None:
    graph = ne.compile(pipeline(Counter()), checkpointer=db.saver, attach=[ne.budget.Budget()])
    for topic in ("a", "b"):
        ne.run(graph, {"topic": topic}, {"configurable": {"thread_id": thread}})


def test_history_shows_the_ledger_per_turn(db: Database) -> None:
    _run_two_turns(db, "t1")
    before = db.rows()

    result = cli("history", "--db", db.url, "--thread", "t1")

    assert result.exit_code == 0, result.output
    assert "budget ledger of thread t1" in result.stdout
    rows = [line.split() for line in result.stdout.splitlines() if "│" in line]
    cells = [[cell for cell in row if cell != "│"] for row in rows]
    assert ["1", "3", str(CALLS), str(CALLS * TOKENS)] in cells
    assert ["2", "3", str(CALLS), str(CALLS * TOKENS)] in cells
    assert ["total", "6", str(2 * CALLS), str(2 * CALLS * TOKENS)] in cells
    assert db.rows() == before


def test_history_of_an_unbudgeted_thread_shows_no_ledger(db: Database) -> None:
    ne.run(
        ne.compile(pipeline(Counter()), checkpointer=db.saver),
        {"topic": "a"},
        {"configurable": {"thread_id": "t1"}},
    )
    result = cli("history", "--db", db.url, "--thread", "t1")
    assert result.exit_code == 0, result.output
    assert "budget ledger" not in result.stdout


def test_plan_shows_the_estimated_cost_of_a_rewind(db: Database) -> None:
    _run_two_turns(db, "t1")
    graph = f"{__name__}:reviewed_v2"

    shown = cli("plan", graph, "--db", db.url, "--thread", "t1")
    as_json = cli("plan", graph, "--db", db.url, "--thread", "t1", "--json")

    assert shown.exit_code == 0, shown.output
    assert "estimated cost" in shown.stdout
    assert "2 superstep(s), 3 model call(s), 30 token(s)" in shown.stdout
    assert json.loads(as_json.stdout)["estimated_cost"] == {
        "supersteps": 2,
        "model_calls": 3,
        "tokens": 3 * TOKENS,
    }
