"""The PostgreSQL advisory-lock statements, and the key of a thread.

Rules:
- Statements, and the driver's calls a lock's flow makes (``query``, ``connect``: the
  sync and async twins differ by ``await`` alone); no connection is held here
  (``_advisory`` does that).
- A statement on a connection outside autocommit ends the transaction it opened, so a
  lock statement never leaves a connection inside one.
- ``psycopg`` is never imported here unless the caller has it imported already.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, LiteralString

from neograph_ext.decision._errors import GraphError

if TYPE_CHECKING:
    from psycopg import AsyncConnection, Connection
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = [
    "TRY_KEY_SQL",
    "TRY_SQL",
    "UNLOCK_SQL",
    "aconnect",
    "advisory_key",
    "aquery",
    "connect",
    "operational_error",
    "params",
    "query",
]

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


TRY_SQL = (
    "SELECT CASE WHEN EXISTS ("
    " SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
    " AND classid = %(hi)s::oid AND objid = %(lo)s::oid AND objsubid = 1"
    ") THEN false ELSE pg_try_advisory_lock(%(key)s) END AS locked"
)
"""Refuses a lock this session already holds: advisory locks are re-entrant per
session, and a saver's single connection is shared by every caller in the process."""


TRY_KEY_SQL = "SELECT pg_try_advisory_lock(%(key)s) AS locked"
"""On a lock session, which knows the keys it holds, so re-entry is refused without asking."""


UNLOCK_SQL = "SELECT pg_advisory_unlock(%(key)s) AS unlocked"


def params(key: int) -> dict[str, int]:
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return {"key": key, "hi": unsigned >> 32, "lo": unsigned & 0xFFFF_FFFF}


def operational_error() -> type[Exception]:
    from psycopg import OperationalError  # the caller has psycopg imported already

    return OperationalError


def query(conn: Connection[Any], sql: LiteralString, params: dict[str, int]) -> bool:
    """One boolean statement; commits the transaction it opened on a non-autocommit
    connection, so the connection is left as it was found (the lock is session-level)."""
    opened = not conn.autocommit and conn.info.transaction_status == _idle()
    with conn.cursor() as cur:
        cur.execute(sql, params)
        row = cur.fetchone()
    if opened:
        conn.commit()
    return bool(_first(row))


async def aquery(conn: AsyncConnection[Any], sql: LiteralString, params: dict[str, int]) -> bool:
    """Async twin of ``query``."""
    opened = not conn.autocommit and conn.info.transaction_status == _idle()
    async with conn.cursor() as cur:
        await cur.execute(sql, params)
        row = await cur.fetchone()
    if opened:
        await conn.commit()
    return bool(_first(row))


def connect(pool: ConnectionPool[Any], thread_id: str) -> Connection[Any]:
    """A connection of a lock session's own, made as the pool makes its connections."""
    conninfo = pool.conninfo() if callable(pool.conninfo) else pool.conninfo
    kwargs = pool.kwargs() if callable(pool.kwargs) else pool.kwargs
    try:
        conn: Connection[Any] = pool.connection_class.connect(conninfo, **_lock_kwargs(kwargs))
    except operational_error() as exc:
        raise GraphError(_connect_failed(thread_id, exc)) from exc
    return conn


async def aconnect(pool: AsyncConnectionPool[Any], thread_id: str) -> AsyncConnection[Any]:
    """Async twin of ``connect``; the pool's conninfo and kwargs may be coroutines."""
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
