"""A thread exported as a fixture plans offline exactly as it plans live.

Each test writes a thread with one code, exports it, then plans it with the next code
twice: live (``plan`` on the database) and offline (``plan_fixture`` on the file alone).
The two plans are equal, field for field, and planning offline runs no node.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.types import Command

import neograph_ext as ne
from tests.graphs.chat import ProfileV2, chat, say
from tests.graphs.pipelines import Crash, asking, diamond, linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))
Builder = StateGraph[Any, Any, Any, Any]


def _both(
    saver: BaseCheckpointSaver[Any],
    writer: Any,
    current: Any,
    config: RunnableConfig,
    folder: Path,
    *,
    with_values: bool = False,
) -> tuple[ne.ResumePlan, ne.ResumePlan]:
    """The offline and the live plan of ``config``'s thread under ``current``, exported
    with ``writer`` (the graph that wrote it)."""
    thread = config["configurable"]["thread_id"]
    ne.export_threads(writer, folder, threads=[thread], with_values=with_values)
    (fixture,) = ne.testing.read_fixtures(folder)
    return ne.testing.plan_fixture(current, fixture), ne.plan(current, config)


def _crashed_alike(
    saver: BaseCheckpointSaver[Any], writer: Any, current: Any, config: RunnableConfig, folder: Path
) -> ne.ResumePlan:
    """Run ``writer`` until it crashes, then plan under ``current`` offline and live: the
    two plans are equal, and the offline one is returned."""
    with contextlib.suppress(Crash):
        ne.run(writer, {"log": [], "value": 1}, config)
    offline, live = _both(saver, writer, current, config, folder)
    assert offline == live
    return offline


def test_a_rewind_plans_alike(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, tmp_path: Path, runs: Counter[str]
) -> None:
    writer = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)
    ne.run(writer, {"log": [], "value": 1}, config)
    current = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    offline, live = _both(saver, writer, current, config, tmp_path)
    assert offline == live
    assert offline.kind is ne.PlanKind.REWIND and offline.rerun == {"c", "d"}
    assert runs == Counter()


def test_a_crashed_thread_continues_alike(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, tmp_path: Path
) -> None:
    writer = ne.compile(linear(Counter(), {"c": V1}, crash="d"), checkpointer=saver)
    current = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)
    offline = _crashed_alike(saver, writer, current, config, tmp_path)
    assert offline.kind is ne.PlanKind.CONTINUE and offline.next_nodes == {"d"}


def test_a_crashed_parallel_step_keeps_the_same_finished_tasks(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, tmp_path: Path
) -> None:
    writer = ne.compile(diamond(Counter(), V1, crash="c"), checkpointer=saver)
    current = ne.compile(diamond(Counter(), V2), checkpointer=saver)
    offline = _crashed_alike(saver, writer, current, config, tmp_path)
    assert offline.kind is ne.PlanKind.REWIND and offline.kept_tasks == {"b"}


def test_a_thread_waiting_at_an_interrupt_plans_alike(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, tmp_path: Path
) -> None:
    writer = ne.compile(asking(Counter()), checkpointer=saver)
    ne.run(writer, {"log": [], "value": 1}, config)
    unchanged, live = _both(saver, writer, writer, config, tmp_path / "same")
    assert unchanged == live and unchanged.next_nodes == {"ask"}
    changed = ne.compile(asking(Counter()), checkpointer=saver, versions={"a": "v2"})
    offline, live = _both(saver, writer, changed, config, tmp_path / "changed")
    assert offline == live
    assert offline.kind is ne.PlanKind.REWIND and offline.rerun == {"a", "ask"}
    assert offline.notes == live.notes and offline.notes  # the question is asked again
    ne.run(writer, Command(resume="yes"), config)  # the thread is still answerable


def test_keep_compatible_needs_the_values_to_plan_alike(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, tmp_path: Path, runs: Counter[str]
) -> None:
    writer = ne.compile(chat(Counter()), checkpointer=saver)
    ne.run(writer, say("hi"), config)
    ne.run(writer, say("again"), config)
    keeping = ne.ResumePolicy(keep_compatible=True)
    current = ne.compile(chat(runs, ProfileV2), checkpointer=saver, resume=keeping)
    offline, live = _both(saver, writer, current, config, tmp_path / "values", with_values=True)
    assert offline == live
    assert offline.kind is ne.PlanKind.MIGRATE and offline.migrated == {"profile"}
    # Without the values, the stored profile cannot be judged compatible: the change in
    # the earlier turn is then refused, as it would be with keep_compatible off.
    blind, _ = _both(saver, writer, current, config, tmp_path / "blind")
    assert blind.kind is ne.PlanKind.REWIND and blind.blocker
    assert runs == Counter()


@pytest.mark.parametrize("with_values", [False, True])
def test_an_unchanged_finished_thread_is_up_to_date_alike(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, tmp_path: Path, with_values: bool
) -> None:
    writer = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)
    ne.run(writer, {"log": [], "value": 1}, config)
    ne.run(writer, {"log": [], "value": 2}, config)  # a second turn
    offline, live = _both(saver, writer, writer, config, tmp_path, with_values=with_values)
    assert offline == live and offline.kind is ne.PlanKind.UP_TO_DATE
    assert offline.turn_input is not None
