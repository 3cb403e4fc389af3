"""What a call logs: its decision once at INFO and each warning once; ``plan()`` only
plans, so it logs at DEBUG. Counted record by record, as an alert on the logger would."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.graphs.pipelines import Crash, DraftV1, DraftV2, approval, linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


def _records(caplog: pytest.LogCaptureFixture) -> Counter[tuple[str, str]]:
    """Each record of the package at INFO or above, by level and message."""
    return Counter(
        (r.levelname, r.getMessage())
        for r in caplog.records
        if r.name == "neograph_ext" and r.levelno >= logging.INFO
    )


def _crashed(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> None:
    graph = ne.compile(linear(Counter(), {"c": V1}, crash="d"), checkpointer=saver)
    with pytest.raises(Crash):
        drive.invoke(graph, {"log": []}, config)


@pytest.mark.parametrize("call", ["invoke", "run"])
def test_a_rewind_is_logged_once(
    drive: Drive, saver: Saver, config: RunnableConfig, caplog: pytest.LogCaptureFixture, call: str
) -> None:
    _crashed(drive, saver, config)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver, attach=[ne.AutoResume()])
    with caplog.at_level(logging.DEBUG, logger="neograph_ext"):
        getattr(drive, call)(graph, None, config)
    logged = _records(caplog)
    assert list(logged.values()) == [1], logged
    ((level, message),) = logged
    assert level == "INFO" and ": rewind from checkpoint " in message


@pytest.mark.parametrize("call", ["invoke", "run"])
def test_a_question_asked_again_warns_once_per_warning(
    drive: Drive, saver: Saver, config: RunnableConfig, caplog: pytest.LogCaptureFixture, call: str
) -> None:
    drive.run(ne.compile(approval(Counter(), DraftV1), checkpointer=saver), {}, config)
    graph = ne.compile(approval(Counter(), DraftV2), checkpointer=saver, attach=[ne.AutoResume()])
    with caplog.at_level(logging.DEBUG, logger="neograph_ext"):
        getattr(drive, call)(graph, Command(resume="approve"), config)
    logged = _records(caplog)
    assert set(logged.values()) == {1}, logged
    assert [level for level, _ in logged].count("INFO") == 1
    warned = [message for level, message in logged if level == "WARNING"]
    assert len(warned) == 2, warned
    assert any("asked again" in m for m in warned) and any("set aside" in m for m in warned)


def test_plan_logs_at_debug_only(
    drive: Drive, saver: Saver, config: RunnableConfig, caplog: pytest.LogCaptureFixture
) -> None:
    drive.run(ne.compile(approval(Counter(), DraftV1), checkpointer=saver), {}, config)
    graph = ne.compile(approval(Counter(), DraftV2), checkpointer=saver)
    with caplog.at_level(logging.DEBUG, logger="neograph_ext"):
        assert drive.plan(graph, config).kind is ne.PlanKind.REWIND
    assert _records(caplog) == Counter()
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert sum(": rewind from checkpoint " in m for m in debug) == 1, debug
    assert sum("asked again" in m for m in debug) == 1, debug
