"""A crash during a rolling deploy: the writes a crashed superstep leaves carry no stamp.

When one task of a superstep crashes, LangGraph keeps the writes of the tasks that
finished on the checkpoint the step ran from. Resumed by a new release from a head the
old release wrote, those are the new code's outputs on the old code's checkpoint: an
old worker resuming the thread next was handed them (and made the thread its own, so
the new code then undid its work). The new code now resumes such a head from a fork of
it under its own stamp, so the thread is the new code's from its first write.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.types import Command
from pydantic import BaseModel

import neograph_ext
from neograph_ext import PlanKind, ResumePolicy, ThreadSupersededError
from tests.drive import Drive
from tests.graphs.deploys import SummaryV1, SummaryV2
from tests.graphs.functional import asking_twice, chain
from tests.graphs.pipelines import Crash, deployed, wire

_SIBLINGS = {"summarize": "index", "index": "summarize"}
"""The two branches of one superstep."""


class _Release:
    """``draft -> (summarize | index) -> publish``; the releases differ in ``summarize``'s
    output type; a node named in ``failing`` crashes while it is named there."""

    def __init__(
        self, summary: type[BaseModel], saver: BaseCheckpointSaver[Any], **options: Any
    ) -> None:
        self.summary = summary
        self.runs: Counter[str] = Counter()
        self.failing: set[str] = set()
        self.finished = {name: threading.Event() for name in _SIBLINGS}
        state = TypedDict(  # type: ignore[misc]  # noqa: UP013
            "Fan", {"doc": str, "summary": summary, "index": str, "out": str}, total=False
        )
        builder = StateGraph(state)
        for name, fn in (
            ("draft", lambda s: self._ran("draft", {"doc": f"draft of {s['doc']}"})),
            ("summarize", lambda s: self._ran("summarize", {"summary": summary(text=s["doc"])})),
            ("index", lambda s: self._ran("index", {"index": "indexed"})),
            ("publish", lambda s: self._ran("publish", {"out": type(s["summary"]).__name__})),
        ):
            builder.add_node(name, fn)
        wire(builder, "draft", ["summarize", "index"], "publish")
        self.graph = neograph_ext.compile(builder, checkpointer=saver, **options)

    def _ran(self, name: str, update: dict[str, Any]) -> dict[str, Any]:
        self.runs[name] += 1
        sibling = _SIBLINGS.get(name)
        if name in self.failing:
            if sibling is not None and sibling not in self.failing:
                # The branches run in parallel: crash once the other one finished and
                # LangGraph stored its writes, else the crash may cut it short too.
                assert self.finished[sibling].wait(10), f"{sibling} never finished"
                time.sleep(0.1)
            raise Crash(name)
        if sibling is not None:
            self.finished[name].set()
        return update

    def serving(self) -> Any:
        deployed(self.summary)
        return self.graph


def _crashed_twice(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> tuple[_Release, _Release]:
    """The old release crashed in both branches; the new one resumed the thread, its
    ``summarize`` finished and ``index`` crashed again."""
    old, new = _Release(SummaryV1, saver), _Release(SummaryV2, saver)
    old.failing |= {"summarize", "index"}
    with pytest.raises(Crash):
        drive.run(old.serving(), {"doc": "d"}, config)
    old.failing.clear()
    assert drive.plan(new.serving(), config).kind is PlanKind.CONTINUE
    new.failing.add("index")
    with pytest.raises(Crash):
        drive.run(new.serving(), None, config)
    new.failing.clear()
    return old, new


def test_old_code_is_not_handed_what_the_new_code_left_in_a_crashed_step(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    old, new = _crashed_twice(drive, saver, config)
    # Both branches crash in the first try: one may be cancelled before it starts.
    first_try = Counter(old.runs)
    assert drive.plan(old.serving(), config).kind is PlanKind.SUPERSEDED
    with pytest.raises(ThreadSupersededError):
        drive.run(old.serving(), None, config)
    assert old.runs == first_try  # the old code ran nothing more
    result = drive.run(new.serving(), None, config)
    assert result["out"] == "ReviewSummary" and isinstance(result["summary"], SummaryV2)
    # The new code's finished summarize is kept across its own crash; index runs again.
    assert new.runs == Counter({"summarize": 1, "index": 2, "publish": 1})
    assert drive.plan(new.serving(), config).kind is PlanKind.UP_TO_DATE


def test_a_served_graph_of_the_new_code_forks_a_crashed_thread_as_run_does(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    """A LangGraph Server's plain call (``auto_resume=True``) resuming the old code's
    crashed head is served through ``run``, which forks it first."""
    old = _Release(SummaryV1, saver, attach=[neograph_ext.AutoResume()])
    new = _Release(SummaryV2, saver, attach=[neograph_ext.AutoResume()])
    old.failing |= {"summarize", "index"}
    with pytest.raises(Crash):
        drive.invoke(old.serving(), {"doc": "d"}, config)
    old.failing.clear()
    new.failing.add("index")
    with pytest.raises(Crash):
        drive.invoke(new.serving(), None, config)
    new.failing.clear()
    first_try = Counter(old.runs)  # a branch may be cancelled before it starts
    with pytest.raises(ThreadSupersededError):
        drive.invoke(old.serving(), None, config)  # was: handed the new code's summarize
    assert old.runs == first_try
    result = drive.invoke(new.serving(), None, config)
    assert isinstance(result["summary"], SummaryV2)
    assert new.runs == Counter({"summarize": 1, "index": 2, "publish": 1})


def test_a_rollback_takes_the_crashed_thread_over_and_reruns_the_new_codes_work(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    old, new = _crashed_twice(drive, saver, config)
    back = _Release(SummaryV1, saver, resume=ResumePolicy(take_over=True))
    result = drive.run(back.serving(), None, config)
    assert isinstance(result["summary"], SummaryV1)
    # summarize's output is the new code's: the old code re-runs it rather than keep it.
    assert back.runs["summarize"] == 1 and back.runs["publish"] == 1
    assert drive.plan(back.serving(), config).kind is PlanKind.UP_TO_DATE
    assert old.runs["publish"] == 0 and new.runs["publish"] == 0


def test_a_crashed_head_the_current_code_wrote_is_resumed_where_it_is(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    only = _Release(SummaryV2, saver)
    only.failing.add("index")
    with pytest.raises(Crash):
        drive.run(only.serving(), {"doc": "d"}, config)
    only.failing.clear()
    forks = [
        s
        for s in drive.get_state_history(only.serving(), config)
        if s.metadata.get("source") == "fork"
    ]
    drive.run(only.serving(), None, config)
    after = [
        s
        for s in drive.get_state_history(only.serving(), config)
        if s.metadata.get("source") == "fork"
    ]
    assert forks == [] and after == []
    assert only.runs == Counter({"draft": 1, "summarize": 1, "index": 2, "publish": 1})


def test_old_code_is_not_served_what_the_new_code_cached_in_a_crashed_turn(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    crash: set[str] = {"t1"}
    workflow = chain(runs, crash, is_async=drive.is_async)
    old = neograph_ext.compile(workflow, checkpointer=saver)
    new = neograph_ext.compile(workflow, checkpointer=saver, versions={"t2": "v2"})
    with pytest.raises(Crash):
        drive.run(old, 1, config)
    crash.clear()
    crash.add("t3")
    with pytest.raises(Crash):
        drive.run(new, None, config)  # t1 and the new t2 finish: their results are cached
    crash.clear()
    assert drive.plan(old, config).kind is PlanKind.SUPERSEDED
    with pytest.raises(ThreadSupersededError):
        drive.run(old, None, config)
    assert drive.run(new, None, config) == 3
    assert runs == Counter({"t1": 2, "t2": 1, "t3": 2})  # t1 and t2 served from the cache


def test_old_code_is_refused_an_entrypoint_turn_the_new_code_answered_in_part(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """An entrypoint asking twice: the new code's answer to the first question ran ``t2``
    (its result cached on the old code's checkpoint, which the turn still waits on); the
    old code answering the second is refused rather than served it."""
    workflow = asking_twice(runs, is_async=drive.is_async)
    old = neograph_ext.compile(workflow, checkpointer=saver)
    new = neograph_ext.compile(workflow, checkpointer=saver, versions={"t2": "v2"})
    drive.run(old, 1, config)
    assert drive.plan(new, config).kind is PlanKind.CONTINUE  # t2 has not run yet
    asked = drive.run(new, Command(resume=1), config)["__interrupt__"]
    assert [found.value for found in asked] == ["second?"]
    assert drive.plan(old, config).kind is PlanKind.SUPERSEDED  # was "continue"
    with pytest.raises(ThreadSupersededError):
        drive.run(old, Command(resume=2), config)
    assert drive.run(new, Command(resume=2), config) == 2 * (1 + 1 + 1) + 2 - 1
    assert runs == Counter({"t1": 1, "t2": 1, "t3": 1})


class _Nested:
    """``prep -> inner -> publish``, ``inner`` a subgraph ``s1 -> s2 -> s3``; the releases
    differ in ``publish``'s output type (outside the subgraph); a node named in
    ``failing`` crashes while it is named there."""

    def __init__(self, out: type[BaseModel], saver: BaseCheckpointSaver[Any]) -> None:
        self.out = out
        self.runs: Counter[str] = Counter()
        self.failing: set[str] = set()
        fields = {"doc": str, "s1": str, "s2": str, "s3": str}
        inner_state = TypedDict("InnerSteps", fields, total=False)  # type: ignore[misc]
        inner = StateGraph(inner_state)
        for name in ("s1", "s2", "s3"):
            inner.add_node(name, self._step(name))
        wire(inner, "s1", "s2", "s3")
        outer_state = TypedDict(  # type: ignore[misc]
            "OuterSteps", {**fields, "out": out}, total=False
        )
        builder = StateGraph(outer_state)
        builder.add_node("prep", self._step("prep"))
        builder.add_node("inner", inner.compile())
        builder.add_node("publish", lambda s: self._ran("publish", {"out": out(text=s["s3"])}))
        wire(builder, "prep", "inner", "publish")
        self.graph = neograph_ext.compile(builder, checkpointer=saver)

    def _step(self, name: str) -> Any:
        return lambda s: self._ran(name, {name if name != "prep" else "doc": f"{name} done"})

    def _ran(self, name: str, update: dict[str, Any]) -> dict[str, Any]:
        self.runs[name] += 1
        if name in self.failing:
            raise Crash(name)
        return update

    def serving(self) -> Any:
        deployed(self.out)
        return self.graph


def test_old_code_is_refused_a_subgraph_the_new_code_crashed_inside(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    """A step waiting on a subgraph is resumed where it is (a fork would leave the
    subgraph's own checkpoints behind), so it is claimed: the old code is not handed the
    subgraph's checkpoints the new code wrote."""
    old, new = _Nested(SummaryV1, saver), _Nested(SummaryV2, saver)
    old.failing.add("s2")
    with pytest.raises(Crash):
        drive.run(old.serving(), {"doc": "d"}, config)
    new.failing.add("s3")
    assert drive.plan(new.serving(), config).kind is PlanKind.CONTINUE
    with pytest.raises(Crash):
        drive.run(new.serving(), None, config)  # its s2 finished inside the subgraph
    new.failing.clear()
    assert drive.plan(old.serving(), config).kind is PlanKind.SUPERSEDED  # was "continue"
    with pytest.raises(ThreadSupersededError):
        drive.run(old.serving(), None, config)
    assert old.runs == Counter({"prep": 1, "s1": 1, "s2": 1})
    result = drive.run(new.serving(), None, config)
    assert isinstance(result["out"], SummaryV2)
    assert new.runs == Counter({"s2": 1, "s3": 2, "publish": 1})
