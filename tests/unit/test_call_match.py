"""What ``_call_match`` relies on in LangGraph's runner, checked on real entrypoints:
each test fails loudly when an upgrade of LangGraph changes it."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task

import neograph_ext as ne
from neograph_ext.decision._call_digest import call_digest
from neograph_ext.decision._langgraph_calls import CALL_CHANNEL, RETURN
from tests.graphs.pipelines import Crash


def _call_shape() -> tuple[bool, bool]:
    call = (var_child_runnable_config.get() or {}).get("configurable", {}).get("__pregel_call")
    keywords = getattr(call, "keywords", {})
    return isinstance(call, functools.partial), "schedule_task" in keywords


def test_an_entrypoints_calls_go_through_a_runner_partial_with_schedule_task() -> None:
    seen: list[tuple[bool, bool]] = []

    @entrypoint(checkpointer=InMemorySaver())
    def flow(x: int) -> int:
        seen.append(_call_shape())
        return x

    @entrypoint(checkpointer=InMemorySaver())
    async def aflow(x: int) -> int:
        seen.append(_call_shape())
        return x

    flow.invoke(1, {"configurable": {"thread_id": "t"}})
    asyncio.run(aflow.ainvoke(1, {"configurable": {"thread_id": "t"}}))
    assert seen == [(True, True), (True, True)]


def test_a_finished_call_records_its_digest_with_its_result_and_a_failed_one_nothing(
    caplog: pytest.LogCaptureFixture, runs: Counter[str]
) -> None:

    @task
    def summ(topic: str) -> str:
        runs[topic] += 1
        if topic == "beta":
            raise Crash(topic)
        return f"summary of {topic}"

    @entrypoint()
    def flow(x: str) -> list[str]:
        return [summ("alpha").result(), summ("beta").result()]

    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t"}}
    with caplog.at_level(logging.WARNING, logger="langgraph"), pytest.raises(Crash):
        ne.compile(flow, checkpointer=saver).invoke("x", config, durability="sync")
    assert not [r for r in caplog.records if "unknown channel" in r.getMessage()]
    writes: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in next(iter(saver.list(config))).pending_writes or ():
        writes.setdefault(task_id, []).append((channel, value))
    recorded = [
        w for w in writes.values() if (CALL_CHANNEL, call_digest("summ", ("alpha",), {})) in w
    ]
    assert len(recorded) == 1 and (RETURN, "summary of alpha") in recorded[0]
    assert sum(1 for w in writes.values() for ch, _ in w if ch == CALL_CHANNEL) == 1
    # The undecorated entrypoint stays LangGraph's own: it records nothing.
    plain = InMemorySaver()
    flow.checkpointer = plain
    with pytest.raises(Crash):
        flow.invoke("x", config, durability="sync")
    assert CALL_CHANNEL not in {ch for _, ch, _ in next(iter(plain.list(config))).pending_writes}


def _baz(update: str, value: str) -> str:
    return value + f"|{update}"


@pytest.mark.parametrize("is_async", [False, True])
def test_a_recorded_call_keeps_its_task_name_and_leaves_the_callers_config_alone(
    is_async: bool,
) -> None:
    """LangGraph names an unnamed ``partial`` task after its function; the recording twin
    keeps that name. The check rides in a context variable, never in the run's config,
    which LangGraph shows in snapshots and checkpoint events."""
    baz = task(functools.partial(_baz, "baz"))

    @entrypoint(checkpointer=InMemorySaver())
    def flow(value: str) -> str:
        return baz(value).result()

    graph = ne.compile(flow)
    config: Any = {"configurable": {"thread_id": "named"}}
    if is_async:

        async def drive() -> list[dict[str, Any]]:
            return [chunk async for chunk in ne.astream(graph, "v", config, stream_mode="updates")]

        updates = asyncio.run(drive())
    else:
        updates = list(ne.stream(graph, "v", config, stream_mode="updates"))
    assert updates == [{"_baz": "v|baz"}, {"flow": "v|baz"}]
    snapshot = graph.get_state(config)
    assert all(not key.startswith("__neograph") for key in snapshot.config["configurable"])
