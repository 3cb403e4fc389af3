"""The thread lock never starves a PostgreSQL pool: concurrent runs scale as LangGraph's.

Each test times the same concurrent workload twice in one process, with plain
LangGraph and with ``neograph_ext.run``, and compares the two: a lock that held pool
connections stalled here until the pool's timeout, and runs failed.
Not through ``drive``: a sync pool and an async pool are each their own subject.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import StateGraph
from psycopg_pool import AsyncConnectionPool, ConnectionPool

import neograph_ext as ne
from neograph_ext.storage._lock import athread_lock, thread_lock
from tests.graphs.pipelines import wire
from tests.reliability.test_lock import PG_KWARGS

pytestmark = pytest.mark.postgres

RUNS = 8
POOL = 4
NODE_SECONDS = 0.2
POOL_TIMEOUT = 5.0
"""Short, so a starved pool fails the test in seconds instead of stalling it."""


class State(TypedDict, total=False):
    seed: str
    first: str
    second: str


def _first_then_second(node: Callable[[str], Any]) -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(State).add_node("first", node("first")).add_node("second", node("second"))
    return wire(builder, "first", "second")


def _builder(counts: Counter[str], guard: threading.Lock) -> StateGraph[Any, Any, Any, Any]:
    def node(name: str) -> Callable[[State], State]:
        def run(state: State) -> State:
            with guard:
                counts[name] += 1
            time.sleep(NODE_SECONDS)
            return {name: f"{name}({state.get('seed')})"}  # type: ignore[misc]

        return run

    return _first_then_second(node)


def _anode_builder(counts: Counter[str]) -> StateGraph[Any, Any, Any, Any]:
    def node(name: str) -> Callable[[State], Awaitable[State]]:
        async def run(state: State) -> State:
            counts[name] += 1
            await asyncio.sleep(NODE_SECONDS)
            return {name: f"{name}({state.get('seed')})"}  # type: ignore[misc]

        return run

    return _first_then_second(node)


def _concurrently(call: Callable[[str], Any], prefix: str) -> tuple[float, list[BaseException]]:
    """Seconds for RUNS calls on RUNS threads (one LangGraph thread each), and failures."""
    errors: list[BaseException] = []
    start = threading.Barrier(RUNS + 1)

    def one(index: int) -> None:
        start.wait()
        try:
            call(f"{prefix}-{index}")
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=one, args=(i,)) for i in range(RUNS)]
    for worker in workers:
        worker.start()
    began = time.monotonic()
    start.wait()
    for worker in workers:
        worker.join()
    return time.monotonic() - began, errors


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def test_concurrent_runs_on_a_small_pool_scale_as_langgraph(pg_dsn: str, thread: str) -> None:
    with ConnectionPool(
        pg_dsn, min_size=POOL, max_size=POOL, kwargs=PG_KWARGS, timeout=POOL_TIMEOUT
    ) as pool:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        saver.setup()
        counts: Counter[str] = Counter()
        builder = _builder(counts, threading.Lock())
        plain = builder.compile(checkpointer=saver)
        graph = ne.compile(builder, checkpointer=saver)

        def plain_run(name: str) -> Any:
            return plain.invoke({"seed": name}, _config(name), durability="sync")

        def ne_run(name: str) -> Any:
            return ne.run(graph, {"seed": name}, _config(name))

        baseline, plain_errors = _concurrently(plain_run, f"{thread}-plain")
        took, errors = _concurrently(ne_run, f"{thread}-ne")

    assert plain_errors == [] and errors == []
    assert counts == {"first": 2 * RUNS, "second": 2 * RUNS}
    assert took <= 2 * baseline, f"neograph-ext {took:.2f} s, plain LangGraph {baseline:.2f} s"


async def test_concurrent_aruns_on_a_small_async_pool_scale_as_langgraph(
    pg_dsn: str, thread: str
) -> None:
    async with AsyncConnectionPool(
        pg_dsn,
        min_size=POOL,
        max_size=POOL,
        kwargs=PG_KWARGS,
        timeout=POOL_TIMEOUT,
        open=False,
    ) as pool:
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        await saver.setup()
        counts: Counter[str] = Counter()
        builder = _anode_builder(counts)
        plain = builder.compile(checkpointer=saver)
        graph = ne.compile(builder, checkpointer=saver)

        async def concurrently(
            call: Callable[[str], Awaitable[Any]], prefix: str
        ) -> tuple[float, list[BaseException]]:
            began = time.monotonic()
            outcomes = await asyncio.gather(
                *(call(f"{prefix}-{i}") for i in range(RUNS)), return_exceptions=True
            )
            errors = [o for o in outcomes if isinstance(o, BaseException)]
            return time.monotonic() - began, errors

        async def plain_run(name: str) -> Any:
            return await plain.ainvoke({"seed": name}, _config(name), durability="sync")

        async def ne_run(name: str) -> Any:
            return await ne.arun(graph, {"seed": name}, _config(name))

        baseline, plain_errors = await concurrently(plain_run, f"{thread}-plain")
        took, errors = await concurrently(ne_run, f"{thread}-ne")

    assert plain_errors == [] and errors == []
    assert counts == {"first": 2 * RUNS, "second": 2 * RUNS}
    assert took <= 2 * baseline, f"neograph-ext {took:.2f} s, plain LangGraph {baseline:.2f} s"


def _pool_of_one(pg_dsn: str) -> ConnectionPool[Any]:
    return ConnectionPool(
        pg_dsn, min_size=1, max_size=1, kwargs=PG_KWARGS, timeout=POOL_TIMEOUT, open=True
    )


def test_a_pool_of_one_connection_serves_locked_runs(pg_dsn: str, thread: str) -> None:
    with _pool_of_one(pg_dsn) as pool:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        saver.setup()
        counts: Counter[str] = Counter()
        graph = ne.compile(_builder(counts, threading.Lock()), checkpointer=saver)
        with thread_lock(saver, thread):
            _touch(saver, thread)  # the pool's only connection is free for the saver
            with pytest.raises(ne.ThreadBusyError):
                ne.run(graph, {"seed": "x"}, _config(thread), lock=ne.LockPolicy(on_busy="raise"))
        _, errors = _concurrently(lambda name: ne.run(graph, {"seed": name}, _config(name)), thread)
    assert errors == []
    assert counts == {"first": RUNS, "second": RUNS}


async def test_an_async_pool_of_one_connection_serves_locked_runs(pg_dsn: str, thread: str) -> None:
    async with AsyncConnectionPool(
        pg_dsn, min_size=1, max_size=1, kwargs=PG_KWARGS, timeout=POOL_TIMEOUT, open=False
    ) as pool:
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        await saver.setup()
        counts: Counter[str] = Counter()
        graph = ne.compile(_anode_builder(counts), checkpointer=saver)
        async with athread_lock(saver, thread):
            await saver.aget_tuple(_config(thread))
        outcomes = await asyncio.gather(
            *(ne.arun(graph, {"seed": str(i)}, _config(f"{thread}-{i}")) for i in range(RUNS)),
            return_exceptions=True,
        )
    assert [o for o in outcomes if isinstance(o, BaseException)] == []
    assert counts == {"first": RUNS, "second": RUNS}


def test_a_lock_that_gives_up_leaves_no_connection_open(pg_dsn: str, thread: str) -> None:
    with _pool_of_one(pg_dsn) as pool, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        with thread_lock(saver, thread):
            for _ in range(3):
                with pytest.raises(ne.ThreadBusyError), thread_lock(saver, thread, timeout=0.05):
                    pass
            gc.collect()
    # psycopg warns when a connection is dropped while still open.
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def _touch(saver: BaseCheckpointSaver[Any], thread: str) -> None:
    saver.get_tuple(_config(thread))
    list(saver.list(_config(thread), limit=1))
