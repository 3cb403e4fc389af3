"""No line of LangGraph's serializer on the command line: a class GRAPH declares reads
back as itself (a ``create_agent``'s ``response_format`` too), and one it does not (a
class moved module) is reported once, in the command's own words and result, naming the
class and the threads that hold it. Run as programs: stderr is captured whole."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage

import neograph_ext
from tests.cli import cli_agent, cli_graphs
from tests.cli.support import Database, program

pytestmark = pytest.mark.slow

MOVED = "tests.cli.cli_graphs:briefing_v2"


def test_check_reports_a_class_that_moved_once_with_its_threads(lite: Database) -> None:
    lite.run(cli_graphs.briefing_v1, "t1", "t2")
    lite.run(cli_graphs.v1, "other")
    args = ["check", MOVED, "--db", lite.url, "--thread", "t1", "--thread", "other"]

    shown = program(*args)
    got = json.loads(program(*args, "--json").stdout)

    assert shown.returncode == 1 and shown.stderr == ""
    assert "Blocked deserialization" not in shown.stdout
    [note] = [line for line in shown.stdout.splitlines() if line.startswith("note:")]
    assert note.startswith("note: tests.cli.cli_graphs.Memo is stored in threads t1, and GRAPH")
    assert "read back as plain data" in note
    assert got["declined"] == [{"class": "tests.cli.cli_graphs.Memo", "threads": ["t1"]}]


def test_check_and_show_of_a_create_agent_graph_read_its_response_as_itself(
    lite: Database,
) -> None:
    graph = neograph_ext.compile(cli_agent.answering, checkpointer=lite.saver)
    neograph_ext.run(
        graph, {"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "a"}}
    )
    spec = "tests.cli.cli_agent:answering"

    checked = program("check", spec, "--db", lite.url, "--json")
    shown = program("show", spec, "--db", lite.url, "--thread", "a")

    assert checked.returncode == 0 and checked.stderr == "", checked.stderr
    assert json.loads(checked.stdout)["declined"] == []
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    assert "Answer(text='s')" in shown.stdout
