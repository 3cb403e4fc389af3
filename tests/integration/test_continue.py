"""A resume of a head that ``run`` verified is decided from the head alone.

For every head the read side trusts (``_plan.needs_lineage``), deciding from the head
must invoke exactly what deciding from the whole lineage would; every other head is
planned from its lineage, as before.
"""

from __future__ import annotations

import asyncio
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
from neograph_ext.decision._operations import Flow, ListThread, ReadLineage, ReadTuple
from neograph_ext.decision._steps import durable, work_for
from neograph_ext.drivers._drivers import Driver
from neograph_ext.drivers._thread import thread_call
from neograph_ext.flows._flow import planned, read_head
from neograph_ext.flows._keep import KEEP_KEY
from tests.graphs.pipelines import Crash, asking, linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


def _crashed(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    graph = ne.compile(linear(Counter(), {"c": V1}, crash="d"), checkpointer=saver)
    with pytest.raises(Crash):
        ne.run(graph, {"log": []}, config)
    return ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)


def _complete(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    graph = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)
    ne.run(graph, {"log": []}, config)
    return graph


def _paused(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    graph = ne.compile(asking(Counter()), checkpointer=saver)
    assert "__interrupt__" in ne.run(graph, {"log": []}, config)
    return graph


def _breakpoint(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    graph = ne.compile(linear(Counter()), checkpointer=saver, interrupt_before=["c"])
    ne.run(graph, {"log": []}, config)
    return graph


def _plain_call(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    graph = ne.compile(linear(Counter(), crash="d"), checkpointer=saver)
    with pytest.raises(Crash):
        graph.invoke({"log": []}, config)  # a plain call: nothing was verified
    return ne.compile(linear(Counter()), checkpointer=saver)


def _changed(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    _crashed(saver, config)
    return ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)


Writer = Callable[[BaseCheckpointSaver[Any], RunnableConfig], Any]
THREADS: dict[str, tuple[Writer, PlanKind, bool]] = {
    "crashed": (_crashed, PlanKind.CONTINUE, True),
    "paused by interrupt()": (_paused, PlanKind.CONTINUE, True),
    "at a static breakpoint": (_breakpoint, PlanKind.CONTINUE, True),
    "complete": (_complete, PlanKind.UP_TO_DATE, True),
    "written by a plain call": (_plain_call, PlanKind.CONTINUE, False),  # lineage read
    "of other types": (_changed, PlanKind.REWIND, False),
}


@pytest.mark.parametrize("shape", list(THREADS))
def test_the_head_alone_decides_as_the_lineage_would_or_the_lineage_is_read(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, shape: str
) -> None:
    write, kind, head_alone = THREADS[shape]
    call = thread_call(write(saver, config), config)
    listed: list[str] = []
    with Driver(call) as driver:
        head = driver.run(read_head(call))
        quick = driver.run(_listing(planned(call, head), listed))
        full = driver.run(planned(call, head, full=True))
    assert quick.kind is full.kind is kind and (not listed) is head_alone
    invocations = work_for(call, quick, head, None, {}).invocations
    assert invocations == work_for(call, full, head, None, {}).invocations
    if kind is PlanKind.CONTINUE and head_alone:
        assert [step.input for step in invocations] == [None]
        assert durable({}, call.graph) == {"durability": "sync"}


def test_a_keeping_fork_missing_writes_is_planned_from_its_parent(config: RunnableConfig) -> None:
    saver = InMemorySaver()
    call = thread_call(_crashed(saver, config), config)
    head = saver.get_tuple(config)
    assert head is not None and head.parent_config is not None
    fork = {**head.metadata, "source": "fork", KEEP_KEY: len(head.pending_writes or ()) + 1}
    flow = read_head(call)
    assert next(flow) == ReadTuple(config)
    # The flow asks for the fork's parent instead of trusting the fork.
    assert flow.send(CheckpointTuple(**{**head._asdict(), "metadata": fork})) == ReadTuple(
        head.parent_config
    )


def _listing(flow: Flow[Any], listed: list[str]) -> Flow[Any]:
    """``flow``, recording each listing of the thread it asks for."""
    sent = None
    while True:
        try:
            op = flow.send(sent)
        except StopIteration as done:
            return done.value
        if isinstance(op, ReadLineage | ListThread):
            listed.append(type(op).__name__)
        sent = yield op


def _unplanned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every listing of a thread the execution flow asks for (not the harness's
    plans, which go through the plan flow)."""
    listed: list[str] = []
    real = run_module.resumed

    def counting(*args: Any, **kwargs: Any) -> Flow[Any]:
        return _listing(real(*args, **kwargs), listed)

    monkeypatch.setattr(run_module, "resumed", counting)
    return listed


async def test_every_driver_continues_a_verified_head_without_planning(
    monkeypatch: pytest.MonkeyPatch, runs: Counter[str]
) -> None:
    saver = InMemorySaver()
    planned = _unplanned(monkeypatch)
    threads = [{"configurable": {"thread_id": str(uuid.uuid4())}} for _ in range(4)]
    for config in threads:
        await asyncio.to_thread(_crashed, saver, config)
    planned.clear()
    graph = ne.compile(linear(runs, {"c": V1}), checkpointer=saver)
    done = {"log": list("abcd")}
    # The sync drivers in a thread, as an async caller must call them: off the event loop.
    assert await asyncio.to_thread(ne.run, graph, None, threads[0]) == done
    assert await ne.arun(graph, None, threads[1]) == done
    streamed = await asyncio.to_thread(
        lambda: list(ne.stream(graph, None, threads[2], stream_mode="values"))
    )
    assert streamed[-1] == done
    assert [c async for c in ne.astream(graph, None, threads[3], stream_mode="values")][-1] == done
    assert runs == Counter({"d": 4}) and planned == []
    for config in threads:  # and each wrote a head verified again: up to date
        assert (await ne.aplan(graph, config)).kind is ne.PlanKind.UP_TO_DATE


def test_a_declined_head_is_planned(
    monkeypatch: pytest.MonkeyPatch, config: RunnableConfig, runs: Counter[str]
) -> None:
    saver = InMemorySaver()
    _changed(saver, config)
    planned = _unplanned(monkeypatch)
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    assert ne.run(graph, None, config) == {"log": list("abcd")}
    # Read once: light where a reader knows the saver, else (in memory) listed.
    assert runs == Counter("cd") and planned == ["ReadLineage", "ListThread"]


def test_a_declined_resume_plans_from_the_head_it_read(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = _complete(saver, config)
    reads: list[RunnableConfig] = []
    real = saver.get_tuple

    def counting(cfg: RunnableConfig) -> Any:
        reads.append(cfg)
        return real(cfg)

    monkeypatch.setattr(saver, "get_tuple", counting)
    # The function itself, not the plan == run harness, whose own plan reads too.
    assert run_module.run(graph, None, config) == {"log": list("abcd")}
    assert len(reads) == 1
