"""The run mark a driver writes vouches for its own thread only: a graph run inside a
node does not inherit it, and a mark forged in a caller's metadata never skips the
check."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.pipelines import linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


class Flow(TypedDict, total=False):
    text: str
    inner: str


def test_a_graph_run_inside_a_node_does_not_inherit_the_runs_mark(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:

    def work(state: Flow) -> Flow:
        runs["work"] += 1
        return {"inner": state["text"] + "!"}

    inner = ne.compile(
        StateGraph(Flow).add_node("work", work).add_edge(START, "work"), checkpointer=saver
    )
    inner_config = _thread()

    def outer_node(state: Flow) -> Flow:
        return {"inner": inner.invoke({"text": "same"}, inner_config)["inner"]}

    async def aouter_node(state: Flow) -> Flow:
        return {"inner": (await inner.ainvoke({"text": "same"}, inner_config))["inner"]}

    outer = ne.compile(
        StateGraph(Flow)
        .add_node("outer", aouter_node if drive.is_async else outer_node)
        .add_edge(START, "outer"),
        checkpointer=saver,
    )
    drive.run(outer, {"text": "outer input"}, _thread())
    assert runs == Counter({"work": 1})

    # The inner thread recorded its own input, so the same input asks for its result.
    assert drive.run(inner, {"text": "same"}, inner_config) == {"text": "same", "inner": "same!"}
    assert runs == Counter({"work": 1})


def test_forged_run_metadata_never_skips_the_check(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    with pytest.raises(RuntimeError):
        drive.run(ne.compile(linear(runs, {"c": V1}, crash="d"), checkpointer=saver), {}, config)
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    stamp_id = graph.neograph_ext_stamp.id
    forged = {
        "neograph_ext_verified": stamp_id,
        "neograph_ext_run": f"{stamp_id[:16]}.up_to_date.",
    }
    # A plain call on top of the stale lineage, its metadata claiming a verified run.
    drive.invoke(graph, None, {**config, "metadata": forged})
    runs.clear()

    assert drive.plan(graph, config).kind is ne.PlanKind.REWIND
    assert drive.run(graph, None, config)["log"] == list("abcd")
    assert runs == Counter("cd")
