"""The decision for issue 12's shapes on hand-made lineages: writers, renames,
subgraphs waited on, subgraph and tool diffs. No graph runs, no database."""

from __future__ import annotations

from collections import Counter
from typing import TypedDict

from langgraph.graph import END, START, StateGraph

from neograph_ext.decision._changes import ChangeReason
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._plan import PlanKind, decide
from neograph_ext.decision._stamp import Stamp
from tests.graphs.apps import outline, with_subgraph, writer
from tests.graphs.lineages import record
from tests.graphs.pipelines import State, linear, model


def parallel(field: type) -> Stamp:
    """``fetch -> (left || right)`` over a state whose key ``out`` holds an ``Out``."""
    out = model("Out", value=(field, ...))
    both = TypedDict("Both", {"log": list[str], "out": out}, total=False)  # type: ignore[misc]  # noqa: UP013
    builder = StateGraph(both)
    for name in ("fetch", "left", "right"):
        builder.add_node(name, lambda state: {})
    builder.add_edge(START, "fetch")
    builder.add_edge("fetch", "left")
    builder.add_edge("fetch", "right")
    builder.add_edge("left", END)
    builder.add_edge("right", END)
    return build_stamp(builder)


def test_a_channel_change_is_blamed_on_its_writer_and_on_every_task_when_unknown() -> None:
    old, new = parallel(int), parallel(float)
    for writers, blamed in (
        (frozenset({("out", "right"), ("log", "left")}), {"right"}),
        (None, {"left", "right"}),  # task ids not matched: today's attribution
    ):
        records = [
            record(-1, stamp=old),
            record(0, ("fetch",), ("log",), stamp=old),
            record(1, ("left", "right"), ("out", "log"), stamp=old, writers=writers),
        ]
        assert decide(records, new, "t").invalidated_nodes == blamed


def test_renames_keep_the_work_of_a_node_that_finished_under_its_old_name() -> None:
    old = build_stamp(linear(Counter()))
    new = build_stamp(linear(Counter(), names=("a", "b", "c2", "d")), renames={"c": "c2"})
    done = [record(-1, stamp=old)] + [record(i, n, stamp=old) for i, n in enumerate("abc")]
    done[-1] = record(2, "c", stamp=old, next_nodes=("d",))
    assert decide(done, new, "t").kind is PlanKind.CONTINUE
    # c never finished under its old name: the thread waits on it, by its new name as
    # LangGraph runs it (``_langgraph_renames``), and b's successor is c2 as renamed.
    waiting = done[:3]
    waiting[-1] = record(1, "b", stamp=old, next_nodes=("c2",))
    plan = decide(waiting, new, "t")
    assert plan.kind is PlanKind.CONTINUE and not plan.changes


def test_a_changed_subgraph_the_head_waits_on_forks_from_the_head() -> None:
    old = build_stamp(with_subgraph(Counter(), writer(Counter(), outline(str)).compile()))
    new = build_stamp(with_subgraph(Counter(), writer(Counter(), outline(int)).compile()))
    records = [
        record(-1, stamp=old),
        record(0, ("research",), ("topic",), stamp=old, next_nodes=("writer",)),
    ]
    plan = decide(records, new, "t")
    assert plan.kind is PlanKind.REWIND and plan.checkpoint_id == records[-1].checkpoint_id
    (change,) = plan.changes
    assert change.reason is ChangeReason.SUBGRAPH
    assert change.diff == (
        "writer: channel `outline` type changed",
        "    Outline.title: str -> int",
    )


def test_tool_schema_lines_name_the_tool() -> None:
    from langchain_core.tools import StructuredTool
    from langgraph.prebuilt import ToolNode

    def loop(args: type) -> Stamp:
        tool = StructuredTool.from_function(
            lambda **kw: "", name="search", description="d", args_schema=args
        )
        builder = StateGraph(State)
        builder.add_node("agent", lambda state: {})
        builder.add_node("tools", ToolNode([tool]))
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", lambda state: END, ["tools", END])
        builder.add_edge("tools", "agent")
        return build_stamp(builder)

    old = loop(model("Args", query=(str, ...)))
    new = loop(model("Args", query=(int, ...)))
    assert old.nodes["tools"] == new.nodes["tools"]  # the calls' maker is what changed
    records = [record(-1, stamp=old), record(0, ("agent",), stamp=old, next_nodes=("tools",))]
    plan = decide(records, new, "t")
    (change,) = plan.changes
    assert change.node == "agent" and change.reason is ChangeReason.TOOLS
    assert change.diff == ("tool `search` arguments changed", "    Args.query: str -> int")
