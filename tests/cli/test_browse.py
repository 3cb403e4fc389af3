"""``threads``, ``show`` and ``diff``: browsing a database, reserved threads left out."""

from __future__ import annotations

import json
from typing import Any

import pytest

import neograph_ext
from neograph_ext.cli._browse import Change, changes
from tests.cli import cli_graphs
from tests.cli.support import V1, Database, cli, one_error_line

RESERVED = "neograph-ext-stamp:"


def config(thread: str, checkpoint: str | None = None) -> Any:
    extra = {"checkpoint_id": checkpoint} if checkpoint else {}
    return {"configurable": {"thread_id": thread, **extra}}


def test_threads_lists_user_threads_only_with_their_heads(db: Database) -> None:
    db.run(cli_graphs.v1, "t2", "t1")
    db.run(cli_graphs.v2, "t1")  # a rewind: t1 gains a branch
    assert any(
        str(c.config["configurable"]["thread_id"]).startswith(RESERVED) for c in db.saver.list(None)
    ), "the stamp descriptions live in reserved threads"

    result = cli("threads", "--db", db.url)
    rows = json.loads(cli("threads", "--db", db.url, "--json").stdout)

    assert result.exit_code == 0, result.output
    assert RESERVED not in result.stdout and "2 threads" in result.stdout
    assert [row["thread_id"] for row in rows] == ["t1", "t2"]
    for row in rows:
        found = neograph_ext.history(db.saver, config(row["thread_id"]))
        assert row["checkpoints"] == found.checkpoints
        assert row["head_id"] == found[-1].checkpoint_id
        assert (row["step"], row["source"]) == (found[-1].step, found[-1].source)
    assert rows[0]["checkpoints"] > rows[1]["checkpoints"]


def test_threads_of_an_empty_database(lite: Database) -> None:
    result = cli("threads", "--db", lite.url)
    assert result.exit_code == 0, result.output
    assert "0 threads" in result.stdout
    assert json.loads(cli("threads", "--db", lite.url, "--json").stdout) == []


def test_show_prints_the_values_as_the_graph_reads_them(db: Database) -> None:
    db.run(cli_graphs.v1, "t1", doc="hello")
    graph = neograph_ext.compile(cli_graphs.v1, checkpointer=db.saver)
    state = graph.get_state(config("t1"))

    result = cli("show", V1, "--db", db.url, "--thread", "t1")
    got = json.loads(cli("show", V1, "--db", db.url, "--thread", "t1", "--json").stdout)

    assert result.exit_code == 0, result.output
    assert "  doc       'hello'" in result.stdout
    assert "  log       ['a', 'b', 'c', 'd']" in result.stdout
    assert "next        - (run complete)" in result.stdout
    assert got["values"] == {"doc": "hello", "log": ["a", "b", "c", "d"]}
    assert got["checkpoint_id"] == state.config["configurable"]["checkpoint_id"]
    assert got["parent_id"] == state.parent_config["configurable"]["checkpoint_id"]  # type: ignore[index]
    assert (got["step"], got["source"], got["next"]) == (4, "loop", [])


def test_show_an_earlier_checkpoint(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    graph = neograph_ext.compile(cli_graphs.v1, checkpointer=db.saver)
    second = next(s for s in graph.get_state_history(config("t1")) if s.metadata["step"] == 2)
    at = second.config["configurable"]["checkpoint_id"]

    got = json.loads(
        cli("show", V1, "--db", db.url, "--thread", "t1", "--checkpoint", at, "--json").stdout
    )

    assert got["values"]["log"] == ["a", "b"] and got["next"] == ["c"]


@pytest.mark.parametrize("command", ["show", "diff"])
def test_an_unknown_thread_or_checkpoint_is_one_line(db: Database, command: str) -> None:
    db.run(cli_graphs.v1, "t1")
    line = one_error_line(cli(command, V1, "--db", db.url, "--thread", "nope"))
    assert "thread 'nope' has no checkpoints" in line
    other = "--checkpoint" if command == "show" else "--to"
    line = one_error_line(cli(command, V1, "--db", db.url, "--thread", "t1", other, "x-1"))
    assert "thread 't1' has no checkpoint 'x-1'" in line


@pytest.mark.parametrize("command", ["show", "diff"])
def test_a_reserved_thread_is_refused(db: Database, command: str) -> None:
    db.run(cli_graphs.v1, "t1")
    reserved = {
        str(c.config["configurable"]["thread_id"])
        for c in db.saver.list(None)
        if str(c.config["configurable"]["thread_id"]).startswith(RESERVED)
    }
    assert len(reserved) == 2  # the stamp's description and the order of stamps
    for thread in sorted(reserved):
        line = one_error_line(cli(command, V1, "--db", db.url, "--thread", thread))
        assert "is reserved" in line


def test_diff_compares_the_head_with_its_parent_by_default(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")

    result = cli("diff", V1, "--db", db.url, "--thread", "t1")
    got = json.loads(cli("diff", V1, "--db", db.url, "--thread", "t1", "--json").stdout)

    assert result.exit_code == 0, result.output
    assert got["changes"] == [
        {"path": "log", "change": "changed", "old": ["a", "b", "c"], "new": ["a", "b", "c", "d"]}
    ]
    head = neograph_ext.history(db.saver, config("t1"))[-1]
    assert (got["from"], got["to"]) == (head.parent_id, head.checkpoint_id)
    assert "1 change" in result.stdout and "['a', 'b', 'c', 'd']" in result.stdout


def test_diff_between_two_named_checkpoints(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    lineage = neograph_ext.history(db.saver, config("t1"))
    first, last = lineage[0].checkpoint_id, lineage[-1].checkpoint_id

    got = json.loads(
        cli("diff", V1, "--db", db.url, "--thread", "t1", "--from", first, "--to", last,
            "--json").stdout
    )  # fmt: skip

    assert got["changes"] == [  # the input checkpoint holds the reducer's empty list
        {"path": "log", "change": "changed", "old": [], "new": ["a", "b", "c", "d"]},
        {"path": "doc", "change": "added", "old": None, "new": "a document"},
    ]
    line = one_error_line(cli("diff", V1, "--db", db.url, "--thread", "t1", "--to", first))
    assert "is the thread's first: pass --from" in line


def test_changes_go_field_by_field_into_objects_and_equal_length_lists() -> None:
    old = {"summary": {"text": "a", "n": 1}, "log": ["x", {"k": 1}], "gone": 1, "tags": [1]}
    new = {"summary": {"text": "a", "n": 2, "wc": 9}, "log": ["x", {"k": 2}], "tags": [1, 2]}
    assert changes(old, new) == [
        Change("summary.n", "changed", 1, 2),
        Change("summary.wc", "added", None, 9),
        Change("log[1].k", "changed", 1, 2),
        Change("gone", "removed", 1, None),
        Change("tags", "changed", [1], [1, 2]),
    ]
    assert changes(old, old) == []


def test_show_names_the_question_a_waiting_thread_asks(db: Database) -> None:
    db.run(cli_graphs.asking, "t1", doc="draft 1")
    graph = "tests.cli.cli_graphs:asking"

    result = cli("show", graph, "--db", db.url, "--thread", "t1")
    got = json.loads(cli("show", graph, "--db", db.url, "--thread", "t1", "--json").stdout)

    assert result.exit_code == 0, result.output
    assert "next        ask" in result.stdout
    assert "asks        {'question': 'publish?', 'draft': 'draft 1'}" in result.stdout
    assert got["interrupts"] == [{"question": "publish?", "draft": "draft 1"}]
    assert got["next"] == ["ask"]
