"""The compiled graph is LangGraph's own: the same attributes, output, serialisation and
cancellation as a graph compiled plainly, with only the stamp reference added."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from contextlib import aclosing
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

import neograph_ext as ne
from neograph_ext.drivers._graph import StampedGraph
from tests.drive import Drive


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


class Typed(BaseModel):
    value: str


def _typed() -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(Typed)
    builder.add_node("a", lambda s: {"value": s.value + "_a"})
    builder.add_edge(START, "a")
    builder.add_edge("a", END)
    return builder


class Flow(TypedDict, total=False):
    text: str
    inner: str


def test_the_compiled_graph_keeps_everything_langgraph_sets() -> None:
    plain, ours = _typed().compile(), ne.compile(_typed())
    assert set(vars(ours)) == set(vars(plain))
    assert all(
        (getattr(ours, name) is None) == (getattr(plain, name) is None)
        for name in vars(plain)
        if name != "config"  # ours carries the stamp reference in its metadata
    )
    assert set(ours.config["metadata"]) == {"neograph_ext"}


def test_v2_output_is_the_typed_state(drive: Drive, saver: BaseCheckpointSaver[Any]) -> None:
    graph = ne.compile(_typed(), checkpointer=saver)
    result = drive.invoke(graph, {"value": "x"}, _thread(), version="v2")
    assert isinstance(result.value, Typed) and result.value.value == "x_a"
    parts = list(
        drive.graph_stream(graph, {"value": "x"}, _thread(), version="v2", stream_mode="values")
    )
    assert parts and all(isinstance(part["data"], Typed) for part in parts)


# Async only: cancelling the tasks still running is asyncio's, as LangGraph's astream does.
async def test_closing_the_stream_early_cancels_running_tasks_at_once() -> None:
    cancelled: list[str] = []

    async def quick(state: Flow) -> Flow:
        return {"text": "quick"}

    async def slow(state: Flow) -> Flow:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append("slow")
            raise
        return {"inner": "slow"}

    builder = StateGraph(Flow).add_node("quick", quick).add_node("slow", slow)
    builder.add_edge(START, "quick").add_edge(START, "slow")
    graph = ne.compile(builder, checkpointer=InMemorySaver())
    async with aclosing(graph.astream({"text": ""}, _thread())) as chunks:
        async for _ in chunks:
            break
    assert cancelled == ["slow"]


def test_the_graph_serialises_as_langgraphs_own() -> None:
    def parent(compile_child: Callable[[StateGraph[Any, Any, Any, Any]], Any]) -> Any:
        child = StateGraph(Flow).add_node("inner", lambda s: s).add_edge(START, "inner")
        builder = StateGraph(Flow).add_node("child", compile_child(child))
        return builder.add_edge(START, "child")

    plain = parent(lambda b: b.compile()).compile()
    ours = ne.compile(parent(ne.compile))
    assert json.dumps(ours.get_graph(xray=True).to_json()) == json.dumps(
        plain.get_graph(xray=True).to_json()
    )
    assert type(ours).__name__ == "CompiledStateGraph" and isinstance(ours, StampedGraph)
