"""A per-thread lock, so two processes never resume the same thread at once.

This module picks the lock a saver's store allows and holds it; the locks themselves
are ``_file_lock`` (SQLite) and ``_advisory`` (PostgreSQL).

Rules:
- The lock lives where the checkpoints live, so it spans processes and machines
  that share them, and a holder that dies cannot leave it stuck:
  PostgreSQL: a session-level advisory lock, which the server drops when the
  session ends; SQLite on a file: ``flock`` on a small file beside the database,
  which the OS drops when the holder's process dies. A holder unlocks explicitly:
  a child it forked shares the lock's open file and would otherwise keep it.
- A SQLite database is known by its file's identity (device and inode), not by the
  path it was opened with: the lock folder is ``.neograph-locks`` in the directory
  of the database's real path (symlinks resolved), and each lock file is named by
  the database's identity and the thread. So symlinks, relative paths and hard links
  in one directory all take one lock. Hard links in different directories have no
  common directory, so their processes do not exclude each other: open a database
  through links of one directory.
- Savers without a shared store (in-memory, SQLite ``:memory:``) and unknown savers
  take no lock: a debug line says so.
- The lock is always tried without blocking and polled with short sleeps, so a
  timeout is honoured on every backend, and no saver lock or pool connection is held
  while waiting.
- The lock never takes a connection the saver needs: with a saver's single connection,
  each lock statement borrows it briefly under the saver's own lock; with a pool, the
  locks of all its runs share one connection beside the pool (``_advisory``), so a
  pool of any size (even 1) serves as many concurrent runs as without it.
- Optional drivers are never imported here: a saver whose driver is not imported
  cannot be an instance of it.
- ``thread_lock`` and ``athread_lock`` differ by ``await`` alone.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver

from neograph_ext.decision._errors import GraphError, ThreadBusyError
from neograph_ext.decision._query import Flow, Sql
from neograph_ext.storage._advisory import AdvisoryLock, lock_session
from neograph_ext.storage._file_lock import FileLock, flock_available, lock_path, main_file
from neograph_ext.storage._storage import arun, known_backend, run

__all__ = ["OnBusy", "athread_lock", "thread_lock"]

logger = logging.getLogger("neograph_ext")

OnBusy = Literal["wait", "raise"]
"""What to do when another process holds the thread: wait for it (up to a timeout) or
raise ``ThreadBusyError`` at once."""

_FIRST_POLL = 0.01
_MAX_POLL = 0.2


@contextmanager
def thread_lock(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    *,
    on_busy: OnBusy = "wait",
    timeout: float = 300.0,
) -> Iterator[None]:
    """Hold the thread's lock for the duration of the block.

    Args:
        saver: The graph's checkpointer; it decides which lock is taken (see module).
        thread_id: The thread to lock.
        on_busy: ``"wait"`` polls until the lock is free or ``timeout`` passes;
            ``"raise"`` raises at once when another holder has it.
        timeout: Seconds to wait in ``"wait"`` mode.

    Raises:
        ThreadBusyError: Another holder has the lock (``"raise"``), or still had it
            after ``timeout`` seconds (``"wait"``).
        GraphError: The lock cannot be taken where it lives: its PostgreSQL connection
            cannot be opened, or its SQLite lock folder cannot be used.
        ValueError: ``on_busy`` or ``timeout`` is invalid.
    """
    waits = _waits(thread_id, on_busy, timeout)
    lock = _lock_for(saver, thread_id)
    if lock is None:
        yield
        return
    try:  # a lock that gave up waiting still closes what it opened
        while not lock.try_acquire():
            time.sleep(next(waits))
        yield
    finally:
        lock.release()


@asynccontextmanager
async def athread_lock(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    *,
    on_busy: OnBusy = "wait",
    timeout: float = 300.0,
) -> AsyncIterator[None]:
    """Async twin of ``thread_lock``; waiting never blocks the event loop."""
    waits = _waits(thread_id, on_busy, timeout)
    lock = await _alock_for(saver, thread_id)
    if lock is None:
        yield
        return
    try:
        while not await lock.atry_acquire():
            await asyncio.sleep(next(waits))
        yield
    finally:
        await lock.arelease()


def _waits(thread_id: str, on_busy: str, timeout: float) -> Iterator[float]:
    """Validates the options, then yields how long to sleep before each retry.

    Raises ``ThreadBusyError`` (from ``next``) once no more waiting is allowed.
    """
    if on_busy not in ("wait", "raise"):
        raise ValueError(f"on_busy must be 'wait' or 'raise', not {on_busy!r}")
    if not timeout >= 0:  # also refuses NaN
        raise ValueError(
            f"the lock timeout (lock_timeout) must be a number of seconds >= 0, not {timeout!r}"
        )
    return _delays(thread_id, on_busy, timeout)


def _delays(thread_id: str, on_busy: str, timeout: float) -> Iterator[float]:
    if on_busy == "raise":
        raise ThreadBusyError(
            f"thread {thread_id!r} is being run by another process (on_busy='raise'); "
            "retry later, or wait for it: LockPolicy(on_busy='wait')"
        )
    deadline = time.monotonic() + timeout
    delay = _FIRST_POLL
    while (left := deadline - time.monotonic()) > 0:
        yield min(delay, left)
        delay = min(delay * 2, _MAX_POLL)
    raise ThreadBusyError(
        f"thread {thread_id!r} is still being run by another process after waiting "
        f"{timeout:g} s; retry later, or raise the lock timeout (LockPolicy.timeout)"
    )


def _lock_for(saver: BaseCheckpointSaver[Any], thread_id: str) -> _Lock | None:
    conn = _connection(saver)
    if isinstance(conn, sqlite3.Connection):
        return _file_lock(run(saver, _database(saver, conn)), thread_id, saver)
    if _is(conn, "psycopg_pool", "ConnectionPool"):
        return AdvisoryLock(lock_session(conn, threading.Lock), saver.lock, thread_id)  # type: ignore[attr-defined]
    if _is(conn, "psycopg", "Connection"):
        return AdvisoryLock(conn, saver.lock, thread_id)  # type: ignore[attr-defined]
    if _async_kind(conn):
        logger.warning(
            "thread %r: %s is asynchronous: the sync run() takes no lock; use arun()",
            thread_id,
            type(saver).__name__,
        )
        return None
    _no_lock(saver, thread_id)
    return None


async def _alock_for(saver: BaseCheckpointSaver[Any], thread_id: str) -> _Lock | None:
    conn = _connection(saver)
    if _is(conn, "aiosqlite", "Connection"):
        # Finding the lock file stats the database: file I/O, off the event loop.
        path = await arun(saver, _database(saver, conn))
        return await asyncio.to_thread(_file_lock, path, thread_id, saver)
    if _is(conn, "psycopg_pool", "AsyncConnectionPool"):
        return AdvisoryLock(lock_session(conn, asyncio.Lock), saver.lock, thread_id)  # type: ignore[attr-defined]
    if _is(conn, "psycopg", "AsyncConnection"):
        return AdvisoryLock(conn, saver.lock, thread_id)  # type: ignore[attr-defined]
    # A sync saver never gets here: LangGraph's sync savers refuse arun's aget_tuple.
    _no_lock(saver, thread_id)
    return None


_Lock = FileLock | AdvisoryLock


def _database(saver: BaseCheckpointSaver[Any], conn: object) -> Flow[str]:
    """The main database file of a SQLite saver's connection, asked once per saver and
    connection: a connection's main database never changes."""
    known = _DATABASES.get(saver)
    if known is None or known[0] is not conn:
        rows = yield Sql("PRAGMA database_list")
        known = _DATABASES[saver] = (conn, main_file(rows))
    return known[1]


_DATABASES: weakref.WeakKeyDictionary[BaseCheckpointSaver[Any], tuple[object, str]] = (
    weakref.WeakKeyDictionary()
)
"""Per saver, its connection and that connection's main database file."""


def _no_lock(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    logger.debug(
        "thread %r: %s keeps no shared store; no thread lock is taken",
        thread_id,
        type(saver).__name__,
    )


def _connection(saver: BaseCheckpointSaver[Any]) -> Any:
    """The saver's connection, for the savers this module knows; None otherwise."""
    return getattr(saver, "conn", None) if known_backend(saver) is not None else None


def _is(obj: object, module: str, name: str) -> bool:
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(obj, cls)


def _async_kind(conn: object) -> bool:
    return (
        _is(conn, "aiosqlite", "Connection")
        or _is(conn, "psycopg", "AsyncConnection")
        or _is(conn, "psycopg_pool", "AsyncConnectionPool")
    )


def _file_lock(path: str, thread_id: str, saver: BaseCheckpointSaver[Any]) -> FileLock | None:
    if not path:
        _no_lock(saver, thread_id)
        return None
    if not flock_available():  # pragma: no cover - Windows
        logger.warning("thread %r: no flock on this platform; no thread lock is taken", thread_id)
        return None
    try:
        return FileLock(lock_path(path, thread_id), thread_id)
    except OSError as exc:
        raise GraphError(
            f"thread {thread_id!r}: the SQLite database {path} cannot be examined to find "
            f"its thread lock ({exc.strerror or exc}); check that the file exists and "
            "that this user can reach it"
        ) from exc
