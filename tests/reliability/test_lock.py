"""The per-thread lock, in one process: every backend, both modes, both twins.

Cross-process behaviour (a killed holder, racing processes) is in ``test_races``.
Not through ``drive``: each test's subject is one twin's lock (a thread lock, or an
asyncio one that must never block the loop), so each names the twin it calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

import neograph_ext as ne
from neograph_ext.storage._advisory_sql import advisory_key
from neograph_ext.storage._file_lock import lock_file
from neograph_ext.storage._lock import athread_lock, thread_lock
from tests.reliability import worker
from tests.reliability.worker import INPUT

Pair = tuple[BaseCheckpointSaver[Any], BaseCheckpointSaver[Any]]
"""Two savers on one store: as two processes would hold them (or one saver, twice)."""

PG_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


@contextlib.contextmanager
def sync_pair(kind: str, request: pytest.FixtureRequest) -> Iterator[Pair]:
    if kind.startswith("sqlite"):
        path = request.getfixturevalue("sqlite_path")
        with (
            SqliteSaver.from_conn_string(str(path)) as a,
            SqliteSaver.from_conn_string(str(path)) as b,
        ):
            yield (a, a) if kind == "sqlite-shared" else (a, b)
        return
    dsn = request.getfixturevalue("pg_dsn")
    if kind == "pg-pool":
        with ConnectionPool(dsn, min_size=1, max_size=4, kwargs=PG_KWARGS) as pool:
            saver = PostgresSaver(pool)  # type: ignore[arg-type]
            saver.setup()
            yield saver, saver
        return
    with (
        PostgresSaver.from_conn_string(dsn) as a,
        PostgresSaver.from_conn_string(dsn, pipeline=True) as b,
    ):
        a.setup()
        yield {"pg": (a, b), "pg-shared": (a, a), "pg-pipeline": (b, b)}[kind]


@contextlib.asynccontextmanager
async def async_pair(kind: str, request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    if kind.startswith("sqlite"):
        path = str(request.getfixturevalue("sqlite_path"))
        async with (
            AsyncSqliteSaver.from_conn_string(path) as a,
            AsyncSqliteSaver.from_conn_string(path) as b,
        ):
            await a.setup()
            yield (a, a) if kind == "sqlite-shared" else (a, b)
        return
    dsn = request.getfixturevalue("pg_dsn")
    if kind == "pg-pool":
        async with AsyncConnectionPool(
            dsn, min_size=1, max_size=4, kwargs=PG_KWARGS, open=False
        ) as pool:
            saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
            await saver.setup()
            yield saver, saver
        return
    async with (
        AsyncPostgresSaver.from_conn_string(dsn) as a,
        AsyncPostgresSaver.from_conn_string(dsn, pipeline=True) as b,
    ):
        await a.setup()
        yield {"pg": (a, b), "pg-shared": (a, a), "pg-pipeline": (b, b)}[kind]


KINDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("sqlite-shared", id="sqlite-one-saver"),
    pytest.param("pg", id="pg", marks=pytest.mark.postgres),
    pytest.param("pg-shared", id="pg-one-connection", marks=pytest.mark.postgres),
    pytest.param("pg-pipeline", id="pg-pipeline", marks=pytest.mark.postgres),
    pytest.param("pg-pool", id="pg-pool", marks=pytest.mark.postgres),
]


def touch(saver: BaseCheckpointSaver[Any], thread: str) -> None:
    """Use the saver while the lock is held: the lock must not block its connection."""
    saver.get_tuple({"configurable": {"thread_id": thread}})
    list(saver.list({"configurable": {"thread_id": thread}}, limit=1))


@pytest.mark.parametrize("kind", KINDS)
def test_thread_lock_excludes_others_and_releases(
    kind: str, request: pytest.FixtureRequest, thread: str
) -> None:
    with sync_pair(kind, request) as (a, b):
        with thread_lock(a, thread):
            touch(a, thread)
            with (
                pytest.raises(ne.ThreadBusyError, match="on_busy='raise'"),
                thread_lock(b, thread, on_busy="raise"),
            ):
                pass
            started = time.monotonic()
            with pytest.raises(ne.ThreadBusyError) as waited, thread_lock(b, thread, timeout=0.3):
                pass
            assert time.monotonic() - started >= 0.29
            assert thread in str(waited.value) and "0.3 s" in str(waited.value)
            with thread_lock(b, thread + "-other", on_busy="raise"):
                touch(b, thread)
        with thread_lock(b, thread, on_busy="raise"):
            touch(b, thread)


@pytest.mark.parametrize("kind", KINDS)
async def test_athread_lock_excludes_others_and_releases(
    kind: str, request: pytest.FixtureRequest, thread: str
) -> None:
    async with async_pair(kind, request) as (a, b):
        async with athread_lock(a, thread):
            await a.aget_tuple({"configurable": {"thread_id": thread}})
            with pytest.raises(ne.ThreadBusyError, match="on_busy='raise'"):
                async with athread_lock(b, thread, on_busy="raise"):
                    pass
            with pytest.raises(ne.ThreadBusyError, match=r"0\.2 s"):
                async with athread_lock(b, thread, timeout=0.2):
                    pass
            async with athread_lock(b, thread + "-other", on_busy="raise"):
                pass
        async with athread_lock(b, thread, on_busy="raise"):
            await b.aget_tuple({"configurable": {"thread_id": thread}})


@pytest.mark.parametrize("kind", KINDS)
def test_waiting_gets_the_lock_once_the_holder_lets_go(
    kind: str, request: pytest.FixtureRequest, thread: str
) -> None:
    with sync_pair(kind, request) as (a, b):
        held, order = threading.Event(), []

        def holder() -> None:
            with thread_lock(a, thread):
                held.set()
                time.sleep(0.3)
                order.append("released")

        t = threading.Thread(target=holder)
        t.start()
        held.wait(10)
        with thread_lock(b, thread, timeout=10):
            order.append("acquired")
        t.join()

    assert order == ["released", "acquired"]


@pytest.mark.parametrize("kind", KINDS)
async def test_waiting_never_blocks_the_event_loop(
    kind: str, request: pytest.FixtureRequest, thread: str
) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    async with async_pair(kind, request) as (a, b), athread_lock(a, thread):
        task = asyncio.create_task(ticker())
        with pytest.raises(ne.ThreadBusyError):
            async with athread_lock(b, thread, timeout=0.3):
                pass
        task.cancel()
    assert ticks >= 10, "the event loop was blocked while waiting"


@pytest.mark.parametrize("kind", KINDS)
def test_an_exception_inside_releases_the_lock(
    kind: str, request: pytest.FixtureRequest, thread: str
) -> None:
    with sync_pair(kind, request) as (a, b):
        with pytest.raises(KeyError), thread_lock(a, thread):
            raise KeyError("boom")
        with thread_lock(b, thread, on_busy="raise"):
            pass


@pytest.mark.postgres
def test_a_non_autocommit_connection_is_left_idle(pg_dsn: str, thread: str) -> None:
    with ConnectionPool(pg_dsn, min_size=1, max_size=2, kwargs={"autocommit": False}) as pool:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        with thread_lock(saver, thread):
            with pool.connection() as conn:
                row = conn.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                    " AND objsubid = 1 AND granted"
                ).fetchone()
            assert row is not None and row[0] >= 1
        with thread_lock(saver, thread, on_busy="raise"):
            pass


NO_LOCK: list[tuple[str, Callable[[], Any]]] = [
    ("memory", InMemorySaver),
    ("sqlite-memory", lambda: SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))),
]


@pytest.mark.parametrize(("name", "make"), NO_LOCK, ids=[n for n, _ in NO_LOCK])
def test_savers_without_a_shared_store_take_no_lock(
    name: str, make: Callable[[], Any], caplog: pytest.LogCaptureFixture, thread: str
) -> None:
    saver = make()
    caplog.set_level(logging.DEBUG, logger="neograph_ext")
    with thread_lock(saver, thread), thread_lock(saver, thread, on_busy="raise"):
        pass
    assert "no thread lock is taken" in caplog.text


async def test_an_in_memory_saver_takes_no_lock_in_async_either(thread: str) -> None:
    saver = InMemorySaver()
    async with athread_lock(saver, thread), athread_lock(saver, thread, on_busy="raise"):
        pass


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"on_busy": "block"}, "on_busy"),
        ({"timeout": -1.0}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], message: str, thread: str) -> None:
    with pytest.raises(ValueError, match=message), thread_lock(InMemorySaver(), thread, **options):
        pass


def test_lock_names_are_pinned_and_never_paths(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    db.touch()
    identity = db.stat()
    assert advisory_key("t1") == advisory_key("t1") != advisory_key("t2")
    assert -(2**63) <= advisory_key("t1") < 2**63
    assert advisory_key("thread-1") == -2_426_547_899_141_809_105
    prefix = f"{identity.st_dev:x}-{identity.st_ino:x}-"
    for evil in ("../../etc/passwd", "/abs/path", "a/b", "\x00", "\ud800", "x" * 10_000):
        path = lock_file(db, evil)
        assert path.parent == tmp_path / ".neograph-locks"
        assert path.name.startswith(prefix)
        assert len(path.name) == len(prefix + "0" * 32 + ".lock")


def test_a_sqlite_lock_file_lives_beside_the_database(sqlite_path: Path, thread: str) -> None:
    with SqliteSaver.from_conn_string(str(sqlite_path)) as saver, thread_lock(saver, thread):
        assert lock_file(sqlite_path, thread).exists()


# --- run(), arun(), stream(), astream() hold the lock (needs the wiring in _run.py) ---


def _graph(saver: BaseCheckpointSaver[Any], log: Path) -> Any:
    code = worker.parse_code(None)
    return worker.compiled(saver, worker.build(log, code), code)


def test_run_and_stream_refuse_a_busy_thread(sqlite_path: Path, log: Path, thread: str) -> None:
    config = {"configurable": {"thread_id": thread}}
    with (
        SqliteSaver.from_conn_string(str(sqlite_path)) as a,
        SqliteSaver.from_conn_string(str(sqlite_path)) as b,
    ):
        graph = _graph(b, log)
        with thread_lock(a, thread):
            with pytest.raises(ne.ThreadBusyError):
                ne.run(graph, dict(INPUT), config, lock=ne.LockPolicy(on_busy="raise"))
            with pytest.raises(ne.ThreadBusyError, match=r"0\.1 s"):
                ne.run(graph, dict(INPUT), config, lock=ne.LockPolicy(timeout=0.1))
            with pytest.raises(ne.ThreadBusyError):
                list(ne.stream(graph, dict(INPUT), config, lock=ne.LockPolicy(on_busy="raise")))
        assert not log.exists(), "a node ran while the thread was busy"
        assert ne.run(graph, dict(INPUT), config, lock=ne.LockPolicy(on_busy="raise"))["f"]


@contextlib.asynccontextmanager
async def _alocker_and_graph(sqlite_path: Path, log: Path) -> AsyncIterator[tuple[Any, Any]]:
    """Two async connections to one SQLite file: a saver to take the thread's lock on,
    and the graph on the other, as two processes would be."""
    async with (
        AsyncSqliteSaver.from_conn_string(str(sqlite_path)) as a,
        AsyncSqliteSaver.from_conn_string(str(sqlite_path)) as b,
    ):
        yield a, _graph(b, log)


async def test_arun_and_astream_refuse_a_busy_thread(
    sqlite_path: Path, log: Path, thread: str
) -> None:
    config = {"configurable": {"thread_id": thread}}
    async with _alocker_and_graph(sqlite_path, log) as (a, graph):
        async with athread_lock(a, thread):
            with pytest.raises(ne.ThreadBusyError):
                await ne.arun(graph, dict(INPUT), config, lock=ne.LockPolicy(on_busy="raise"))
            with pytest.raises(ne.ThreadBusyError, match=r"0\.1 s"):
                await ne.arun(graph, dict(INPUT), config, lock=ne.LockPolicy(timeout=0.1))
            with pytest.raises(ne.ThreadBusyError):
                async for _ in ne.astream(
                    graph, dict(INPUT), config, lock=ne.LockPolicy(on_busy="raise")
                ):
                    pass
        assert not await asyncio.to_thread(log.exists), "a node ran while the thread was busy"
        assert (await ne.arun(graph, dict(INPUT), config, lock=ne.LockPolicy(on_busy="raise")))["f"]


def test_a_call_takes_the_lock_only_for_work(sqlite_path: Path, log: Path, thread: str) -> None:
    config = {"configurable": {"thread_id": thread}}
    with (
        SqliteSaver.from_conn_string(str(sqlite_path)) as a,
        SqliteSaver.from_conn_string(str(sqlite_path)) as b,
    ):
        graph = _graph(b, log)
        done = ne.run(graph, dict(INPUT), config)
        with thread_lock(a, thread):
            # A complete thread has nothing to do: its stored result, no lock taken.
            assert ne.run(graph, dict(INPUT), config, lock=ne.LockPolicy(on_busy="raise")) == done
            assert ne.run(graph, None, config, lock=ne.LockPolicy(on_busy="raise")) == done
            assert list(ne.stream(graph, None, config, lock=ne.LockPolicy(on_busy="raise"))) == []
            with pytest.raises(ne.ThreadBusyError):
                ne.run(graph, {**INPUT, "seed": "s1"}, config, lock=ne.LockPolicy(on_busy="raise"))
        assert ne.run(graph, None, config, lock=ne.LockPolicy(on_busy="raise")) == done


async def test_a_call_takes_the_lock_only_for_work_async(
    sqlite_path: Path, log: Path, thread: str
) -> None:
    config = {"configurable": {"thread_id": thread}}
    async with _alocker_and_graph(sqlite_path, log) as (a, graph):
        done = await ne.arun(graph, dict(INPUT), config)
        async with athread_lock(a, thread):
            # A complete thread has nothing to do: its stored result, no lock taken.
            assert (
                await ne.arun(graph, dict(INPUT), config, lock=ne.LockPolicy(on_busy="raise"))
                == done
            )
            assert await ne.arun(graph, None, config, lock=ne.LockPolicy(on_busy="raise")) == done
            assert [
                c
                async for c in ne.astream(graph, None, config, lock=ne.LockPolicy(on_busy="raise"))
            ] == []
            with pytest.raises(ne.ThreadBusyError):
                await ne.arun(
                    graph, {**INPUT, "seed": "s1"}, config, lock=ne.LockPolicy(on_busy="raise")
                )
        assert await ne.arun(graph, None, config, lock=ne.LockPolicy(on_busy="raise")) == done
