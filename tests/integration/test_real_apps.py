"""Apps shaped like LangGraph's tutorials: compiled graphs and prebuilt agents,
subgraphs at any depth, state-schema annotations, parallel blame, node caches, tool
schemas and renames. Counters prove what ran."""

from __future__ import annotations

import json
import operator
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.cache.memory import InMemoryCache
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.func import entrypoint
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import create_react_agent
from langgraph.store.memory import InMemoryStore
from langgraph.types import CachePolicy

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.graphs.apps import (
    FakeChat,
    outline,
    search_tool,
    tool_loop,
    with_subgraph,
    writer,
)
from tests.graphs.pipelines import Crash, State, linear, model, wire

# Item 5: compiled graphs and prebuilt agents.


def test_compile_takes_a_compiled_graph_and_keeps_its_options(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    store, cache = InMemoryStore(), InMemoryCache()
    compiled = linear(runs).compile(
        checkpointer=saver,
        interrupt_before=["b"],
        interrupt_after=["c"],
        name="mine",
        store=store,
        cache=cache,
        debug=False,
    )
    graph = ne.compile(compiled)
    assert graph.checkpointer is saver and graph.store is store and graph.cache is cache
    assert graph.name == "mine" and graph.debug is False
    assert graph.interrupt_before_nodes == ["b"] and graph.interrupt_after_nodes == ["c"]
    drive.run(graph, {"log": []}, config)
    assert runs == Counter("a")  # stopped before b, as the compiled graph said
    drive.run(graph, None, config)
    assert runs == Counter("abc")  # stopped after c
    assert drive.run(graph, None, config)["log"] == list("abcd")
    assert drive.plan(graph, config).kind == "up_to_date"


def test_compile_keyword_overrides_a_compiled_graphs_option(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(linear(runs).compile(interrupt_before=["b"]), checkpointer=saver)
    assert graph.checkpointer is saver
    graph = ne.compile(graph, interrupt_before=[])
    assert drive.run(graph, {"log": []}, config)["log"] == list("abcd")


def test_an_entrypoint_not_compiled_by_neograph_ext_gets_a_graph_error(
    drive: Drive, saver: BaseCheckpointSaver[Any]
) -> None:
    @entrypoint(checkpointer=saver)
    def workflow(value: int) -> int:
        return value

    with pytest.raises(ne.GraphError, match=r"neograph_ext.compile\(workflow"):
        drive.run(workflow, 1, {"configurable": {"thread_id": "t"}})
    assert drive.run(ne.compile(workflow), 1, {"configurable": {"thread_id": "t"}}) == 1


# Items 1 and 3: subgraphs compiled the usual way, at any depth, with field-level diffs.


def _plain(runs: Counter[str], title: type) -> Any:
    return with_subgraph(runs, writer(runs, outline(title)).compile())


def _nested(runs: Counter[str], title: type) -> Any:
    middle = with_subgraph(runs, writer(runs, outline(title)).compile(), name="inner")
    return with_subgraph(runs, middle.compile())


def _own_checkpointer(runs: Counter[str], title: type) -> Any:
    return with_subgraph(runs, writer(runs, outline(title)).compile(checkpointer=True))


@pytest.mark.parametrize(
    ("shape", "rerun", "path"),
    [
        (_plain, {"plan", "write"}, "writer: channel `outline`"),
        (_nested, {"research@inner", "plan", "write"}, "writer > inner: channel `outline`"),
        (_own_checkpointer, {"plan", "write"}, "writer: channel `outline`"),
    ],
    ids=["plain", "nested", "checkpointer_true"],
)
def test_change_inside_a_plainly_compiled_subgraph_reruns_it(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    shape: Any,
    rerun: set[str],
    path: str,
    runs: Counter[str],
) -> None:
    drive.ran_before(shape(runs, str), saver, {"topic": "x"}, config, runs)
    graph = ne.compile(shape(runs, int), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind == "rewind" and plan.invalidated_nodes == {"writer"}
    text = str(plan)
    assert f"{path} type changed" in text and "Outline.title: str -> int" in text
    result = drive.run(graph, None, config)
    assert set(runs) == rerun and all(count == 1 for count in runs.values())
    assert result["draft"] == "draft of 1"
    assert drive.plan(graph, config).kind == "up_to_date"


# Item 2: a crash inside a subgraph, then a change inside it.


def test_crash_inside_subgraph_then_change_starts_the_subgraph_afresh(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.ran_before(
        with_subgraph(runs, writer(runs, outline(str), crash=True).compile()),
        saver,
        {"topic": "x"},
        config,
        runs,
        crash=Crash,
    )
    graph = ne.compile(_plain(runs, int), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind == "rewind" and plan.invalidated_nodes == {"writer"}
    # Without the fork, LangGraph resumes the subgraph from its own checkpoint and
    # `write` gets the old outline (a TypeError on every retry).
    assert drive.run(graph, None, config)["draft"] == "draft of 1"
    assert runs == Counter(["plan", "write"])


def _two_writers(runs: Counter[str], y_type: type) -> StateGraph[Any, Any, Any, Any]:
    Y = model("Y", value=(y_type, ...))

    # Functional syntax: a class body's annotations would be strings naming locals.
    Overall = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "Overall", {"x": str, "y": Y, "log": Annotated[list[str], operator.add]}, total=False
    )

    def make_x(state: Overall) -> Overall:
        runs["make_x"] += 1
        return {"x": "x"}

    def make_y(state: Overall) -> Overall:
        runs["make_y"] += 1
        return {"y": Y(value=y_type(1))}

    def finish(state: Overall) -> Overall:
        runs["finish"] += 1
        return {"log": ["done"]}

    builder = StateGraph(Overall)
    for fn in (make_x, make_y, finish):
        # Resolvable as LangGraph's docs write them (no string annotations).
        fn.__annotations__ = {"state": Overall, "return": Overall}
        builder.add_node(fn.__name__, fn)
    wire(builder, "make_x", "make_y", "finish")
    return builder


def test_nodes_annotated_with_the_state_are_judged_by_what_they_wrote(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.ran_before(_two_writers(runs, int), saver, {"log": []}, config, runs)
    graph = ne.compile(_two_writers(runs, float), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"make_y"} and plan.kept == {"make_x"}
    drive.run(graph, None, config)
    assert runs == Counter(["make_y", "finish"])


# Item 7: blame lands on the writer, not its siblings.


def _fetch_extract_summarize(runs: Counter[str], text: type) -> StateGraph[Any, Any, Any, Any]:
    Summary = model("Summary", text=(text, ...))

    Doc = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "Doc", {"doc": str, "facts": list[str], "summary": Summary}, total=False
    )

    def fetch(state: Doc) -> dict[str, Any]:
        runs["fetch"] += 1
        return {"doc": "d"}

    def extract(state: Doc) -> dict[str, Any]:
        runs["extract"] += 1
        return {"facts": ["f"]}

    def summarize(state: Doc) -> dict[str, Any]:
        runs["summarize"] += 1
        return {"summary": Summary(text=text(1))}

    builder = StateGraph(Doc)
    for fn in (fetch, extract, summarize):
        builder.add_node(fn.__name__, fn)
    builder.add_edge(START, "fetch")
    builder.add_edge("fetch", "extract")
    builder.add_edge("fetch", "summarize")
    builder.add_edge("extract", END)
    builder.add_edge("summarize", END)
    return builder


def test_a_channel_change_is_blamed_on_the_task_that_wrote_it(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.ran_before(_fetch_extract_summarize(runs, str), saver, {}, config, runs)
    graph = ne.compile(_fetch_extract_summarize(runs, int), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"summarize"}
    assert "node `extract`" not in str(plan)
    assert plan.rerun == {"summarize"} and plan.kept_tasks == {"extract"}
    drive.run(graph, None, config)
    # Blamed on summarize alone, extract's finished work is kept too.
    assert runs == Counter(["summarize"])


# Item 4: node caches.


def _cached(
    runs: Counter[str], returns: object, policy: CachePolicy[Any]
) -> StateGraph[Any, Any, Any, Any]:
    def a(state: State) -> dict[str, Any]:
        runs["a"] += 1
        return {"log": ["a"]}

    def b(state: State) -> dict[str, Any]:
        runs["b"] += 1
        return {"log": ["b"]}

    b.__annotations__["return"] = returns
    builder = StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("b", b, cache_policy=policy)
    wire(builder, "a", "b")
    return builder


@pytest.mark.parametrize(
    "policy",
    [CachePolicy(), CachePolicy(key_func=lambda state: repr(sorted(state)))],
    ids=["default_key", "custom_key"],
)
def test_a_cached_result_of_other_types_is_never_served(
    drive: Drive, saver: Saver, config: RunnableConfig, policy: CachePolicy[Any], runs: Counter[str]
) -> None:
    cache = InMemoryCache()
    old = ne.compile(
        _cached(runs, model(score=(int, ...)), policy), checkpointer=saver, cache=cache
    )
    drive.run(old, {"log": []}, config)
    other: RunnableConfig = {
        "configurable": {"thread_id": config["configurable"]["thread_id"] + "-2"}
    }
    drive.run(old, {"log": []}, other)
    assert runs == Counter({"a": 2, "b": 1})  # the cache serves b under the same code
    runs.clear()
    new = ne.compile(
        _cached(runs, model(score=(float, ...)), policy), checkpointer=saver, cache=cache
    )
    assert drive.plan(new, config).rerun == {"b"}
    drive.run(new, None, config)
    assert runs == Counter("b")  # not served from the cache the old code filled


# Item 8: tool argument schemas.


def test_tool_schema_change_reruns_the_node_that_made_the_calls(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    old_args = model("SearchArgs", query=(str, ...))
    old = ne.compile(
        tool_loop(runs, [search_tool(runs, old_args)], {"query": "q"}),
        checkpointer=saver,
        interrupt_before=["tools"],
    )
    drive.run(old, {"messages": [HumanMessage("hi")]}, config)
    assert runs == Counter(["agent"])
    runs.clear()
    new_args = model("SearchArgs", terms=(list[str], ...))
    graph = ne.compile(
        tool_loop(runs, [search_tool(runs, new_args)], {"terms": ["q"]}),
        checkpointer=saver,
        interrupt_before=["tools"],
    )
    plan = drive.plan(graph, config)
    assert plan.kind == "rewind" and "agent" in plan.invalidated_nodes
    assert "tool `search` arguments changed" in str(plan)
    drive.run(graph, None, config)  # the agent asks again, under the new schema
    assert runs == Counter(["agent"])
    result = drive.run(graph, None, config)
    assert runs == Counter({"agent": 2, "search": 1})
    assert "found {'terms': ['q']}" in result["messages"][-2].content


# Item 9: renames.


def test_a_renamed_node_keeps_its_work(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    with pytest.raises(Crash):
        drive.run(ne.compile(linear(runs, crash="d"), checkpointer=saver), {"log": []}, config)
    runs.clear()
    renamed = linear(runs, names=("a", "b", "c2", "d"))
    graph = ne.compile(renamed, checkpointer=saver, renames={"c": "c2"})
    assert drive.plan(graph, config).kind == "continue"
    assert drive.run(graph, None, config)["log"] == ["a", "b", "c", "d"]
    assert runs == Counter("d")
    # Without `renames`, the rename is a topology change: b re-runs.
    assert drive.plan(ne.compile(renamed, checkpointer=saver), config).kind != "continue"


# Acceptance: create_react_agent with a fake chat model.


def test_react_agent_resumes_after_a_crash_inside_a_tool(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    args = model("SearchArgs", query=(str, ...))
    agent = create_react_agent(
        FakeChat(runs=runs, call={"query": "q"}), [search_tool(runs, args, crash_once=True)]
    )
    graph = ne.compile(agent, checkpointer=saver)
    with pytest.raises(Crash):
        drive.run(graph, {"messages": [HumanMessage("hi")]}, config)
    assert runs == Counter({"model": 1, "search": 1})
    assert drive.plan(graph, config).kind == "continue"
    result = drive.run(graph, {"messages": [HumanMessage("hi")]}, config)
    assert runs == Counter({"model": 2, "search": 2})  # the first model call is kept
    assert result["messages"][-1].content == "done"


def test_react_agent_response_format_change_reruns_only_the_responder(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    args = model("SearchArgs", query=(str, ...))
    tools = [search_tool(runs, args)]
    old_answer = model("Answer", text=(str, ...))
    old = create_react_agent(
        FakeChat(runs=runs, call={"query": "q"}), tools, response_format=old_answer
    )
    drive.run(ne.compile(old, checkpointer=saver), {"messages": [HumanMessage("hi")]}, config)
    assert runs == Counter({"model": 2, "search": 1, "respond": 1})
    runs.clear()
    new_answer = model("Answer", text=(str, ...), score=(int, ...))
    new = create_react_agent(
        FakeChat(runs=runs, call={"query": "q"}), tools, response_format=new_answer
    )
    graph = ne.compile(new, checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"generate_structured_response"}
    result = drive.run(graph, None, config)
    assert runs == Counter(["respond"])
    assert result["structured_response"].score == 1


def _cache_worker(tmp_path: Path, thread: str, score_type: str) -> dict[str, int]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.integration.cache_worker",
            str(tmp_path / "threads.sqlite"),
            str(tmp_path / "cache.sqlite"),
            thread,
            score_type,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, int] = json.loads(done.stdout)
    return result


# One way: the subject is a cache two processes share; each worker runs the sync driver.
@pytest.mark.slow
def test_sqlite_cache_across_processes_serves_only_results_of_the_same_code(
    tmp_path: Path,
) -> None:
    assert _cache_worker(tmp_path, "t1", "int") == {"a": 1, "b": 1}
    assert _cache_worker(tmp_path, "t2", "int") == {"a": 1}  # same code: served
    assert _cache_worker(tmp_path, "t3", "float") == {"a": 1, "b": 1}  # other types: runs
    assert _cache_worker(tmp_path, "t4", "float") == {"a": 1}
