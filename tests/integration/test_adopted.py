"""Threads written by plain LangGraph, adopted by ``run``: resumed as promised.

A thread started by ``builder.compile(...)`` carries no stamps. Once ``run`` resumed it
(or found it complete), the same input again returns the stored result and runs
nothing, and a different input starts a new turn, exactly as for threads ``run``
started. The turn's input is recognised by the value LangGraph saved in the turn's input
checkpoint. The "cannot be verified" warning is logged once per thread and process.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

import neograph_ext as ne
from neograph_ext import PlanKind
from tests.drive import Drive
from tests.graphs.chat import ProfileV1, chat, say
from tests.graphs.pipelines import MODULE, Crash, asking, linear, model

V2 = model(score=(float, ...))
RENAMED = model("ProfileB", who=(str, ...))

X = {"log": ["x"]}
Y = {"log": ["y"]}


def _crashed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> Any:
    with pytest.raises(Crash):
        drive.invoke(linear(runs, crash="c").compile(checkpointer=saver), X, config)
    return ne.compile(linear(runs), checkpointer=saver), X, Counter("cd")


def _interrupted(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> Any:
    drive.invoke(asking(runs).compile(checkpointer=saver), X, config)
    return (
        ne.compile(asking(runs), checkpointer=saver),
        Command(resume="yes"),
        Counter(["ask", "b"]),
    )


def _complete(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> Any:
    drive.invoke(linear(runs).compile(checkpointer=saver), X, config)
    return ne.compile(linear(runs), checkpointer=saver), X, Counter()


Adopt = Callable[[Drive, BaseCheckpointSaver[Any], RunnableConfig, Counter[str]], Any]
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


@contextlib.contextmanager
def without_class(made: type) -> Iterator[None]:
    """The module of ``made`` without it, as after a deploy that renamed the class: a
    stored value of it revives as a dict."""
    module = sys.modules[MODULE]
    delattr(module, made.__name__)
    try:
        yield
    finally:
        setattr(module, made.__name__, made)


def _warnings(caplog: pytest.LogCaptureFixture) -> int:
    return sum("cannot be verified" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_an_adopted_thread_resumes_once_then_is_up_to_date(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    shape: str,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:
    caplog.set_level(logging.WARNING, logger="neograph_ext")
    graph, first, resumed = SHAPES[shape](drive, saver, config, runs)
    runs.clear()

    result = drive.run(graph, first, config)
    assert runs == resumed, "the adopting run did not just finish the thread"

    runs.clear()
    again = drive.run(graph, X, config)
    assert runs == Counter(), "the same input again ran nodes"
    assert again == result == drive.get_state(graph, config).values
    assert drive.plan(graph, config).rerun == frozenset()

    # A different input is a new turn, as on a thread run() started.
    new_turn = drive.run(graph, Y, config)
    assert runs == TURN[shape]
    runs.clear()
    if shape != "interrupted":
        assert drive.run(graph, Y, config) == new_turn and runs == Counter()
        assert drive.plan(graph, config).kind is PlanKind.UP_TO_DATE
    assert _warnings(caplog) == 1, caplog.text


def test_a_plain_thread_with_two_turns_is_judged_by_its_latest_input(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    plain = linear(runs).compile(checkpointer=saver)
    drive.invoke(plain, X, config)
    drive.invoke(plain, Y, config)
    graph = ne.compile(linear(runs), checkpointer=saver)
    runs.clear()
    drive.run(graph, Y, config)
    assert runs == Counter()
    drive.run(graph, X, config)  # the first turn's input, given again: a new turn
    assert runs == Counter("abcd")


def test_adopting_a_finished_thread_records_it_verified_so_a_later_change_is_seen(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """The same input again on a finished plain thread runs nothing and writes one fork
    of its head recording the adoption: the thread then plans as any stamped one, up to
    date, and a later deploy's change is rewound, not resumed unverified."""
    drive.invoke(linear(runs).compile(checkpointer=saver), X, config)
    graph = ne.compile(linear(runs), checkpointer=saver)
    assert drive.plan(graph, config).kind is PlanKind.UNVERIFIED
    runs.clear()
    drive.run(graph, X, config)
    assert runs == Counter()
    assert drive.plan(graph, config).kind is PlanKind.UP_TO_DATE
    changed = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    assert drive.plan(changed, config).kind is PlanKind.REWIND
    drive.run(changed, X, config)
    assert runs == Counter("cd")


def test_values_that_do_not_read_back_are_not_adopted(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """``profile`` was saved as a class the new code no longer has (it comes back as a
    dict): a new turn resumes as LangGraph would, but the thread is not adopted, and
    stays unverified, for ``on_unverified`` to settle."""
    drive.invoke(chat(Counter()).compile(checkpointer=saver), say("hi"), config)
    with without_class(ProfileV1):
        graph = ne.compile(chat(runs, RENAMED), checkpointer=saver)
        drive.run(graph, say("next"), config)
        assert runs == Counter(reply=1)
        assert drive.plan(graph, config).kind is PlanKind.UNVERIFIED
        refuse = ne.ResumePolicy(on_unverified="raise")
        with pytest.raises(ne.CheckpointSchemaError, match="cannot be verified") as refused:
            drive.run(graph, say("again"), config, resume=refuse)
        # The way out in today's spelling alone (older ones are the CHANGELOG's).
        assert "run with ResumePolicy(on_unverified='resume') to resume it" in str(refused.value)
