"""A user's app as ``mypy --strict`` reads it: what ``compile`` returns keeps LangGraph's
generic types, and the errors are the public classes."""

from __future__ import annotations

from typing import Any, TypedDict, assert_type

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel

import neograph_ext as ne


class State(TypedDict):
    doc: str


class Context(TypedDict):
    user: str


def fetch(state: State) -> State:
    return {"doc": state["doc"].upper()}


builder = StateGraph(State, context_schema=Context).add_node(fetch).add_edge(START, "fetch")
graph = ne.compile(builder, checkpointer=InMemorySaver())
assert_type(graph, CompiledStateGraph[State, Context, State, State])

compiled = builder.compile()  # a prebuilt agent is such a graph
assert_type(ne.compile(compiled), CompiledStateGraph[State, Context, State, State])


@entrypoint(checkpointer=InMemorySaver())
def workflow(doc: str) -> str:
    return doc.upper()


assert_type(ne.compile(workflow), Pregel[Any, None, Any, Any])  # as LangGraph types it

try:
    ne.run(graph, {"doc": "a"}, {"configurable": {"thread_id": "t1"}})
except ne.CheckpointSchemaError as exc:
    assert_type(exc.invalidated_nodes, frozenset[str])
    assert_type(exc.plan, ne.ResumePlan)
