"""The PostgreSQL thread lock: a session-level advisory lock keyed by the thread.

Rules:
- The server drops a session's advisory locks when the session ends, so a holder
  that dies cannot leave a thread locked.
- On the saver's single connection, each statement borrows it briefly under the
  saver's own lock. With a pool, the locks of all the pool's runs live on one
  connection beside the pool (a ``LockSession``, made on the first locked run and
  closed with the pool's last reference or the process): one session holds advisory
  locks of many keys, so the pool is never starved and the server sees one extra
  connection per pool, not one per run. It is held per pool, weakly, because a pool
  is what says how to connect and lives as long as its savers; a sync and an async
  pool on one database have a session each (a sync connection would block an event
  loop, an async one belongs to one loop), and locks on the two exclude each other
  on the server like those of two processes.
- A lock this session already holds is refused: advisory locks are re-entrant per
  session, and a session is shared by every caller in the process.
- A dropped connection takes its locks with it on the server: the next lock
  statement reconnects, and each run that held a lock on the dropped connection logs
  a warning at release (another worker may have run its thread meanwhile).
- The statements and the thread's key are ``_advisory_sql``'s; this module holds the
  connections they run on.
- ``psycopg`` is never imported here unless the caller has it imported already.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from neograph_ext._advisory_sql import (
    TRY_KEY_SQL,
    TRY_SQL,
    advisory_key,
    aquery,
    aunlock,
    operational_error,
    params,
    query,
    unlock,
)
from neograph_ext._errors import GraphError

if TYPE_CHECKING:
    from psycopg import AsyncConnection, Connection
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = [
    "AdvisoryLock",
    "AsyncAdvisoryLock",
    "AsyncLockSession",
    "LockSession",
    "alock_session",
    "lock_session",
]

logger = logging.getLogger("neograph_ext")


class AdvisoryLock:
    """A session-level advisory lock, taken without ever holding a pool connection.

    On the saver's single connection, each statement runs under the saver's own lock,
    so it never interleaves with the saver's queries; nothing is held between
    statements, so the run itself is never blocked by the lock. With a pool, the lock
    lives on the pool's ``LockSession``.
    """

    def __init__(
        self,
        source: Connection[Any] | LockSession,
        guard: threading.Lock,
        thread_id: str,
    ) -> None:
        self._source = source
        self._guard = guard
        self.thread_id = thread_id
        self.key = advisory_key(thread_id)
        self.generation: int | None = None
        """None while not held; when held, the number of the ``LockSession`` connection it
        was taken on (0 on the saver's single connection)."""

    def try_acquire(self) -> bool:
        if isinstance(self._source, LockSession):
            return self._source.acquire(self)
        with self._guard:
            held = query(self._source, TRY_SQL, params(self.key))
        self.generation = 0 if held else None
        return held

    def release(self) -> None:
        if isinstance(self._source, LockSession):
            return self._source.release(self)
        if self.generation is not None:
            self.generation = None
            with self._guard:
                unlock(self._source, self.key)


class AsyncAdvisoryLock:
    """Async twin of ``AdvisoryLock``."""

    def __init__(
        self,
        source: AsyncConnection[Any] | AsyncLockSession,
        guard: asyncio.Lock,
        thread_id: str,
    ) -> None:
        self._source = source
        self._guard = guard
        self.thread_id = thread_id
        self.key = advisory_key(thread_id)
        self.generation: int | None = None

    async def atry_acquire(self) -> bool:
        if isinstance(self._source, AsyncLockSession):
            return await self._source.acquire(self)
        async with self._guard:
            held = await aquery(self._source, TRY_SQL, params(self.key))
        self.generation = 0 if held else None
        return held

    async def arelease(self) -> None:
        if isinstance(self._source, AsyncLockSession):
            return await self._source.release(self)
        if self.generation is not None:
            self.generation = None
            async with self._guard:
                await aunlock(self._source, self.key)


class LockSession:
    """The connection on which a process takes the advisory locks of one pool's runs.

    Every statement runs under the session's guard, one short statement at a time, so
    threads take turns on the connection; the keys it holds are known here, so a key
    held already is refused without a round trip. Each connection made has a number,
    the generation, which a lock remembers: a lock taken on a connection that has
    since dropped is gone on the server, and its release says so instead of unlocking.
    """

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        # Weakly: the session lives as long as the pool and must not keep it alive.
        self._pool = weakref.ref(pool)
        self._guard = threading.Lock()
        self._conn: Connection[Any] | None = None
        self._held: set[int] = set()
        self._generation = 0

    def acquire(self, lock: AdvisoryLock) -> bool:
        with self._guard:
            if lock.key in self._held:
                return False
            try:
                held = query(self._connection(lock), TRY_KEY_SQL, {"key": lock.key})
            except operational_error():
                self._drop()  # a connection that dropped while idle: try a fresh one
                held = query(self._connection(lock), TRY_KEY_SQL, {"key": lock.key})
            if held:
                self._held.add(lock.key)
                lock.generation = self._generation
            return held

    def release(self, lock: AdvisoryLock) -> None:
        with self._guard:
            generation, lock.generation = lock.generation, None
            if generation is None:
                return
            if generation != self._generation or self._conn is None or self._conn.closed:
                return _lost(lock.thread_id)
            self._held.discard(lock.key)
            try:
                unlock(self._conn, lock.key)
            except operational_error():
                self._drop()
                _lost(lock.thread_id)

    def finish(self, pid: int) -> None:
        """Ends the connection without waiting: its pool is gone, or the process exits."""
        if self._conn is not None:
            _finish(self._conn, pid)

    def _connection(self, lock: AdvisoryLock) -> Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._drop()
            self._conn = _connect(_alive(self._pool, lock.thread_id), lock.thread_id)
            self._generation += 1
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._held.clear()
        if conn is not None:
            _finish(conn, os.getpid())


class AsyncLockSession:
    """Async twin of ``LockSession``.

    Each statement runs in a task of its own, shielded from the caller's cancellation:
    a run cancelled mid-statement must not leave the shared connection in the middle of
    a query, and the lock it took meanwhile is recorded for its release to undo.
    """

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = weakref.ref(pool)
        self._guard = asyncio.Lock()
        self._conn: AsyncConnection[Any] | None = None
        self._held: set[int] = set()
        self._generation = 0

    async def acquire(self, lock: AsyncAdvisoryLock) -> bool:
        return await asyncio.shield(self._acquire(lock))

    async def release(self, lock: AsyncAdvisoryLock) -> None:
        await asyncio.shield(self._release(lock))

    async def _acquire(self, lock: AsyncAdvisoryLock) -> bool:
        async with self._guard:
            if lock.key in self._held:
                return False
            try:
                held = await aquery(await self._connection(lock), TRY_KEY_SQL, {"key": lock.key})
            except operational_error():
                await self._drop()
                held = await aquery(await self._connection(lock), TRY_KEY_SQL, {"key": lock.key})
            if held:
                self._held.add(lock.key)
                lock.generation = self._generation
            return held

    async def _release(self, lock: AsyncAdvisoryLock) -> None:
        async with self._guard:
            generation, lock.generation = lock.generation, None
            if generation is None:
                return
            if generation != self._generation or self._conn is None or self._conn.closed:
                return _lost(lock.thread_id)
            self._held.discard(lock.key)
            try:
                await aunlock(self._conn, lock.key)
            except operational_error():
                await self._drop()
                _lost(lock.thread_id)

    def finish(self, pid: int) -> None:
        """Ends the connection without waiting: its pool is gone, or the process exits."""
        if self._conn is not None:
            _finish(self._conn, pid)

    async def _connection(self, lock: AsyncAdvisoryLock) -> AsyncConnection[Any]:
        if self._conn is None or self._conn.closed:
            await self._drop()
            self._conn = await _aconnect(_alive(self._pool, lock.thread_id), lock.thread_id)
            self._generation += 1
        return self._conn

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._held.clear()
        if conn is not None:
            _finish(conn, os.getpid())


def lock_session(pool: ConnectionPool[Any]) -> LockSession:
    """The pool's lock session, made on first use (it connects on its first lock)."""
    session = _SESSIONS.get(pool)
    if not isinstance(session, LockSession):
        session = _remember(pool, LockSession(pool))
    return session  # type: ignore[return-value]


def alock_session(pool: AsyncConnectionPool[Any]) -> AsyncLockSession:
    """Async twin of ``lock_session``; no I/O, so no ``await``."""
    session = _SESSIONS.get(pool)
    if not isinstance(session, AsyncLockSession):
        session = _remember(pool, AsyncLockSession(pool))
    return session  # type: ignore[return-value]


def _remember(pool: object, made: LockSession | AsyncLockSession) -> LockSession | AsyncLockSession:
    session = _SESSIONS.setdefault(pool, made)  # one winner among racing threads
    if session is made:
        # The pool going (or the process exiting) ends the session's connection.
        weakref.finalize(pool, made.finish, os.getpid())
    return session


_SESSIONS: weakref.WeakKeyDictionary[object, LockSession | AsyncLockSession] = (
    weakref.WeakKeyDictionary()
)
"""Per pool, its lock session. Weak: a pool's session goes with the pool."""


def _finish(conn: Connection[Any] | AsyncConnection[Any], pid: int) -> None:
    """Ends a session's connection without waiting: the server drops its locks.

    Not in a forked child, which shares the parent's socket: ending the session there
    would end the parent's, and with it the parent's locks.
    """
    if os.getpid() == pid and not conn.closed:
        conn.pgconn.finish()


def _alive(pool: weakref.ref[Any], thread_id: str) -> Any:
    alive = pool()
    if alive is None:  # pragma: no cover - a saver, and so a run, keeps its pool alive
        raise GraphError(f"thread {thread_id!r}: the saver's connection pool is gone")
    return alive


def _lost(thread_id: str) -> None:
    logger.warning(
        "thread %r: the connection holding its lock dropped during the run, and the "
        "server released the lock with it; another worker may have run the thread "
        "meanwhile. Check what ends sessions (network, idle timeouts, pg_terminate_backend)",
        thread_id,
    )


def _connect(pool: ConnectionPool[Any], thread_id: str) -> Connection[Any]:
    """A connection of the lock's own, made as the pool makes its connections."""
    conninfo = pool.conninfo() if callable(pool.conninfo) else pool.conninfo
    kwargs = pool.kwargs() if callable(pool.kwargs) else pool.kwargs
    try:
        conn: Connection[Any] = pool.connection_class.connect(conninfo, **_lock_kwargs(kwargs))
    except operational_error() as exc:
        raise GraphError(_connect_failed(thread_id, exc)) from exc
    return conn


async def _aconnect(pool: AsyncConnectionPool[Any], thread_id: str) -> AsyncConnection[Any]:
    """Async twin of ``_connect``; the pool's conninfo and kwargs may be coroutines."""
    conninfo = pool.conninfo() if callable(pool.conninfo) else pool.conninfo
    if inspect.isawaitable(conninfo):
        conninfo = await conninfo
    kwargs = pool.kwargs() if callable(pool.kwargs) else pool.kwargs
    if inspect.isawaitable(kwargs):
        kwargs = await kwargs
    try:
        aconn: AsyncConnection[Any] = await pool.connection_class.connect(
            conninfo, **_lock_kwargs(kwargs)
        )
    except operational_error() as exc:
        raise GraphError(_connect_failed(thread_id, exc)) from exc
    return aconn


def _lock_kwargs(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    # Autocommit: no statement of the lock leaves a transaction open on the server.
    return {**(kwargs or {}), "autocommit": True}


def _connect_failed(thread_id: str, exc: Exception) -> str:
    return (
        f"thread {thread_id!r}: the thread lock could not open its connection to "
        f"PostgreSQL ({exc}); the thread locks of a pool's runs hold one connection "
        "beside the pool: check that the server accepts it (max_connections)"
    )
