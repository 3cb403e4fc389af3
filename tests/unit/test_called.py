"""The compiled graphs a node's code reaches (``_called``), and how the stamp folds them in
(``_introspect``): each way code can hold a graph, found from objects alone."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any, TypedDict

from langchain_core.tools import StructuredTool, tool
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel

import neograph_ext as ne
from neograph_ext.decision._called import MAX_DEPTH, called_graphs
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._plan import HeadFacts, PlanKind, ResumePlan, not_fingerprinted
from tests.graphs.agents import counted_tool, deep_agent
from tests.graphs.pipelines import model


class S(TypedDict, total=False):
    x: int
    draft: Any


class Draft(BaseModel):
    text: str


class DraftV2(BaseModel):
    text: str
    words: int


def inner_graph(returns: type = Draft) -> Any:
    def draft(state: S) -> dict[str, Any]:
        return {"draft": returns(text="d")}

    draft.__annotations__["return"] = returns
    return StateGraph(S).add_node("draft", draft).add_edge(START, "draft").compile()


SUB = inner_graph()


def calls_a_global(state: S) -> dict[str, Any]:
    return SUB.invoke(state)  # type: ignore[no-any-return]


def test_a_global_the_code_names_is_found() -> None:
    assert called_graphs(calls_a_global) == {"SUB": SUB}


def test_a_global_named_in_nested_code_is_found() -> None:
    def node(state: S) -> dict[str, Any]:
        def later() -> dict[str, Any]:
            return SUB.invoke(state)  # type: ignore[no-any-return]

        return later()

    assert called_graphs(node) == {"SUB": SUB}


def test_a_closure_cell_is_found() -> None:
    sub = inner_graph()

    def node(state: S) -> dict[str, Any]:
        return sub.invoke(state)  # type: ignore[no-any-return]

    assert called_graphs(node) == {"sub": sub}


def test_defaults_and_keyword_defaults_are_found() -> None:
    one, two = inner_graph(), inner_graph()

    def node(state: S, graph: Any = one, *, other: Any = two) -> dict[str, Any]:
        return {**graph.invoke(state), **other.invoke(state)}

    assert called_graphs(node) == {"graph": one, "other": two}


def test_a_partials_function_and_arguments_are_found() -> None:
    one, two = inner_graph(), inner_graph()

    def call(graph: Any, state: S, *, then: Any) -> dict[str, Any]:
        return {**graph.invoke(state), **then.invoke(state)}

    assert called_graphs(functools.partial(call, one, then=two)) == {"graph": one, "then": two}
    assert called_graphs(functools.partial(calls_a_global)) == {"SUB": SUB}


def test_a_bound_methods_instance_attributes_are_found() -> None:
    class Worker:
        def __init__(self, graph: Any) -> None:
            self.graph = graph

        def run(self, state: S) -> dict[str, Any]:
            return self.graph.invoke(state)  # type: ignore[no-any-return]

    sub = inner_graph()
    assert called_graphs(Worker(sub).run) == {"graph": sub}


def test_an_attribute_named_like_a_global_is_no_global() -> None:
    class Holder:
        SUB = None

    def node(state: S, holder: Any = None) -> dict[str, Any]:
        return holder.SUB.invoke(state)  # type: ignore[union-attr, no-any-return]

    assert called_graphs(node) == {}


def test_a_tools_function_and_coroutine_are_found() -> None:
    sub, asub = inner_graph(), inner_graph()

    def ask(x: int) -> str:
        """Ask the worker."""
        return str(sub.invoke({"x": x}))

    async def aask(x: int) -> str:
        """Ask the worker."""
        return str(await asub.ainvoke({"x": x}))

    assert called_graphs(tool(ask)) == {"sub": sub}
    assert called_graphs(StructuredTool.from_function(coroutine=aask)) == {"asub": asub}
    assert called_graphs(ToolNode([tool(ask)])) == {"sub": sub}


def test_a_subagent_spec_is_named_by_its_name() -> None:
    sub = inner_graph()
    specs = [{"name": "researcher", "description": "looks things up", "runnable": sub}]

    def node(state: S) -> dict[str, Any]:
        return specs[0]["runnable"].invoke(state)  # type: ignore[attr-defined, no-any-return]

    assert called_graphs(node) == {"researcher": sub}


def test_an_added_subgraph_is_no_call_and_a_graph_ends_the_walk() -> None:
    assert called_graphs(SUB) == {}
    # What the called graph's own nodes call is its own stamp's, not the caller's.
    outer = StateGraph(S).add_node("c", calls_a_global).add_edge(START, "c").compile()

    def node(state: S) -> dict[str, Any]:
        return outer.invoke(state)  # type: ignore[no-any-return]

    assert called_graphs(node) == {"outer": outer}


def test_library_code_is_not_walked() -> None:
    # LangGraph's own node wrapper is followed to the user's function, nothing more.
    runnable = StateGraph(S).add_node("c", calls_a_global).nodes["c"].runnable
    assert called_graphs(runnable) == {"SUB": SUB}
    assert called_graphs(StateGraph.add_node) == {}


def test_the_walk_is_bounded_in_depth_and_ends_on_cycles() -> None:
    deep: list[Any] = [SUB]
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    loop: list[Any] = []
    loop.append(loop)

    def node(state: S, held: Any = deep, cycle: Any = loop) -> None:
        return None

    assert called_graphs(node) == {}


def test_a_change_of_a_called_graph_changes_the_calling_node_only() -> None:
    runs: Counter[str] = Counter()

    def builder(returns: type) -> StateGraph[Any, Any, Any, Any]:
        sub = inner_graph(returns)

        def research(state: S) -> dict[str, Any]:
            runs["research"] += 1
            return {"x": 1}

        def worker(state: S) -> dict[str, Any]:
            return sub.invoke(state)  # type: ignore[no-any-return]

        return StateGraph(S).add_sequence([research, worker]).add_edge(START, "research")

    old, new = build_stamp(builder(Draft)), build_stamp(builder(DraftV2))
    assert old.nodes["research"] == new.nodes["research"]
    assert old.nodes["worker"].fp != new.nodes["worker"].fp
    assert set(old.nodes["worker"].sub or {}) == {"sub/draft", "sub/channel:x", "sub/channel:draft"}
    assert (old.nodes["worker"].inner or {})["sub/draft/out"] in old.sigs
    assert build_stamp(builder(Draft)) == old  # deterministic for the same code


def test_a_graph_calling_its_caller_back_terminates() -> None:
    def node(state: S) -> dict[str, Any]:
        return HOLDER[0].invoke(state)  # type: ignore[no-any-return]

    builder = StateGraph(S).add_node("again", node).add_edge(START, "again")
    HOLDER[:] = [builder.compile()]
    stamp = build_stamp(builder)
    assert stamp.nodes["again"].sub is None
    HOLDER[:] = [ne.compile(StateGraph(S).add_node("c", calls_a_global).add_edge(START, "c"))]
    assert set(build_stamp(builder).nodes["again"].sub or {}) >= {"HOLDER/c"}


HOLDER: list[Any] = []


def test_a_waiting_node_whose_called_graph_no_stamp_describes_is_not_trusted() -> None:
    head = HeadFacts("c1", frozenset({"worker"}), uncovered={"worker": "worker:t1"})
    waits = ResumePlan(PlanKind.CONTINUE, "t", next_nodes=frozenset({"worker"}))
    plan = not_fingerprinted(waits, head)
    assert plan.kind is PlanKind.UNVERIFIED
    (note,) = plan.notes
    assert "node `worker` called a graph that wrote checkpoints under `worker:t1`" in note
    # A rewind re-running the node gives its called graph a fresh start: nothing to say.
    rewind = ResumePlan(PlanKind.REWIND, "t", rerun=frozenset({"worker"}))
    assert not_fingerprinted(rewind, head) == rewind
    assert not_fingerprinted(waits, HeadFacts("c1", frozenset({"worker"}))) == waits


def test_a_deep_agent_called_from_code_folds_in_its_sub_agents() -> None:
    def stamp_with(args: type[BaseModel]) -> Any:
        deep = deep_agent(Counter(), [counted_tool(Counter(), args)])

        def ask(state: S) -> dict[str, Any]:
            return deep.invoke(state)  # type: ignore[no-any-return]

        return build_stamp(StateGraph(S).add_node("ask", ask).add_edge(START, "ask"))

    old, new = stamp_with(CITY), stamp_with(WITH_UNITS)
    assert "deep/tools" in (old.nodes["ask"].sub or {})
    assert any(k.startswith("deep/tools/researcher/") for k in old.nodes["ask"].inner or {})
    assert old.nodes["ask"].fp != new.nodes["ask"].fp
    assert stamp_with(CITY).nodes["ask"] == old.nodes["ask"]


CITY = model("SearchArgs", city=(str, ...))
WITH_UNITS = model("SearchArgs", city=(str, ...), units=(str, ...))


class _Store(Mapping[str, Any]):
    """A mapping backed by a database, in real life: reading it is I/O."""

    def __getitem__(self, key: str) -> Any:
        raise AssertionError("read")

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("read")

    def __len__(self) -> int:
        raise AssertionError("read")


STORE = _Store()


def test_a_mapping_of_another_kind_is_never_read() -> None:
    def node(state: S) -> dict[str, Any]:
        return STORE["worker"].invoke(state)  # type: ignore[no-any-return]

    assert called_graphs(node) == {}
