"""The SQL of pruning: the statements that size and delete rows, per backend.

Rules:
- The one module that knows the tables of LangGraph's SQLite and PostgreSQL savers
  (checked on langgraph-checkpoint-sqlite 3.1 and -postgres 3.2): ``checkpoints`` and
  ``writes`` (SQLite), ``checkpoints``, ``checkpoint_writes`` and ``checkpoint_blobs``
  (PostgreSQL). Any other saver is a ``GraphError`` (``_storage.backend``).
- Statements only, no connection: ``_prune_store`` runs them.
- A description thread goes only when no checkpoint names its stamp, checked in the
  deleting statement itself (``dropping``).
- Bytes are what the rows' payload columns hold (``length`` on SQLite,
  ``pg_column_size`` on PostgreSQL): what deleting them frees, before ``VACUUM``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from neograph_ext.decision._stamp import REF_FORMAT, STAMP_KEY
from neograph_ext.storage._storage import Backend
from neograph_ext.storage._storage_rows import THREAD_PREFIX

__all__ = [
    "SIZE_SQL",
    "Cut",
    "Saver",
    "Sizes",
    "Statement",
    "descriptions_sql",
    "dropping",
    "pages",
    "references_sql",
    "sized",
    "threads_sql",
]

Saver = BaseCheckpointSaver[Any]
Statement = tuple[str, Sequence[Any]]
"""One SQL statement and its parameters."""
_CHUNK = 500
"""Ids per ``IN (...)`` on SQLite, under its limit on bound parameters."""


@dataclass(frozen=True)
class Sizes:
    """What a set of rows holds."""

    checkpoints: int = 0
    """Checkpoint rows."""
    writes: int = 0
    """Pending-write rows."""
    blobs: int = 0
    """Channel-value rows (PostgreSQL stores values apart from checkpoints)."""
    subgraphs: int = 0
    """Checkpoint rows of subgraph namespaces."""
    bytes: int = 0
    """Bytes of their payload columns."""

    def __add__(self, other: Sizes) -> Sizes:
        return Sizes(
            self.checkpoints + other.checkpoints,
            self.writes + other.writes,
            self.blobs + other.blobs,
            self.subgraphs + other.subgraphs,
            self.bytes + other.bytes,
        )


@dataclass(frozen=True)
class Cut:
    """The rows of one thread's root namespace that pruning removes.

    Attributes:
        kind: The backend.
        thread_id: The thread.
        checkpoints: The checkpoint ids that go.
        blobs: ``(channel, version)`` of the values only those checkpoints name
            (PostgreSQL; empty on SQLite, which stores values in the checkpoint).
        namespaces: Subgraph namespaces of the thread that go whole.
    """

    kind: Backend
    thread_id: str
    checkpoints: tuple[str, ...]
    blobs: tuple[tuple[str, str], ...] = ()
    namespaces: tuple[str, ...] = ()

    def measuring(self) -> list[tuple[str, Statement]]:
        """The statements sizing the rows, each tagged with what it counts."""
        return [(table, (sql, args)) for table, sql, args in self._parts(measure=True)]

    def deleting(self) -> list[Statement]:
        """The statements deleting the rows, writes before their checkpoints."""
        return [(sql, args) for _, sql, args in self._parts(measure=False)]

    def _parts(self, *, measure: bool) -> list[tuple[str, str, Sequence[Any]]]:
        if self.kind == "sqlite":
            return self._sqlite(measure)
        return self._postgres(measure)

    def _sqlite(self, measure: bool) -> list[tuple[str, str, Sequence[Any]]]:
        parts: list[tuple[str, str, Sequence[Any]]] = []
        for start in range(0, len(self.checkpoints), _CHUNK):
            ids = self.checkpoints[start : start + _CHUNK]
            where = (
                f"WHERE thread_id = ? AND checkpoint_ns = '' "
                f"AND checkpoint_id IN ({', '.join('?' * len(ids))})"
            )
            for table, payload in (("writes", "length(value)"), ("checkpoints", _SQLITE_ROW)):
                head = f"SELECT count(*), coalesce(sum({payload}), 0)" if measure else "DELETE"
                parts.append((table, f"{head} FROM {table} {where}", (self.thread_id, *ids)))
        for start in range(0, len(self.namespaces), _CHUNK):
            names = self.namespaces[start : start + _CHUNK]
            where = f"WHERE thread_id = ? AND checkpoint_ns IN ({', '.join('?' * len(names))})"
            for table, tag, payload in (
                ("writes", "writes", "length(value)"),
                ("checkpoints", "subgraphs", _SQLITE_ROW),
            ):
                head = f"SELECT count(*), coalesce(sum({payload}), 0)" if measure else "DELETE"
                parts.append((tag, f"{head} FROM {table} {where}", (self.thread_id, *names)))
        return parts

    def _postgres(self, measure: bool) -> list[tuple[str, str, Sequence[Any]]]:
        ids = list(self.checkpoints)
        where = "WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id = ANY(%s)"
        parts: list[tuple[str, str, Sequence[Any]]] = []
        for table, payload in (("writes", "pg_column_size(blob)"), ("checkpoints", _PG_ROW)):
            name = "checkpoint_writes" if table == "writes" else table
            head = f"SELECT count(*), coalesce(sum({payload}), 0)" if measure else "DELETE"
            if ids:
                parts.append((table, f"{head} FROM {name} {where}", (self.thread_id, ids)))
        if self.blobs:
            head = (
                "SELECT count(*), coalesce(sum(pg_column_size(blob)), 0)" if measure else "DELETE"
            )
            sql = (
                f"{head} FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = '' "
                "AND (channel, version) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
            )
            channels, versions = [c for c, _ in self.blobs], [v for _, v in self.blobs]
            parts.append(("blobs", sql, (self.thread_id, channels, versions)))
        if self.namespaces:
            names = list(self.namespaces)
            for table, tag, payload in (
                ("checkpoint_writes", "writes", "pg_column_size(blob)"),
                ("checkpoint_blobs", "blobs", "pg_column_size(blob)"),
                ("checkpoints", "subgraphs", _PG_ROW),
            ):
                head = f"SELECT count(*), coalesce(sum({payload}), 0)" if measure else "DELETE"
                sql = f"{head} FROM {table} WHERE thread_id = %s AND checkpoint_ns = ANY(%s)"
                parts.append((tag, sql, (self.thread_id, names)))
        return parts


_SQLITE_ROW = "length(checkpoint) + coalesce(length(metadata), 0)"
_PG_ROW = "pg_column_size(checkpoint) + pg_column_size(metadata)"


def threads_sql(kind: Backend) -> str:
    return "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = ''" + (
        "" if kind == "sqlite" else " ORDER BY thread_id"
    )


def references_sql(kind: Backend) -> str:
    """Distinct ``(thread, stamp reference)`` over every checkpoint of every namespace."""
    ref = (
        f"json_extract(CAST(metadata AS TEXT), '$.{STAMP_KEY}')"
        if kind == "sqlite"
        else f"metadata->>'{STAMP_KEY}'"
    )
    return f"SELECT DISTINCT thread_id, {ref} FROM checkpoints"


def descriptions_sql(kind: Backend) -> str:
    if kind == "sqlite":
        return (
            f"SELECT thread_id, count(*), coalesce(sum({_SQLITE_ROW}), 0) FROM checkpoints "
            "WHERE substr(thread_id, 1, ?) = ? GROUP BY thread_id"
        )
    return (
        "SELECT c.thread_id, count(*), coalesce(sum(pg_column_size(c.checkpoint) "
        "+ pg_column_size(c.metadata)), 0) + coalesce((SELECT sum(pg_column_size(b.blob)) "
        "FROM checkpoint_blobs b WHERE b.thread_id = c.thread_id), 0) FROM checkpoints c "
        "WHERE substr(c.thread_id, 1, %s) = %s GROUP BY c.thread_id"
    )


def dropping(kind: Backend, thread_id: str) -> list[Statement]:
    """Deleting a description's thread, unless a checkpoint names its stamp meanwhile."""
    ref = f"{REF_FORMAT}:{thread_id.removeprefix(THREAD_PREFIX)}"
    if kind == "sqlite":
        unused = (
            "NOT EXISTS (SELECT 1 FROM checkpoints WHERE "
            f"json_extract(CAST(metadata AS TEXT), '$.{STAMP_KEY}') = ? "
            "AND substr(thread_id, 1, ?) != ?)"
        )
        args = (thread_id, ref, len(THREAD_PREFIX), THREAD_PREFIX)
        return [
            (f"DELETE FROM {table} WHERE thread_id = ? AND {unused}", args)
            for table in ("writes", "checkpoints")
        ]
    unused = (
        "NOT EXISTS (SELECT 1 FROM checkpoints WHERE "
        f"metadata->>'{STAMP_KEY}' = %s AND substr(thread_id, 1, %s) != %s)"
    )
    args = (thread_id, ref, len(THREAD_PREFIX), THREAD_PREFIX)
    return [
        (f"DELETE FROM {table} WHERE thread_id = %s AND {unused}", args)
        for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints")
    ]


SIZE_SQL = "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
"""A SQLite database's size in bytes."""


def pages(rows: Sequence[Any]) -> int:
    """The bytes ``SIZE_SQL`` found."""
    return int(rows[0][0])


def sized(table: str, count: int, size: int) -> Sizes:
    """What one measuring statement (``Cut.measuring``) found, by what it counts."""
    if table == "writes":
        return Sizes(writes=count, bytes=size)
    if table == "blobs":
        return Sizes(blobs=count, bytes=size)
    if table == "subgraphs":
        return Sizes(subgraphs=count, bytes=size)
    return Sizes(checkpoints=count, bytes=size)
