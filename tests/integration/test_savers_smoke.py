"""The shared fixtures work: plain LangGraph writes and reads checkpoints on each saver.

No neograph-ext code runs here, so a failure points at the test setup (a saver,
the PostgreSQL server `make test` starts), not at the library.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import StateGraph

from tests.drive import Drive
from tests.graphs.pipelines import wire


class State(TypedDict):
    text: str
    steps: list[str]


def first(state: State) -> dict[str, Any]:
    return {"text": state["text"].upper(), "steps": [*state["steps"], "first"]}


def second(state: State) -> dict[str, Any]:
    return {"text": state["text"] + "!", "steps": [*state["steps"], "second"]}


def builder() -> StateGraph[State]:
    graph = StateGraph(State)
    graph.add_node("first", first)
    graph.add_node("second", second)
    wire(graph, "first", "second")
    return graph


EXPECTED = {"text": "HI!", "steps": ["first", "second"]}


def test_saver_round_trip(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    graph = builder().compile(checkpointer=saver)
    assert drive.invoke(graph, {"text": "hi", "steps": []}, config) == EXPECTED

    # A second compiled graph on the same saver sees what the first one wrote.
    state = drive.get_state(builder().compile(checkpointer=saver), config)
    assert state.values == EXPECTED
    assert state.next == ()
    stored = saver.get_tuple(config)
    assert stored is not None
    assert stored.checkpoint["channel_values"]["text"] == "HI!"
    # input, then one checkpoint per step: START, first, second.
    assert len(list(saver.list(config))) == 4


def test_config_thread_ids_are_unique(config: RunnableConfig) -> None:
    other: RunnableConfig = {"configurable": {"thread_id": "fixed"}}
    assert config["configurable"]["thread_id"] != other["configurable"]["thread_id"]
    assert len(config["configurable"]["thread_id"]) == 36  # a uuid4


def test_postgres_marker_follows_the_saver_kind(
    request: pytest.FixtureRequest, saver: BaseCheckpointSaver[Any]
) -> None:
    marked = request.node.get_closest_marker("postgres") is not None
    assert marked == isinstance(saver, PostgresSaver | AsyncPostgresSaver)


def _write_in_subprocess(script: str) -> None:
    subprocess.run([sys.executable, "-c", textwrap.dedent(script)], check=True, timeout=120)


@pytest.mark.slow
def test_sqlite_path_is_shared_with_a_subprocess(sqlite_path: Path, config: RunnableConfig) -> None:
    thread_id = config["configurable"]["thread_id"]
    _write_in_subprocess(
        f"""
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import START, StateGraph
        from typing import TypedDict

        class S(TypedDict):
            n: int

        g = StateGraph(S)
        g.add_node("inc", lambda s: {{"n": s["n"] + 1}})
        g.add_edge(START, "inc")
        with SqliteSaver.from_conn_string({str(sqlite_path)!r}) as saver:
            g.compile(checkpointer=saver).invoke(
                {{"n": 1}}, {{"configurable": {{"thread_id": {thread_id!r}}}}}
            )
        """
    )
    with SqliteSaver.from_conn_string(str(sqlite_path)) as reader:
        stored = reader.get_tuple(config)
    assert stored is not None
    assert stored.checkpoint["channel_values"]["n"] == 2


def test_pg_dsn_reaches_the_shared_database(pg_dsn: str, config: RunnableConfig) -> None:
    # Two connections, as two workers would have: the second reads what the first wrote.
    with PostgresSaver.from_conn_string(pg_dsn) as writer:
        writer.setup()
        builder().compile(checkpointer=writer).invoke({"text": "hi", "steps": []}, config)
    with PostgresSaver.from_conn_string(pg_dsn) as reader:
        assert builder().compile(checkpointer=reader).get_state(config).values == EXPECTED
