"""A pool's thread locks share one server connection, and survive losing it.

Connections are counted on the server, in ``pg_stat_activity``, by the application
name every connection of the test's pool carries (the lock's connection is made with
the pool's settings, so it carries it too).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable
from typing import Any, TypedDict

import psycopg
import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from psycopg_pool import AsyncConnectionPool, ConnectionPool

import neograph_ext as ne
from neograph_ext.storage._advisory_sql import advisory_key
from neograph_ext.storage._lock import athread_lock, thread_lock
from tests.reliability.test_lock import PG_KWARGS

pytestmark = pytest.mark.postgres

POOL = 4
RUNS = 16
NODE_SECONDS = 0.1


class State(TypedDict, total=False):
    seed: str
    done: int


class Server:
    """A connection of the test's own, outside the pool, to look at the server."""

    def __init__(self, dsn: str) -> None:
        self.app = f"ne-lock-{uuid.uuid4().hex[:12]}"
        self._conn = psycopg.connect(dsn, autocommit=True)
        self._guard = threading.Lock()

    def kwargs(self) -> dict[str, Any]:
        """The pool's settings: the test's application name on every connection."""
        return {**PG_KWARGS, "application_name": self.app}

    def connections(self) -> int:
        return int(
            self._one("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", self.app)
        )

    def lock_holders(self) -> set[int]:
        """The backends of the test's application that hold advisory locks now."""
        with self._guard:
            rows = self._conn.execute(
                "SELECT DISTINCT l.pid FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                " WHERE l.locktype = 'advisory' AND a.application_name = %s",
                (self.app,),
            ).fetchall()
        return {row[0] for row in rows}

    def holder_of(self, thread_id: str) -> int:
        """The backend holding the thread's advisory lock."""
        unsigned = advisory_key(thread_id) & 0xFFFF_FFFF_FFFF_FFFF
        pid = self._one(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory'"
            " AND classid = %s::oid AND objid = %s::oid AND objsubid = 1",
            unsigned >> 32,
            unsigned & 0xFFFF_FFFF,
        )
        return int(pid)

    def terminate(self, pid: int) -> None:
        assert self._one("SELECT pg_terminate_backend(%s, 5000)", pid) is True

    def close(self) -> None:
        self._conn.close()

    def _one(self, sql: Any, *args: object) -> Any:
        with self._guard:
            row = self._conn.execute(sql, args).fetchone()
        assert row is not None
        return row[0]


@pytest.fixture
def server(pg_dsn: str) -> Any:
    watcher = Server(pg_dsn)
    yield watcher
    watcher.close()


def _builder(node: Any) -> StateGraph[Any, Any, Any, Any]:
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(State)
    builder.add_node("work", node)
    builder.add_edge(START, "work")
    builder.add_edge("work", END)
    return builder


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def _pool(pg_dsn: str, server: Server) -> ConnectionPool[Any]:
    return ConnectionPool(
        pg_dsn, min_size=POOL, max_size=POOL, kwargs=server.kwargs(), timeout=10, open=False
    )


def _apool(pg_dsn: str, server: Server) -> AsyncConnectionPool[Any]:
    return AsyncConnectionPool(
        pg_dsn, min_size=POOL, max_size=POOL, kwargs=server.kwargs(), timeout=10, open=False
    )


def test_concurrent_locked_runs_share_one_lock_connection(
    pg_dsn: str, thread: str, server: Server
) -> None:
    counts: Counter[str] = Counter()
    holders: list[set[int]] = []
    peaks: list[int] = []
    guard = threading.Lock()

    def work(state: State) -> State:
        time.sleep(NODE_SECONDS)  # every run holds its lock at once here
        with guard:
            counts["work"] += 1
            holders.append(server.lock_holders())
            peaks.append(server.connections())
        return {"done": 1}

    with _pool(pg_dsn, server) as pool:
        pool.wait()
        saver = PostgresSaver(pool)
        saver.setup()
        graph = ne.compile(_builder(work), checkpointer=saver)
        before = server.connections()
        for batch in range(2):
            runners = [
                threading.Thread(
                    target=ne.run, args=(graph, {"seed": "s"}, _config(f"{thread}-{batch}-{i}"))
                )
                for i in range(RUNS)
            ]
            for runner in runners:
                runner.start()
            for runner in runners:
                runner.join()
            after = server.connections()
            assert after == before + 1, f"batch {batch}: {before} connections, then {after}"

    assert counts == {"work": 2 * RUNS}
    assert len(set().union(*holders)) == 1, holders  # every lock on one backend
    assert max(peaks) == before + 1, peaks  # while all the runs hold their locks


async def test_concurrent_aruns_share_one_lock_connection(
    pg_dsn: str, thread: str, server: Server
) -> None:
    counts: Counter[str] = Counter()
    holders: list[set[int]] = []
    peaks: list[int] = []

    async def work(state: State) -> State:
        await asyncio.sleep(NODE_SECONDS)
        counts["work"] += 1
        holders.append(await asyncio.to_thread(server.lock_holders))
        peaks.append(await asyncio.to_thread(server.connections))
        return {"done": 1}

    async with _apool(pg_dsn, server) as pool:
        await pool.wait()
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        graph = ne.compile(_builder(work), checkpointer=saver)
        before = server.connections()
        for batch in range(2):
            runs: list[Awaitable[Any]] = [
                ne.arun(graph, {"seed": "s"}, _config(f"{thread}-{batch}-{i}")) for i in range(RUNS)
            ]
            await asyncio.gather(*runs)
            after = server.connections()
            assert after == before + 1, f"batch {batch}: {before} connections, then {after}"

    assert counts == {"work": 2 * RUNS}
    assert len(set().union(*holders)) == 1, holders
    assert max(peaks) == before + 1, peaks


def test_a_held_lock_excludes_another_run_in_the_process(
    pg_dsn: str, thread: str, server: Server
) -> None:
    with _pool(pg_dsn, server) as pool:
        saver = PostgresSaver(pool)
        with thread_lock(saver, thread):
            with (
                pytest.raises(ne.ThreadBusyError),
                thread_lock(PostgresSaver(pool), thread, on_busy="raise"),
            ):
                pass
            with thread_lock(saver, f"{thread}-other", on_busy="raise"):
                assert len(server.lock_holders()) == 1
        with thread_lock(saver, thread, on_busy="raise"):
            pass


def test_a_dropped_lock_connection_is_reported_and_replaced(
    pg_dsn: str, thread: str, server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    counts: Counter[str] = Counter()

    def work(state: State) -> State:
        counts["work"] += 1
        if state.get("seed") == "drop":
            server.terminate(server.holder_of(thread))
            other = PostgresSaver.from_conn_string(pg_dsn)
            with other as rival, thread_lock(rival, thread, on_busy="raise"):
                pass  # the server released the lock with the session
        return {"done": counts["work"]}

    caplog.set_level(logging.WARNING, logger="neograph_ext")
    with _pool(pg_dsn, server) as pool:
        saver = PostgresSaver(pool)
        saver.setup()
        graph = ne.compile(_builder(work), checkpointer=saver)
        assert ne.run(graph, {"seed": "drop"}, _config(thread)) == {"seed": "drop", "done": 1}
        lost = [r.getMessage() for r in caplog.records if "dropped during the run" in r.message]
        assert len(lost) == 1 and repr(thread) in lost[0]
        # The next run reconnects, and its lock excludes other sessions again.
        assert ne.run(graph, {"seed": "next"}, _config(f"{thread}-2")) == {
            "seed": "next",
            "done": 2,
        }
        with (
            thread_lock(saver, thread),
            PostgresSaver.from_conn_string(pg_dsn) as rival,
            pytest.raises(ne.ThreadBusyError),
            thread_lock(rival, thread, on_busy="raise"),
        ):
            pass
    assert counts == {"work": 2}
    assert len([r for r in caplog.records if "dropped during the run" in r.message]) == 1


async def test_a_dropped_async_lock_connection_is_reported_and_replaced(
    pg_dsn: str, thread: str, server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="neograph_ext")
    async with _apool(pg_dsn, server) as pool:
        saver = AsyncPostgresSaver(pool)
        async with athread_lock(saver, thread):
            await asyncio.to_thread(server.terminate, server.holder_of(thread))
            async with (
                AsyncPostgresSaver.from_conn_string(pg_dsn) as rival,
                athread_lock(rival, thread, on_busy="raise"),
            ):
                pass
        lost = [r.getMessage() for r in caplog.records if "dropped during the run" in r.message]
        assert len(lost) == 1 and repr(thread) in lost[0]
        async with (
            athread_lock(saver, thread),
            AsyncPostgresSaver.from_conn_string(pg_dsn) as rival,
        ):
            with pytest.raises(ne.ThreadBusyError):
                async with athread_lock(rival, thread, on_busy="raise"):
                    pass


def test_a_lock_connection_dropped_while_idle_is_replaced_silently(
    pg_dsn: str, thread: str, server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="neograph_ext")
    with _pool(pg_dsn, server) as pool:
        saver = PostgresSaver(pool)
        with thread_lock(saver, thread):
            first = server.holder_of(thread)
        server.terminate(first)
        with thread_lock(saver, thread):
            second = server.holder_of(thread)
    assert first != second
    assert [r for r in caplog.records if r.name == "neograph_ext"] == []


def test_a_forked_child_that_exits_leaves_the_parents_lock_connection(
    pg_dsn: str, thread: str, server: Server
) -> None:
    with _pool(pg_dsn, server) as pool:
        saver = PostgresSaver(pool)
        with thread_lock(saver, thread):
            holder = server.holder_of(thread)
            pid = os.fork()
            if pid == 0:  # exits as a normal exit would: its exit handlers run
                try:
                    atexit._run_exitfuncs()
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
            # Ending the session in the child would have ended the parent's, and its lock.
            assert server.holder_of(thread) == holder
            with (
                PostgresSaver.from_conn_string(pg_dsn) as rival,
                pytest.raises(ne.ThreadBusyError),
                thread_lock(rival, thread, on_busy="raise"),
            ):
                pass
