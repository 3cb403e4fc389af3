"""A resume of a head that ``run`` verified continues it without planning.

``_continued`` decides from the head alone; for every head it accepts, it must invoke
exactly what planning would (``_read`` then ``_prepare``), and it must decline every
other head, which is then planned as before.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver

import neograph_ext as ne
import neograph_ext._run as run_module
from neograph_ext import PlanKind
from neograph_ext._invocations import _continued, _Invocation, _prepare, durable
from neograph_ext._keep import KEEP_KEY
from neograph_ext._read import _call, _head, _read
from tests.drive import SYNC_ONLY, Drive
from tests.graphs.pipelines import Crash, asking, linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


def _crashed(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    graph = ne.compile(linear(Counter(), {"c": V1}, crash="d"), checkpointer=saver)
    with pytest.raises(Crash):
        drive.run(graph, {"log": []}, config)
    return ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)


def _complete(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    graph = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)
    drive.run(graph, {"log": []}, config)
    return graph


def _paused(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    graph = ne.compile(asking(Counter()), checkpointer=saver)
    assert "__interrupt__" in drive.run(graph, {"log": []}, config)
    return graph


def _breakpoint(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    graph = ne.compile(linear(Counter()), checkpointer=saver, interrupt_before=["c"])
    drive.run(graph, {"log": []}, config)
    return graph


def _plain_call(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    graph = ne.compile(linear(Counter(), crash="d"), checkpointer=saver)
    with pytest.raises(Crash):
        drive.invoke(graph, {"log": []}, config)  # a plain call: nothing was verified
    return ne.compile(linear(Counter()), checkpointer=saver)


def _changed(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    _crashed(drive, saver, config)
    return ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)


Writer = Callable[[Drive, BaseCheckpointSaver[Any], RunnableConfig], Any]
THREADS: dict[str, tuple[Writer, PlanKind, bool]] = {
    "crashed": (_crashed, PlanKind.CONTINUE, True),
    "paused by interrupt()": (_paused, PlanKind.CONTINUE, True),
    "at a static breakpoint": (_breakpoint, PlanKind.CONTINUE, True),
    "complete": (_complete, PlanKind.UP_TO_DATE, False),
    "written by a plain call": (_plain_call, PlanKind.CONTINUE, False),  # lineage read
    "of other types": (_changed, PlanKind.REWIND, False),
}


# Sync only: the subject is the read path's own functions (their async twins only await
# the same reads), called here directly.
@SYNC_ONLY
@pytest.mark.parametrize("shape", list(THREADS))
def test_a_head_is_continued_exactly_as_planning_would_or_declined(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, shape: str
) -> None:
    write, kind, continues = THREADS[shape]
    call = _call(write(drive, saver, config), config)
    mark = _continued(call, _head(call))
    plan, head = _read(call)
    assert plan.kind is kind and (mark is not None) is continues
    if mark is not None:
        prepared = _prepare(call, plan, head, None, True, {}, False)
        assert prepared.invocations == (_Invocation(None, call.config, mark),)
        assert prepared.kwargs == durable({}, call.graph) == {"durability": "sync"}


@SYNC_ONLY  # as above: _continued called directly
def test_a_keeping_fork_missing_writes_is_declined(drive: Drive, config: RunnableConfig) -> None:
    saver = InMemorySaver()
    call = _call(_crashed(drive, saver, config), config)
    head = _head(call)
    assert head is not None and _continued(call, head) is not None
    fork = {**head.metadata, "source": "fork", KEEP_KEY: len(head.pending_writes or ()) + 1}
    assert _continued(call, CheckpointTuple(**{**head._asdict(), "metadata": fork})) is None


def _unplanned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every plan the drivers make, from a head they read or reading it."""
    planned: list[str] = []
    for name in ("_read", "_read_from"):
        real = getattr(run_module, name)

        def counting(call: Any, *args: Any, real: Any = real, **kwargs: Any) -> Any:
            planned.append(call.thread_id)
            return real(call, *args, **kwargs)

        monkeypatch.setattr(run_module, name, counting)
    for name in ("_aread", "_aread_from"):
        areal = getattr(run_module, name)

        async def acounting(call: Any, *args: Any, areal: Any = areal, **kwargs: Any) -> Any:
            planned.append(call.thread_id)
            return await areal(call, *args, **kwargs)

        monkeypatch.setattr(run_module, name, acounting)
    return planned


def test_every_driver_continues_a_verified_head_without_planning(
    drive: Drive,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saver = InMemorySaver()
    planned = _unplanned(monkeypatch)
    threads = [{"configurable": {"thread_id": str(uuid.uuid4())}} for _ in range(2)]
    for config in threads:
        _crashed(drive, saver, config)
    planned.clear()
    runs: Counter[str] = Counter()
    graph = ne.compile(linear(runs, {"c": V1}), checkpointer=saver)
    done = {"log": list("abcd")}
    assert drive.run(graph, None, threads[0]) == done
    assert list(drive.stream(graph, None, threads[1], stream_mode="values"))[-1] == done
    assert runs == Counter({"d": 2}) and planned == []
    for config in threads:  # and each wrote a head verified again: up to date
        assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_a_declined_head_is_planned(
    drive: Drive, monkeypatch: pytest.MonkeyPatch, config: RunnableConfig
) -> None:
    saver = InMemorySaver()
    runs: Counter[str] = Counter()
    _changed(drive, saver, config)
    planned = _unplanned(monkeypatch)
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    assert drive.run(graph, None, config) == {"log": list("abcd")}
    assert runs == Counter("cd") and planned == [config["configurable"]["thread_id"]]


def test_a_declined_resume_plans_from_the_head_it_read(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    graph = _complete(drive, saver, config)
    reads: list[RunnableConfig] = []
    real = saver.aget_tuple if drive.is_async else saver.get_tuple

    def counting(cfg: RunnableConfig) -> Any:
        reads.append(cfg)
        return real(cfg)

    monkeypatch.setattr(saver, "aget_tuple" if drive.is_async else "get_tuple", counting)
    assert drive.run(graph, None, config) == {"log": list("abcd")}
    assert len(reads) == 1
