"""GRAPH may be a graph compiled by plain LangGraph: a ``create_agent`` agent (which has no
builder to point at) or ``StateGraph(...).compile()``. The CLI compiles it with
neograph-ext, as the app's own ``neograph_ext.compile(agent, ...)`` would, and says what
the Python API says."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

import neograph_ext
from neograph_ext.cli._show import to_json
from tests.cli import cli_agent, cli_graphs
from tests.cli.support import V2, Database, cli

AGENT, AGENT_V2 = "tests.cli.cli_agent:searching", "tests.cli.cli_agent:searching_v2"
CHAT = {"configurable": {"thread_id": "chat-1"}}


def _chat(db: Database) -> None:
    """One turn of ``searching``, run through ``neograph_ext`` as the app runs it."""
    graph = neograph_ext.compile(cli_agent.searching, checkpointer=db.saver)
    neograph_ext.run(graph, {"messages": [HumanMessage("hi")]}, CHAT)


def _python_plan(db: Database, agent: Any) -> Any:
    """What ``plan`` says in Python, as the CLI prints it with ``--json``."""
    decision = neograph_ext.plan(neograph_ext.compile(agent, checkpointer=db.saver), CHAT)
    return json.loads(to_json(dataclasses.asdict(decision)))


def test_plan_takes_a_create_agent_agent_and_says_what_python_says(db: Database) -> None:
    _chat(db)
    runs, rows = Counter(cli_agent.runs), db.rows()

    current = cli("plan", AGENT, "--db", db.url, "--thread", "chat-1", "--json")
    deployed = cli("plan", AGENT_V2, "--db", db.url, "--thread", "chat-1", "--json")

    assert current.exit_code == 0, current.output
    assert json.loads(current.stdout)["kind"] == "up_to_date"
    assert deployed.exit_code == 0, deployed.output
    got = json.loads(deployed.stdout)
    assert got["kind"] == "rewind" and got["rerun"] == ["model", "tools"]
    assert got == _python_plan(db, cli_agent.searching_v2)
    assert cli_agent.runs == runs and db.rows() == rows  # planned: nothing ran, nothing written


def test_every_reading_command_takes_a_create_agent_agent(db: Database, tmp_path: Path) -> None:
    _chat(db)
    where = ["--db", db.url]
    thread = [*where, "--thread", "chat-1"]

    checked = cli("check", AGENT_V2, *where, "--json")
    history = cli("history", AGENT, *thread, "--json")
    shown = cli("show", AGENT, *thread, "--json")
    exported = cli("export", AGENT, *where, "--out", tmp_path / "fixtures")
    gated = cli("check", AGENT_V2, "--fixtures", tmp_path / "fixtures", "--json")

    assert checked.exit_code == 1, checked.output  # chat-1 would rewind under the deploy
    assert json.loads(checked.stdout)["failing"] == ["chat-1"]
    assert history.exit_code == 0, history.output
    rows = json.loads(history.stdout)
    ran = {task: status for row in rows for task, status in row["tasks"].items()}
    assert ran == {"model": "same", "tools": "same"}, ran
    assert shown.exit_code == 0, shown.output
    said = [m["type"] for m in json.loads(shown.stdout)["values"]["messages"]]
    assert said == ["human", "ai", "tool", "ai"]
    assert exported.exit_code == 0, exported.output
    assert gated.exit_code == 1, gated.output
    [verdict] = json.loads(gated.stdout)["threads"]
    assert verdict["outcome"] == "rewind" and verdict["plan"]["rerun"] == ["model", "tools"]


def test_plan_takes_a_state_graph_compiled_by_plain_langgraph(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")

    compiled = cli("plan", "tests.cli.cli_graphs:plain_v2", "--db", db.url, "--thread", "t1")
    built = cli("plan", V2, "--db", db.url, "--thread", "t1")
    checked = cli("check", "tests.cli.cli_graphs:plain_v2", "--db", db.url, "--json")

    assert compiled.exit_code == 0, compiled.output
    assert "Review.score: int -> float" in compiled.stdout
    assert compiled.stdout == built.stdout
    assert checked.exit_code == 1 and json.loads(checked.stdout)["failing"] == ["t1"]


def test_plan_names_a_kept_step_of_a_node_that_also_re_runs(lite: Database) -> None:
    """The model call that asked for the changed tool is kept, the final one re-runs: the
    kept row says so, as the steps row does."""
    graph = neograph_ext.compile(cli_agent.reading, checkpointer=lite.saver)
    neograph_ext.run(graph, {"messages": [HumanMessage("hi")]}, CHAT)

    result = cli("plan", "tests.cli.cli_agent:reading_v2", "--db", lite.url, "--thread", "chat-1")

    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line for line in result.stdout.splitlines() if len(line.split()) > 2}
    assert "kept         model (step 1)" in rows["kept"]
    assert "model (step 3 of 3) re-runs; model (step 1) kept" in rows["steps"]
