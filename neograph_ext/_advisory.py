"""The PostgreSQL thread lock: a session-level advisory lock keyed by the thread.

Rules:
- The server drops a session's advisory locks when the session ends, so a holder
  that dies cannot leave a thread locked.
- On the saver's single connection, each statement borrows it briefly under the
  saver's own lock; with a pool, the lock opens one connection of its own beside the
  pool, for as long as it waits or holds, so the pool is never starved.
- A lock this session already holds is refused: advisory locks are re-entrant per
  session, and a single connection is shared by every caller in the process.
- ``psycopg`` is never imported here unless the caller has it imported already.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, LiteralString

from neograph_ext._errors import GraphError

if TYPE_CHECKING:
    import asyncio
    import threading

    from psycopg import AsyncConnection, Connection
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = ["AdvisoryLock", "AsyncAdvisoryLock", "advisory_key"]

logger = logging.getLogger("neograph_ext")

_NAMESPACE = b"neograph-ext/thread-lock\x00"
"""Salts the advisory key so it does not collide with other users' advisory locks."""


def advisory_key(thread_id: str) -> int:
    """The PostgreSQL advisory lock key of a thread: a signed 64-bit integer.

    Args:
        thread_id: The LangGraph thread id.

    Returns:
        The first 8 bytes of SHA-256 over a namespace and the thread id, as ``bigint``.
    """
    data = hashlib.sha256(_NAMESPACE + thread_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(data[:8], "big", signed=True)


_TRY_SQL = (
    "SELECT CASE WHEN EXISTS ("
    " SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
    " AND classid = %(hi)s::oid AND objid = %(lo)s::oid AND objsubid = 1"
    ") THEN false ELSE pg_try_advisory_lock(%(key)s) END AS locked"
)
"""Refuses a lock this session already holds: advisory locks are re-entrant per
session, and a saver's single connection is shared by every caller in the process."""

_UNLOCK_SQL = "SELECT pg_advisory_unlock(%(key)s) AS unlocked"


def _params(key: int) -> dict[str, int]:
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return {"key": key, "hi": unsigned >> 32, "lo": unsigned & 0xFFFF_FFFF}


class AdvisoryLock:
    """A session-level advisory lock, taken without ever holding a pool connection.

    On the saver's single connection, each statement runs under the saver's own lock,
    so it never interleaves with the saver's queries; nothing is held between
    statements, so the run itself is never blocked by the lock. With a pool, the lock
    opens one connection of its own, beside the pool, for the lock's life: a lock held
    on a pooled connection starved the saver as soon as ``max_size`` runs were locked.
    Closing that connection ends its session, which drops the lock if unlocking did not.
    """

    def __init__(
        self,
        source: Connection[Any] | ConnectionPool[Any],
        guard: threading.Lock,
        thread_id: str,
        pooled: bool,
    ) -> None:
        self._source = source
        self._pooled = pooled
        self._guard = guard
        self._thread_id = thread_id
        self._params = _params(advisory_key(thread_id))
        self._own: Connection[Any] | None = None
        self._held = False

    def try_acquire(self) -> bool:
        if not self._pooled:
            conn: Connection[Any] = self._source  # type: ignore[assignment]
            with self._guard:
                self._held = _query(conn, _TRY_SQL, self._params)
            return self._held
        if self._own is None:
            self._own = _connect(self._source, self._thread_id)  # type: ignore[arg-type]
        self._held = _query(self._own, _TRY_SQL, self._params)
        return self._held

    def release(self) -> None:
        own, self._own = self._own, None
        held, self._held = self._held, False
        if own is not None:
            # Unlocking first makes the lock free when release returns; the server
            # ends a closed session a moment later, which is too late for the next run.
            try:
                if held:
                    _unlock(own, self._params)
            finally:
                own.close()
        elif held:
            conn: Connection[Any] = self._source  # type: ignore[assignment]
            with self._guard:
                _unlock(conn, self._params)


class AsyncAdvisoryLock:
    """Async twin of ``AdvisoryLock``."""

    def __init__(
        self,
        source: AsyncConnection[Any] | AsyncConnectionPool[Any],
        guard: asyncio.Lock,
        thread_id: str,
        pooled: bool,
    ) -> None:
        self._source = source
        self._pooled = pooled
        self._guard = guard
        self._thread_id = thread_id
        self._params = _params(advisory_key(thread_id))
        self._own: AsyncConnection[Any] | None = None
        self._held = False

    async def atry_acquire(self) -> bool:
        if not self._pooled:
            conn: AsyncConnection[Any] = self._source  # type: ignore[assignment]
            async with self._guard:
                self._held = await _aquery(conn, _TRY_SQL, self._params)
            return self._held
        if self._own is None:
            self._own = await _aconnect(self._source, self._thread_id)  # type: ignore[arg-type]
        self._held = await _aquery(self._own, _TRY_SQL, self._params)
        return self._held

    async def arelease(self) -> None:
        own, self._own = self._own, None
        held, self._held = self._held, False
        if own is not None:
            try:
                if held:
                    await _aunlock(own, self._params)
            finally:
                await own.close()
        elif held:
            conn: AsyncConnection[Any] = self._source  # type: ignore[assignment]
            async with self._guard:
                await _aunlock(conn, self._params)


def _connect(pool: ConnectionPool[Any], thread_id: str) -> Connection[Any]:
    """A connection of the lock's own, made as the pool makes its connections."""
    conninfo = pool.conninfo() if callable(pool.conninfo) else pool.conninfo
    kwargs = pool.kwargs() if callable(pool.kwargs) else pool.kwargs
    try:
        conn: Connection[Any] = pool.connection_class.connect(conninfo, **_lock_kwargs(kwargs))
    except _operational_error() as exc:
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
    except _operational_error() as exc:
        raise GraphError(_connect_failed(thread_id, exc)) from exc
    return aconn


def _lock_kwargs(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    # Autocommit: no statement of the lock leaves a transaction open on the server.
    return {**(kwargs or {}), "autocommit": True}


def _connect_failed(thread_id: str, exc: Exception) -> str:
    return (
        f"thread {thread_id!r}: the thread lock could not open its connection to "
        f"PostgreSQL ({exc}); each locked run holds one connection beside the saver's "
        "pool: check that the server accepts them (max_connections)"
    )


def _operational_error() -> type[Exception]:
    from psycopg import OperationalError  # the caller has psycopg imported already

    return OperationalError


def _query(conn: Connection[Any], sql: LiteralString, params: dict[str, int]) -> bool:
    """One boolean statement; commits the transaction it opened on a non-autocommit
    connection, so the connection is left as it was found (the lock is session-level)."""
    opened = not conn.autocommit and conn.info.transaction_status == _idle()
    with conn.cursor() as cur:
        cur.execute(sql, params)
        row = cur.fetchone()
    if opened:
        conn.commit()
    return bool(_first(row))


async def _aquery(conn: AsyncConnection[Any], sql: LiteralString, params: dict[str, int]) -> bool:
    """Async twin of ``_query``."""
    opened = not conn.autocommit and conn.info.transaction_status == _idle()
    async with conn.cursor() as cur:
        await cur.execute(sql, params)
        row = await cur.fetchone()
    if opened:
        await conn.commit()
    return bool(_first(row))


def _unlock(conn: Connection[Any], params: dict[str, int]) -> None:
    if conn.closed:
        return  # the session, and every lock it held, is gone already
    if not _query(conn, _UNLOCK_SQL, params):
        logger.warning("thread lock %s was not held at release", params["key"])


async def _aunlock(conn: AsyncConnection[Any], params: dict[str, int]) -> None:
    if conn.closed:
        return  # the session, and every lock it held, is gone already
    if not await _aquery(conn, _UNLOCK_SQL, params):
        logger.warning("thread lock %s was not held at release", params["key"])


def _first(row: object) -> object:
    """The first column of a row, whatever the connection's row factory."""
    if isinstance(row, dict):
        return next(iter(row.values()), None)
    if isinstance(row, tuple | list):
        return row[0] if row else None
    return row


def _idle() -> object:
    from psycopg.pq import TransactionStatus  # the caller has psycopg imported already

    return TransactionStatus.IDLE
