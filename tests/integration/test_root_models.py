"""A pydantic ``RootModel`` never reads back from a checkpoint (LangGraph's serializer
revives a model as ``cls(**data)``, which fails for a list, and hands back the list):
``compile`` warns of it, ``unrevivable_types`` names it, and a node reading it is handed
the stored data validated as the declared type, so a resume neither rewinds to its
writer nor loops: after a question, a crash, and on a new turn, with no deploy at all."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from pydantic import RootModel

import neograph_ext as ne
from tests.drive import Drive, Saver


class Tags(RootModel[list[str]]):
    """What the costly node writes: a list, as a model of its own."""


class Tagged(TypedDict, total=False):
    q: str
    tags: Tags
    answer: str
    seen: list[str]


def _tagged(runs: Counter[str], *, ask: bool = False, crash: list[bool] | None = None) -> Any:
    """``gen`` (the costly node) writes ``tags``; ``use`` reads them, asking a question
    first (``ask``) or crashing while ``crash`` holds a True it pops; ``seen`` records
    the class ``use`` was handed."""

    def gen(state: Tagged) -> dict[str, Any]:
        runs["gen"] += 1
        return {"tags": Tags([state["q"], "x"])}

    def use(state: Tagged) -> dict[str, Any]:
        runs["use"] += 1
        answer = interrupt("keep these tags?") if ask else "-"
        if crash and crash.pop():
            raise RuntimeError("use crashed")
        tags = state["tags"]
        return {"answer": answer, "seen": [type(tags).__name__, *tags.root]}

    builder = StateGraph(Tagged).add_node("gen", gen).add_node("use", use)
    return builder.add_edge(START, "gen").add_edge("gen", "use").add_edge("use", END)


def test_compile_warns_of_a_root_model_and_unrevivable_types_names_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="neograph_ext"):
        graph = ne.compile(_tagged(Counter()), checkpointer=None)
    (found,) = ne.unrevivable_types(graph)
    assert f"{__name__}.Tags" in found and "RootModel" in found
    assert any(f"{__name__}.Tags" in r.getMessage() for r in caplog.records)
    strict = ne.ResumePolicy(on_change="raise")  # guidance: a node is handed a Tags
    assert ne.unrevivable_types(ne.compile(_tagged(Counter()), checkpointer=None, resume=strict))


def test_an_answer_resumes_the_asking_node_with_the_root_model_and_gen_runs_once(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(_tagged(runs, ask=True), checkpointer=saver)
    asked = drive.run(graph, {"q": "a"}, config)
    assert "__interrupt__" in asked
    planned = drive.plan(graph, config)
    assert planned.kind is ne.PlanKind.CONTINUE, planned
    result = drive.run(graph, Command(resume="yes"), config)
    assert result["answer"] == "yes" and result["seen"] == ["Tags", "a", "x"]
    assert runs == Counter(gen=1, use=2)  # `use` asked, then was answered


def test_a_crashed_thread_resumes_the_reader_with_the_root_model_and_gen_runs_once(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(_tagged(runs, crash=[False, True]), checkpointer=saver)
    with pytest.raises(RuntimeError, match="use crashed"):
        drive.run(graph, {"q": "a"}, config)
    assert drive.plan(graph, config).kind is ne.PlanKind.CONTINUE
    assert drive.run(graph, None, config)["seen"] == ["Tags", "a", "x"]
    assert runs == Counter(gen=1, use=2)


def test_a_new_turn_reads_the_root_model_a_finished_turn_left(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    builder = _tagged(runs)

    def again(state: Tagged) -> dict[str, Any]:  # a second turn reads the tags first
        runs["again"] += 1
        return {"seen": [type(state.get("tags")).__name__]}

    builder.add_node("again", again)
    builder.edges.discard((START, "gen"))
    builder.add_conditional_edges(START, lambda s: "again" if s.get("tags") else "gen")
    builder.add_edge("again", END)
    graph = ne.compile(builder, checkpointer=saver)
    drive.run(graph, {"q": "a"}, config)
    planned = drive.plan(graph, config, input={"q": "b"})
    assert not planned.notes, planned.notes
    assert drive.run(graph, {"q": "b"}, config)["seen"] == ["Tags"]
    assert runs == Counter(gen=1, use=1, again=1)
