"""Running pruning's SQL on a saver's own connection: the sync and async twins.

Rules:
- The statements are ``_prune_sql``'s; this module holds the connections they run on:
  the saver's single connection under the saver's own lock, or one of its pool's.
- Each ``cut`` is one transaction: a kill leaves a thread whole or pruned.
- Twins differ by ``await`` alone; drivers are imported only when the saver is theirs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from neograph_ext._errors import GraphError
from neograph_ext._prune_sql import (
    SIZE_SQL,
    Cut,
    Saver,
    Sizes,
    Statement,
    backend,
    descriptions_sql,
    dropping,
    pages,
    references_sql,
    sized,
    threads_sql,
)
from neograph_ext._stamp_store import THREAD_PREFIX

__all__ = [
    "acut",
    "adescriptions",
    "areferences",
    "asizes",
    "athreads",
    "avacuum",
    "cut",
    "descriptions",
    "references",
    "sizes",
    "threads",
    "vacuum",
    "vacuumable",
]


def threads(saver: Saver) -> list[str]:
    """Every thread with a root-namespace checkpoint, description threads too."""
    return [str(row[0]) for row in _fetch(saver, threads_sql(backend(saver)), ())]


async def athreads(saver: Saver) -> list[str]:
    """Async twin of ``threads``."""
    return [str(row[0]) for row in await _afetch(saver, threads_sql(backend(saver)), ())]


def references(saver: Saver) -> list[tuple[str, str]]:
    """Distinct ``(thread, stamp reference)`` of every stamped checkpoint."""
    rows = _fetch(saver, references_sql(backend(saver)), ())
    return [(str(t), ref) for t, ref in rows if isinstance(ref, str)]


async def areferences(saver: Saver) -> list[tuple[str, str]]:
    """Async twin of ``references``."""
    rows = await _afetch(saver, references_sql(backend(saver)), ())
    return [(str(t), ref) for t, ref in rows if isinstance(ref, str)]


def descriptions(saver: Saver) -> dict[str, Sizes]:
    """Every description thread, with what it holds."""
    rows = _fetch(saver, descriptions_sql(backend(saver)), (len(THREAD_PREFIX), THREAD_PREFIX))
    return {str(t): Sizes(checkpoints=int(n), bytes=int(b)) for t, n, b in rows}


async def adescriptions(saver: Saver) -> dict[str, Sizes]:
    """Async twin of ``descriptions``."""
    args = (len(THREAD_PREFIX), THREAD_PREFIX)
    rows = await _afetch(saver, descriptions_sql(backend(saver)), args)
    return {str(t): Sizes(checkpoints=int(n), bytes=int(b)) for t, n, b in rows}


def sizes(saver: Saver, found: Cut) -> Sizes:
    """What the rows of ``found`` hold."""
    total = Sizes()
    for table, (sql, args) in found.measuring():
        ((count, size),) = _fetch(saver, sql, args)
        total += sized(table, int(count), int(size))
    return total


async def asizes(saver: Saver, found: Cut) -> Sizes:
    """Async twin of ``sizes``."""
    total = Sizes()
    for table, (sql, args) in found.measuring():
        ((count, size),) = await _afetch(saver, sql, args)
        total += sized(table, int(count), int(size))
    return total


def cut(saver: Saver, found: Cut | None, dropped: Sequence[str] = ()) -> None:
    """Delete the rows of ``found`` and the description threads ``dropped``, in one
    transaction (a description still named by a checkpoint stays)."""
    kind = backend(saver)
    statements = found.deleting() if found is not None else []
    for thread_id in dropped:
        statements += dropping(kind, thread_id)
    _transact(saver, statements)


async def acut(saver: Saver, found: Cut | None, dropped: Sequence[str] = ()) -> None:
    """Async twin of ``cut``."""
    kind = backend(saver)
    statements = found.deleting() if found is not None else []
    for thread_id in dropped:
        statements += dropping(kind, thread_id)
    await _atransact(saver, statements)


def vacuumable(saver: Saver) -> None:
    """Check that ``VACUUM`` can run on ``saver``'s database.

    Raises:
        GraphError: The saver is not one of SQLite's.
    """
    if backend(saver) != "sqlite":
        raise GraphError(
            "vacuum is for SQLite only; PostgreSQL reclaims space itself (autovacuum, "
            "or VACUUM FULL run by an administrator)"
        )


def vacuum(saver: Saver) -> tuple[int, int]:
    """``VACUUM`` a SQLite database; its size in bytes before and after.

    Raises:
        GraphError: The saver is not one of SQLite's.
    """
    vacuumable(saver)
    with _connection(saver) as conn:
        before = pages(conn.execute(SIZE_SQL).fetchall())
        conn.commit()  # VACUUM cannot run inside a transaction
        conn.execute("VACUUM")
        return before, pages(conn.execute(SIZE_SQL).fetchall())


async def avacuum(saver: Saver) -> tuple[int, int]:
    """Async twin of ``vacuum``."""
    vacuumable(saver)
    async with _aconnection(saver) as conn:
        before = pages(await (await conn.execute(SIZE_SQL)).fetchall())
        await conn.commit()
        await conn.execute("VACUUM")
        return before, pages(await (await conn.execute(SIZE_SQL)).fetchall())


def _fetch(saver: Saver, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
    with _connection(saver) as conn:
        if isinstance(conn, sqlite3.Connection):
            rows: list[tuple[Any, ...]] = conn.execute(sql, tuple(args)).fetchall()
            return rows
        from psycopg.rows import tuple_row

        with conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(sql, args)
            found: list[tuple[Any, ...]] = cur.fetchall()
            return found


async def _afetch(saver: Saver, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
    async with _aconnection(saver) as conn:
        if backend(saver) == "sqlite":
            async with conn.execute(sql, tuple(args)) as cur:
                return [tuple(row) for row in await cur.fetchall()]
        from psycopg.rows import tuple_row

        async with conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(sql, args)
            return await cur.fetchall()  # type: ignore[no-any-return]


def _transact(saver: Saver, statements: Sequence[Statement]) -> None:
    if not statements:
        return
    with _connection(saver) as conn:
        if isinstance(conn, sqlite3.Connection):
            conn.commit()  # the saver's own work is committed: ours is a transaction alone
            try:
                conn.execute("BEGIN IMMEDIATE")
                for sql, args in statements:
                    conn.execute(sql, tuple(args))
            except BaseException:
                conn.rollback()
                raise
            conn.commit()
            return
        with conn.transaction(), conn.cursor() as cur:
            for sql, args in statements:
                cur.execute(sql, args)


async def _atransact(saver: Saver, statements: Sequence[Statement]) -> None:
    if not statements:
        return
    async with _aconnection(saver) as conn:
        if backend(saver) == "sqlite":
            await conn.commit()
            try:
                await conn.execute("BEGIN IMMEDIATE")
                for sql, args in statements:
                    await conn.execute(sql, tuple(args))
            except BaseException:
                await conn.rollback()
                raise
            await conn.commit()
            return
        async with conn.transaction(), conn.cursor() as cur:
            for sql, args in statements:
                await cur.execute(sql, args)


@contextmanager
def _connection(saver: Saver) -> Iterator[Any]:
    """The saver's connection (one of its pool's), held under the saver's own lock."""
    backend(saver)
    conn = saver.conn  # type: ignore[attr-defined]
    with saver.lock:  # type: ignore[attr-defined]
        if hasattr(conn, "getconn"):  # a psycopg pool
            with conn.connection() as pooled:
                yield pooled
        else:
            yield conn


@asynccontextmanager
async def _aconnection(saver: Saver) -> AsyncIterator[Any]:
    """Async twin of ``_connection``."""
    backend(saver)
    conn = saver.conn  # type: ignore[attr-defined]
    async with saver.lock:  # type: ignore[attr-defined]
        if hasattr(conn, "getconn"):
            async with conn.connection() as pooled:
                yield pooled
        else:
            yield conn
