"""Reading a saver's own tables: thread ids page by page, lineages without state values.

LangGraph's savers list threads only by listing every checkpoint (``list(None)``, which
``PostgresSaver`` holds whole in memory), and list a thread only with every state value
decoded. Reading a whole fleet needs less: the thread ids, and per checkpoint what the
lineage walk (``_history.lineage``) reads. A ``StorageReader`` reads just that from the
saver's own tables, one reader per saver type (``reader_for``); any other saver gets
None, and its callers keep the saver-agnostic path (``list``, ``get_tuple``). A sync
caller asks ``reader_for``, an async one ``areader_for``: each answers only for the
savers whose own API it would call (a sync saver's, an async saver's). ``lineage_of``
reads and walks one thread's lineage that way (what ``plan`` and ``run`` read).

Rules:
- Read-only, through the saver's own connection (and its lock).
- ``thread_ids`` pages by thread id (``after``, ``limit``): one indexed query a page,
  so memory holds one page whatever the database size.
- ``lineages`` reads a batch of threads in a few queries. Each thread comes back
  newest first, its head (the newest root checkpoint) whole, as ``get_tuple`` returns
  it, and every other checkpoint light: its metadata, parent, ``v``, ``id``,
  ``versions_seen`` and ``channel_versions``, of its values only those the walk reads
  (which channels hold None, the queued ``Send``s and a turn's input, decoded through
  the saver's serializer), and its pending writes as ``(task id, channel, None)``.
  ``lineage`` reads one thread for a walk, every checkpoint light, each decoded when
  the walk reaches it: a long thread is never held whole, as a saver's listing is not.
- A thread a reader cannot read that way (checkpoints of a format before LangGraph's
  v4, which the saver converts on read) is left out of what ``lineages`` returns, and
  ``lineage`` returns None for it: its caller reads it through the saver. So are the
  reserved threads (``_stamp_store.is_store_thread``).

Savers read here: ``SqliteSaver``, ``AsyncSqliteSaver`` (``_storage_sqlite``),
``PostgresSaver``, ``AsyncPostgresSaver`` (``_storage_postgres``), checked on
langgraph-checkpoint-sqlite 3.0-3.1 and langgraph-checkpoint-postgres 3.0-3.2.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

from neograph_ext._history import Record, lineage
from neograph_ext._stamp import Stamp
from neograph_ext._stamp_store import is_store_thread
from neograph_ext._storage_postgres import PostgresReader
from neograph_ext._storage_rows import collector_paused
from neograph_ext._storage_sqlite import SqliteReader

__all__ = [
    "StorageReader",
    "alineage_of",
    "apages",
    "areader_for",
    "lineage_of",
    "pages",
    "reader_for",
]


class StorageReader(Protocol):
    """Reads one saver's tables. A reader of a sync saver (``reader_for``) is called
    through its sync methods, of an async saver (``areader_for``) through its
    ``a``-prefixed twins."""

    def thread_ids(self, after: str | None, limit: int) -> list[str]:
        """Up to ``limit`` ids of threads with a root checkpoint, greater than
        ``after`` (from the first when None), in the database's collation order (the
        order its index holds them, which need not be Python's); fewer than ``limit``
        only on the last page. The reserved threads are among them (``is_reserved_thread`` tells
        them): a caller pages on from the last id of a page, whatever it keeps."""
        ...

    async def athread_ids(self, after: str | None, limit: int) -> list[str]:
        """Async twin of ``thread_ids``."""
        ...

    def lineages(
        self, thread_ids: Sequence[str], *, heads: bool = True
    ) -> dict[str, list[CheckpointTuple]]:
        """Each thread's root checkpoints, newest first: its head whole (``heads``; else
        light too, for a walk whose caller read the head already), the others light
        (see the module's rules); a thread with no root checkpoint, or one that must be
        read through the saver, is absent."""
        ...

    async def alineages(
        self, thread_ids: Sequence[str], *, heads: bool = True
    ) -> dict[str, list[CheckpointTuple]]:
        """Async twin of ``lineages``."""
        ...

    def lineage(self, thread_id: str) -> Iterable[CheckpointTuple] | None:
        """One thread's root checkpoints, newest first, all light, for a walk: they may
        be decoded one at a time as it reaches them, so a long thread is never held
        whole; None where ``lineages`` would leave the thread out."""
        ...

    async def alineage(self, thread_id: str) -> Iterable[CheckpointTuple] | None:
        """Async twin of ``lineage``."""
        ...


def reader_for(saver: BaseCheckpointSaver[Any]) -> StorageReader | None:
    """The reader of a sync saver's tables, for its sync methods; None for an async
    saver, or a saver of another type (or a subclass, which may store differently),
    which is read through its own API."""
    kind = type(saver)
    if kind is _named("langgraph.checkpoint.sqlite", "SqliteSaver"):
        return SqliteReader(saver)
    if kind is _named("langgraph.checkpoint.postgres", "PostgresSaver"):
        return PostgresReader(saver)
    return None


def areader_for(saver: BaseCheckpointSaver[Any]) -> StorageReader | None:
    """Async twin of ``reader_for``: the reader of an async saver's tables, for its
    ``a`` methods; None for a sync saver or one of another type."""
    kind = type(saver)
    if kind is _named("langgraph.checkpoint.sqlite.aio", "AsyncSqliteSaver"):
        return SqliteReader(saver)
    if kind is _named("langgraph.checkpoint.postgres.aio", "AsyncPostgresSaver"):
        return PostgresReader(saver)
    return None


def pages(reader: StorageReader, size: int) -> Iterator[list[str]]:
    """Every thread id of a sync saver's tables, in the database's order, ``size`` at a
    time (a page may be shorter where it held reserved threads, which are left out)."""
    after: str | None = None
    while True:
        page = reader.thread_ids(after, size)
        if kept := [name for name in page if not is_store_thread(name)]:
            yield kept
        if len(page) < size:
            return
        after = page[-1]


async def apages(reader: StorageReader, size: int) -> AsyncIterator[list[str]]:
    """Async twin of ``pages``."""
    after: str | None = None
    while True:
        page = await reader.athread_ids(after, size)
        if kept := [name for name in page if not is_store_thread(name)]:
            yield kept
        if len(page) < size:
            return
        after = page[-1]


def lineage_of(
    reader: StorageReader,
    thread_id: str,
    head_id: str,
    next_nodes: frozenset[str],
    described: Mapping[str, Stamp],
) -> tuple[Record, ...] | None:
    """``head_id``'s lineage (``_history.lineage``), the thread read light through a sync
    saver's reader; None when the reader leaves the thread out.

    Read and walked with the garbage collector paused (``collector_paused``), the light
    tuples let go before it runs again: on a long thread its passes over them, which
    free nothing, cost more than the walk.
    """
    with collector_paused():
        listed = reader.lineage(thread_id)
        if listed is None:
            return None
        walked = lineage(listed, head_id, next_nodes=next_nodes, described=described)
        del listed
    return walked


async def alineage_of(
    reader: StorageReader,
    thread_id: str,
    head_id: str,
    next_nodes: frozenset[str],
    described: Mapping[str, Stamp],
) -> tuple[Record, ...] | None:
    """Async twin of ``lineage_of``."""
    with collector_paused():
        listed = await reader.alineage(thread_id)
        if listed is None:
            return None
        walked = lineage(listed, head_id, next_nodes=next_nodes, described=described)
        del listed
    return walked


def _named(module: str, name: str) -> object:
    """A saver class, if its module is imported (a saver of it exists only then)."""
    return getattr(sys.modules.get(module), name, None)
