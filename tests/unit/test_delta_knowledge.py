"""What ``_langgraph`` knows about LangGraph's DeltaChannel (beta, langgraph 1.2), checked
against the installed LangGraph: fails loudly when an upgrade changes it. Apart from
``test_langgraph_knowledge``: DeltaChannel does not exist in the oldest LangGraph the
package supports, so the oldest-versions pass leaves this file out."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from neograph_ext.decision._langgraph import (
    COUNTERS_KEY,
    delta_channels,
    delta_snapshot,
)
from tests.graphs.delta import extend


class Deltas(TypedDict, total=False):
    log: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=2)]
    plain: Annotated[list[str], operator.add]


def test_delta_channels_store_snapshots_and_counters_as_known() -> None:
    builder = StateGraph(Deltas)
    builder.add_node("a", lambda s: {"log": ["a"], "plain": ["a"]})
    builder.add_node("b", lambda s: {"log": ["b"], "plain": ["b"]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    assert set(delta_channels(graph)) == {"log"}
    config: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": [], "plain": []}, config)
    stored = [tup.checkpoint["channel_values"].get("log") for tup in saver.list(config)]
    snapshots = [value for value in stored if value is not None]
    assert snapshots and all(type(v) is type(delta_snapshot([])) for v in snapshots)
    counted = [tup.metadata.get(COUNTERS_KEY) for tup in saver.list(config)]
    assert any(isinstance(c, dict) and "log" in c for c in counted)
