"""``compile(auto_resume=True)`` on unchanged code is LangGraph, call for call.

Each scenario runs the same calls twice on one saver, on two threads: through
``builder.compile`` and through ``neograph_ext.compile(builder, attach=[AutoResume()])``
(what a server deployment runs). Results, node executions and the whole history read
back through a new saver instance (values, next nodes, source and step of every
checkpoint) must be equal. One scenario per kind of difference LangGraph's own suite
found under ``auto_resume=True``: crashes of subgraphs compiled with
``checkpointer=False``, DeltaChannel state lost across turns, time travel and
``update_state`` forks with parallel subgraphs, an explicit ``durability``, and the
count of checkpoints.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.integration.savers import reopened

Builder = StateGraph[Any, Any, Any, Any]
Calls = Callable[[Drive, Any, RunnableConfig], list[Any]]


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _merge(files: dict[str, str], writes: Sequence[dict[str, str]]) -> dict[str, str]:
    return {**files, **{k: v for write in writes for k, v in write.items()}}


class Files(TypedDict, total=False):
    files: Annotated[dict[str, str], DeltaChannel(_merge, snapshot_frequency=1000)]


def _step(runs: Counter[str], name: str) -> Callable[[dict[str, Any]], dict[str, list[str]]]:
    def fn(state: dict[str, Any]) -> dict[str, list[str]]:
        runs[name] += 1
        return {"log": [name]}

    return fn


def unsaved_subgraph(runs: Counter[str]) -> Builder:
    """A parent whose node runs a subgraph compiled with ``checkpointer=False``."""
    inner = StateGraph(Log)
    inner.add_node("inner", _step(runs, "inner"))
    inner.add_edge(START, "inner")
    parent = StateGraph(Log)
    parent.add_node("child", inner.compile(checkpointer=False))
    parent.add_node("after", _step(runs, "after"))
    parent.add_edge(START, "child")
    parent.add_edge("child", "after")
    return parent


def called_unsaved_subgraph(runs: Counter[str]) -> Builder:
    """``unsaved_subgraph`` run from a node's function: found through the function's code
    (its cells and the names it loads), never its source file."""
    unsaved = unsaved_subgraph(runs).nodes["child"].runnable

    def child(state: Log) -> Any:
        return unsaved.invoke(state)

    parent = StateGraph(Log)
    parent.add_node("child", child)
    parent.add_node("after", _step(runs, "after"))
    parent.add_edge(START, "child")
    parent.add_edge("child", "after")
    return parent


def asking_subgraph(runs: Counter[str]) -> Builder:
    """A parent whose subgraph keeps its own checkpoints (``checkpointer=True``) and asks."""

    def ask(state: dict[str, Any]) -> dict[str, list[str]]:
        runs["ask"] += 1
        return {"log": [f"answer:{interrupt('?')}"]}

    inner = StateGraph(Log)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    parent = StateGraph(Log)
    parent.add_node("child", inner.compile(checkpointer=True))
    parent.add_edge(START, "child")
    return parent


def parallel_subgraphs(runs: Counter[str]) -> Builder:
    """``START -> (left | right)``, each a subgraph keeping its own state across turns
    (``checkpointer=True``) and writing how much of it it found, then ``join``."""

    def inner_step(side: str) -> Callable[[dict[str, Any]], dict[str, list[str]]]:
        def fn(state: dict[str, Any]) -> dict[str, list[str]]:
            runs[side] += 1
            return {"log": [f"{side} saw {len(state['log'])}"]}

        return fn

    parent = StateGraph(Log)
    for side in ("left", "right"):
        inner = StateGraph(Log)
        inner.add_node(f"{side}-inner", inner_step(side))
        inner.add_edge(START, f"{side}-inner")
        parent.add_node(side, inner.compile(checkpointer=True))
        parent.add_edge(START, side)
    parent.add_node("join", _step(runs, "join"))
    parent.add_edge(["left", "right"], "join")
    return parent


def filesystem(runs: Counter[str]) -> Builder:
    """One node writing a file into a DeltaChannel dict, as agent harnesses keep files."""

    def write(state: dict[str, Any]) -> dict[str, Any]:
        runs["write"] += 1
        return {"files": {f"/doc_{runs['write']}.txt": f"turn {runs['write']}"}}

    builder = StateGraph(Files)
    builder.add_node("write", write)
    builder.add_edge(START, "write")
    return builder


def _turns(drive: Drive, graph: Any, config: RunnableConfig) -> list[Any]:
    """The same input twice: a new turn each time, as in LangGraph."""
    return [drive.invoke(graph, {"log": []}, config) for _ in range(2)]


def _files(drive: Drive, graph: Any, config: RunnableConfig) -> list[Any]:
    return [drive.invoke(graph, {"files": {}}, config) for _ in range(3)]


def _answered(drive: Drive, graph: Any, config: RunnableConfig) -> list[Any]:
    asked = drive.invoke(graph, {"log": []}, config, durability="exit")
    # An interrupt's id is derived from its thread's checkpoints: compare what it asks.
    question = [(i.value, i.response_schema) for i in asked.pop("__interrupt__")]
    return [asked, question, drive.invoke(graph, Command(resume="yes"), config, durability="exit")]


def _replayed(drive: Drive, graph: Any, config: RunnableConfig) -> list[Any]:
    """Studio's "replay from here", then "fork from here" (``update_state``)."""
    turns = [drive.invoke(graph, {"log": []}, config) for _ in range(2)]
    # The second turn's input checkpoint: replayed, the subgraphs load the first turn's.
    start = next(
        s for s in drive.get_state_history(graph, config) if s.metadata["source"] == "input"
    )
    replayed = drive.invoke(graph, None, start.config)
    forked = drive.update_state(graph, start.config, {"log": ["edited"]})
    return [*turns, replayed, drive.invoke(graph, None, forked)]


def _streamed(drive: Drive, graph: Any, config: RunnableConfig) -> list[Any]:
    modes = ["updates", "values"]
    return [
        list(drive.graph_stream(graph, {"log": []}, config, stream_mode=modes, durability="async"))
    ]


SCENARIOS: dict[str, tuple[Callable[[Counter[str]], Builder], Calls]] = {
    "unsaved subgraph": (unsaved_subgraph, _turns),
    "asking subgraph": (asking_subgraph, _answered),
    "parallel subgraphs replayed and forked": (parallel_subgraphs, _replayed),
    "delta files over three turns": (filesystem, _files),
    "stream with explicit durability": (unsaved_subgraph, _streamed),
}


def _history(saver: BaseCheckpointSaver[Any], tmp_path: Path, make: Any, cfg: Any) -> list[Any]:
    with reopened(saver, tmp_path) as fresh:
        graph = make(Counter()).compile(checkpointer=fresh)
        return [
            (s.values, s.next, s.metadata.get("source"), s.metadata.get("step"))
            for s in graph.get_state_history(cfg)
            if s.metadata is not None
        ]


def _twins(config: RunnableConfig) -> tuple[RunnableConfig, RunnableConfig]:
    thread = config["configurable"]["thread_id"]
    return config, {"configurable": {"thread_id": f"{thread}-auto"}}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_an_auto_resuming_graph_behaves_as_langgraph(
    drive: Drive, saver: Saver, config: RunnableConfig, tmp_path: Path, scenario: str
) -> None:
    make, calls = SCENARIOS[scenario]
    plain_config, auto_config = _twins(config)
    plain_runs: Counter[str] = Counter()
    auto_runs: Counter[str] = Counter()
    expected = calls(drive, make(plain_runs).compile(checkpointer=saver), plain_config)
    graph = ne.compile(make(auto_runs), checkpointer=saver, attach=[ne.AutoResume()])
    assert calls(drive, graph, auto_config) == expected
    assert auto_runs == plain_runs and plain_runs
    assert _history(saver, tmp_path, make, auto_config) == _history(
        saver, tmp_path, make, plain_config
    )


@pytest.mark.parametrize("make", [unsaved_subgraph, called_unsaved_subgraph])
def test_run_on_a_graph_with_an_unsaved_subgraph_does_not_crash(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    make: Callable[[Counter[str]], Builder],
    runs: Counter[str],
) -> None:
    """``run``'s default ``durability="sync"`` would fail in such a subgraph."""
    graph = ne.compile(make(runs), checkpointer=saver)
    assert drive.run(graph, {"log": []}, config) == {"log": ["inner", "after"]}
    assert drive.run(graph, {"log": []}, config) == {"log": ["inner", "after"]}
    assert runs == Counter({"inner": 1, "after": 1})
