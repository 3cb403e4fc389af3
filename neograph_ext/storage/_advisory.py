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
- The statements, the thread's key and the calls of the driver are ``_advisory_sql``'s;
  this module holds the connections they run on. Taking and releasing a lock is one
  flow (``_query``) each, run sync or async by ``_storage.run`` / ``arun``: a sync
  pool's lock session has a ``threading.Lock`` for guard, an async pool's an
  ``asyncio.Lock``, and both are taken by one call of the flow's (``acquire``).
- ``psycopg`` is never imported here unless the caller has it imported already.
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from neograph_ext.decision._errors import GraphError
from neograph_ext.decision._query import Call, Flow
from neograph_ext.storage import _advisory_sql
from neograph_ext.storage._advisory_sql import (
    TRY_KEY_SQL,
    TRY_SQL,
    UNLOCK_SQL,
    advisory_key,
    operational_error,
    params,
)
from neograph_ext.storage._storage import arun, run

__all__ = ["AdvisoryLock", "LockSession", "lock_session"]

logger = logging.getLogger("neograph_ext")


class AdvisoryLock:
    """A session-level advisory lock, taken without ever holding a pool connection.

    On the saver's single connection, each statement runs under the saver's own lock
    (``guard``), so it never interleaves with the saver's queries; nothing is held
    between statements, so the run itself is never blocked by the lock. With a pool, the
    lock lives on the pool's ``LockSession``. Sync (``try_acquire``, ``release``) or
    async (``atry_acquire``, ``arelease``) as its connection is.
    """

    def __init__(self, source: Any, guard: Any, thread_id: str) -> None:
        self._source = source
        self._guard = guard
        self.thread_id = thread_id
        self.key = advisory_key(thread_id)
        self.generation: int | None = None
        """None while not held; when held, the number of the ``LockSession`` connection it
        was taken on (0 on the saver's single connection)."""

    def try_acquire(self) -> bool:
        return run(None, self._acquiring())

    def release(self) -> None:
        run(None, self._releasing())

    def atry_acquire(self) -> Awaitable[bool]:
        return self._shielded(arun(None, self._acquiring()))

    def arelease(self) -> Awaitable[None]:
        return self._shielded(arun(None, self._releasing()))

    def _shielded(self, running: Awaitable[Any]) -> Awaitable[Any]:
        # A session's statement runs in a task of its own, shielded from the caller's
        # cancellation: a run cancelled mid-statement must not leave the shared
        # connection in the middle of a query, and the lock it took meanwhile is
        # recorded for its release to undo.
        return asyncio.shield(running) if isinstance(self._source, LockSession) else running

    def _acquiring(self) -> Flow[bool]:
        if isinstance(self._source, LockSession):
            return (yield from self._source.acquiring(self))
        yield from _entered(self._guard)
        try:
            held = bool((yield _statement(self._source, TRY_SQL, params(self.key))))
        finally:
            self._guard.release()
        self.generation = 0 if held else None
        return held

    def _releasing(self) -> Flow[None]:
        if isinstance(self._source, LockSession):
            return (yield from self._source.releasing(self))
        if self.generation is not None:
            self.generation = None
            yield from _entered(self._guard)
            try:
                yield from _unlocking(self._source, self.key)
            finally:
                self._guard.release()


class LockSession:
    """The connection on which a process takes the advisory locks of one pool's runs.

    Every statement runs under the session's guard, one short statement at a time, so
    threads (or tasks) take turns on the connection; the keys it holds are known here,
    so a key held already is refused without a round trip. Each connection made has a
    number, the generation, which a lock remembers: a lock taken on a connection that
    has since dropped is gone on the server, and its release says so instead of
    unlocking.
    """

    def __init__(self, pool: Any, guard: Any) -> None:
        # Weakly: the session lives as long as the pool and must not keep it alive.
        self._pool = weakref.ref(pool)
        self._guard = guard
        self._conn: Any = None
        self._held: set[int] = set()
        self._generation = 0

    def acquiring(self, lock: AdvisoryLock) -> Flow[bool]:
        """The flow taking ``lock`` on this session's connection."""
        yield from _entered(self._guard)
        try:
            if lock.key in self._held:
                return False
            try:
                conn = yield from self._connection(lock)
                held = yield _statement(conn, TRY_KEY_SQL, {"key": lock.key})
            except operational_error():
                self._drop()  # a connection that dropped while idle: try a fresh one
                conn = yield from self._connection(lock)
                held = yield _statement(conn, TRY_KEY_SQL, {"key": lock.key})
            if held:
                self._held.add(lock.key)
                lock.generation = self._generation
            return bool(held)
        finally:
            self._guard.release()

    def releasing(self, lock: AdvisoryLock) -> Flow[None]:
        """The flow releasing ``lock``, or saying it was lost with its connection."""
        yield from _entered(self._guard)
        try:
            generation, lock.generation = lock.generation, None
            if generation is None:
                return
            if generation != self._generation or self._conn is None or self._conn.closed:
                return _lost(lock.thread_id)
            self._held.discard(lock.key)
            try:
                yield from _unlocking(self._conn, lock.key)
            except operational_error():
                self._drop()
                _lost(lock.thread_id)
        finally:
            self._guard.release()

    def finish(self, pid: int) -> None:
        """Ends the connection without waiting: its pool is gone, or the process exits."""
        if self._conn is not None:
            _finish(self._conn, pid)

    def _connection(self, lock: AdvisoryLock) -> Flow[Any]:
        if self._conn is None or self._conn.closed:
            self._drop()
            pool = _alive(self._pool, lock.thread_id)
            self._conn = yield Call("connect", (pool, lock.thread_id), on=_advisory_sql)
            self._generation += 1
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._held.clear()
        if conn is not None:
            _finish(conn, os.getpid())


def lock_session(pool: Any, guard: Callable[[], Any]) -> LockSession:
    """The pool's lock session, made on first use with a new ``guard()`` (it connects
    on its first lock)."""
    session = _SESSIONS.get(pool)
    if session is None:
        made = LockSession(pool, guard())
        session = _SESSIONS.setdefault(pool, made)  # one winner among racing threads
        if session is made:
            # The pool going (or the process exiting) ends the session's connection.
            weakref.finalize(pool, made.finish, os.getpid())
    return session


_SESSIONS: weakref.WeakKeyDictionary[object, LockSession] = weakref.WeakKeyDictionary()
"""Per pool, its lock session. Weak: a pool's session goes with the pool."""


def _entered(guard: Any) -> Flow[None]:
    """Take ``guard``: a ``threading.Lock`` on a sync run, an ``asyncio.Lock`` awaited on
    an async one (``acquire`` either way)."""
    yield Call("acquire", on=guard, amethod="acquire")


def _statement(conn: Any, sql: Any, values: dict[str, int]) -> Call:
    return Call("query", (conn, sql, values), on=_advisory_sql)


def _unlocking(conn: Any, key: int) -> Flow[None]:
    if conn.closed:
        return  # the session, and every lock it held, is gone already
    if not (yield _statement(conn, UNLOCK_SQL, {"key": key})):
        logger.warning("thread lock %s was not held at release", key)


def _finish(conn: Any, pid: int) -> None:
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
