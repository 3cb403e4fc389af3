"""Threads written by plain LangGraph, adopted by ``run``: resumed as promised.

A thread started by ``builder.compile(...)`` carries no stamps. Once ``run`` resumed it
(or found it complete), the same input again returns the stored result and runs
nothing, and a different input starts a new turn, exactly as for threads ``run``
started. The turn's input is recognised by the value LangGraph saved in the turn's input
checkpoint. The "cannot be verified" warning is logged once per thread and process.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

import neograph_ext as ne
from neograph_ext import PlanKind
from tests.integration.pipelines import Crash, asking, linear

X = {"log": ["x"]}
Y = {"log": ["y"]}


def _crashed(saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]) -> Any:
    with pytest.raises(Crash):
        linear(runs, crash="c").compile(checkpointer=saver).invoke(X, config)
    return ne.compile(linear(runs), checkpointer=saver), X, Counter("cd")


def _interrupted(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> Any:
    asking(runs).compile(checkpointer=saver).invoke(X, config)
    return (
        ne.compile(asking(runs), checkpointer=saver),
        Command(resume="yes"),
        Counter(["ask", "b"]),
    )


def _complete(saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]) -> Any:
    linear(runs).compile(checkpointer=saver).invoke(X, config)
    return ne.compile(linear(runs), checkpointer=saver), X, Counter()


Adopt = Callable[[BaseCheckpointSaver[Any], RunnableConfig, Counter[str]], Any]
SHAPES: dict[str, Adopt] = {
    "crashed": _crashed,
    "interrupted": _interrupted,
    "complete": _complete,
}
TURN = {
    "crashed": Counter("abcd"),
    "interrupted": Counter(["a", "ask"]),
    "complete": Counter("abcd"),
}


def _warnings(caplog: pytest.LogCaptureFixture) -> int:
    return sum("cannot be verified" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_an_adopted_thread_resumes_once_then_is_up_to_date(
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    shape: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="neograph_ext")
    runs: Counter[str] = Counter()
    graph, first, resumed = SHAPES[shape](saver, config, runs)
    runs.clear()

    result = ne.run(graph, first, config)
    assert runs == resumed, "the adopting run did not just finish the thread"

    runs.clear()
    again = ne.run(graph, X, config)
    assert runs == Counter(), "the same input again ran nodes"
    assert again == result == graph.get_state(config).values
    assert ne.plan(graph, config).rerun == frozenset()

    # A different input is a new turn, as on a thread run() started.
    new_turn = ne.run(graph, Y, config)
    assert runs == TURN[shape]
    runs.clear()
    if shape != "interrupted":
        assert ne.run(graph, Y, config) == new_turn and runs == Counter()
        assert ne.plan(graph, config).kind is PlanKind.UP_TO_DATE
    assert _warnings(caplog) == 1, caplog.text


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_an_adopted_thread_resumes_once_then_is_up_to_date_async(
    async_saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    shape: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="neograph_ext")
    runs: Counter[str] = Counter()
    builder = {"crashed": linear(runs, crash="c"), "interrupted": asking(runs)}.get(
        shape, linear(runs)
    )
    if shape == "crashed":
        with pytest.raises(Crash):
            await builder.compile(checkpointer=async_saver).ainvoke(X, config)
    else:
        await builder.compile(checkpointer=async_saver).ainvoke(X, config)
    graph = ne.compile(
        asking(runs) if shape == "interrupted" else linear(runs), checkpointer=async_saver
    )
    first = Command(resume="yes") if shape == "interrupted" else X
    runs.clear()

    result = await ne.arun(graph, first, config)
    runs.clear()
    assert await ne.arun(graph, X, config) == result and runs == Counter()
    await ne.arun(graph, Y, config)
    assert runs == TURN[shape]
    assert (await ne.aplan(graph, config)).kind in (PlanKind.UP_TO_DATE, PlanKind.CONTINUE)
    assert _warnings(caplog) == 1, caplog.text


def test_a_plain_thread_with_two_turns_is_judged_by_its_latest_input(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs: Counter[str] = Counter()
    plain = linear(runs).compile(checkpointer=saver)
    plain.invoke(X, config)
    plain.invoke(Y, config)
    graph = ne.compile(linear(runs), checkpointer=saver)
    runs.clear()
    ne.run(graph, Y, config)
    assert runs == Counter()
    ne.run(graph, X, config)  # the first turn's input, given again: a new turn
    assert runs == Counter("abcd")
