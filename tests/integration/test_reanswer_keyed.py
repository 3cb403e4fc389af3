"""``ResumePolicy(reanswer=True)`` with an answer keyed by interrupt id that cannot be
matched to the question asked again (one asked inside a subgraph): set aside by name,
the question asked again, never answered with what was given to another."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.pipelines import deployed, model


def _asking_inside(runs: Counter[str], x: type) -> StateGraph[Any, Any, Any, Any]:
    """``a -> sub``; ``a`` returns a model with ``x: x``, ``sub`` asks inside."""
    made = model("Keyed_a", x=(x, ...))
    deployed(made)
    state = TypedDict("Keyed", {"a": made, "said": str}, total=False)  # type: ignore[operator]  # noqa: UP013

    def a(s: Any) -> dict[str, Any]:
        runs["a"] += 1
        return {"a": made(x=x(1))}

    def ask(s: Any) -> dict[str, Any]:
        runs["ask"] += 1
        return {"said": str(interrupt("ok?"))}

    inner = StateGraph(state)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    builder = StateGraph(state)
    builder.add_node("a", a)
    builder.add_node("sub", inner.compile())
    builder.add_edge(START, "a")
    builder.add_edge("a", "sub")
    return builder


def test_an_answer_keyed_by_a_subgraphs_question_is_set_aside_by_name(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:
    old = ne.compile(_asking_inside(Counter(), int), checkpointer=saver)
    drive.run(old, {}, config)
    (asked,) = drive.get_state(old, config).interrupts
    new = ne.compile(_asking_inside(runs, str), checkpointer=saver)
    with caplog.at_level(logging.WARNING, logger="neograph_ext"):
        drive.run(
            new,
            Command(resume={asked.id: "yes"}),
            config,
            resume=ne.ResumePolicy(reanswer=True),
        )
    assert f"interrupt id {asked.id} is set aside" in caplog.text
    (again,) = drive.get_state(new, config).interrupts
    assert again.id != asked.id and "said" not in drive.get_state(new, config).values
    assert runs == Counter({"a": 1, "ask": 1})
