"""Driving storage flows (``_query``) over a saver, and reading a saver's own tables.

A flow is written once; ``run`` drives it for a sync caller and ``arun`` for an async
one, and the two differ by ``await`` alone: each ``Sql`` and ``Transaction`` goes to the
saver's backend (``execute`` / ``aexecute`` of ``_storage_sqlite`` or
``_storage_postgres``, picked by ``backend``), each ``Call`` and ``Listing`` to the
saver's own API. ``bound`` makes a flow's sync and async entry points from the flow.

LangGraph's savers list threads only by listing every checkpoint (``list(None)``, which
``PostgresSaver`` holds whole in memory), and list a thread only with every state value
decoded. Reading a whole fleet needs less: the thread ids, and per checkpoint what the
lineage walk (``_history.lineage``) reads. A ``StorageReader`` holds the flows reading
just that from the saver's own tables, one reader per saver type (``reader_for`` for a
sync saver, ``areader_for`` for an async one); any other saver gets None, and its
callers keep the saver-agnostic path (``list``, ``get_tuple``). ``lineage_of`` reads and
walks one thread's lineage that way (what ``plan`` and ``run`` read).

Rules:
- Read-only readers, through the saver's own connection (and its lock).
- ``thread_ids`` pages by thread id (``after``, ``limit``): one indexed query a page,
  so memory holds one page whatever the database size.
- ``heads`` reads a batch of threads' heads (each newest root checkpoint) whole, as
  ``get_tuple`` returns them, in a query or two; ``lineages`` reads a batch of threads
  in a few queries, each newest first, every checkpoint light: its metadata, parent,
  ``v``, ``id``, ``versions_seen`` and ``channel_versions``, of its values only those
  the walk reads (which channels hold None, the queued ``Send``s and a turn's input,
  decoded through the saver's serializer), and its pending writes as ``(task id,
  channel, None)``.
  ``lineage`` reads one thread for a walk, every checkpoint light, each decoded when
  the walk reaches it: a long thread is never held whole, as a saver's listing is not.
- A thread a reader cannot read that way (checkpoints of a format before LangGraph's
  v4, which the saver converts on read) is left out of what ``lineages`` returns, and
  ``lineage`` returns None for it: its caller reads it through the saver. So are the
  reserved threads (``_storage_rows.is_store_thread``).

Savers read here: ``SqliteSaver``, ``AsyncSqliteSaver`` (``_storage_sqlite``),
``PostgresSaver``, ``AsyncPostgresSaver`` (``_storage_postgres``), checked on
langgraph-checkpoint-sqlite 3.0-3.1 and langgraph-checkpoint-postgres 3.0-3.2.
"""

from __future__ import annotations

import sys
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any, Literal, ParamSpec, Protocol, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

from neograph_ext.decision._errors import GraphError
from neograph_ext.decision._history import Record, lineage
from neograph_ext.decision._query import Call, Flow, Listing
from neograph_ext.decision._stamp import Stamp
from neograph_ext.storage import _storage_postgres, _storage_sqlite
from neograph_ext.storage._storage_postgres import PostgresReader
from neograph_ext.storage._storage_rows import collector_paused, is_store_thread
from neograph_ext.storage._storage_sqlite import SqliteReader

__all__ = [
    "Backend",
    "StorageReader",
    "alineage_of",
    "apages",
    "areader_for",
    "arun",
    "backend",
    "bound",
    "known_backend",
    "lineage_of",
    "pages",
    "reader_for",
    "run",
]

_T = TypeVar("_T")
_P = ParamSpec("_P")
_Saver = BaseCheckpointSaver[Any]
Backend = Literal["sqlite", "postgres"]
_BACKENDS = {"sqlite": _storage_sqlite, "postgres": _storage_postgres}
"""Each backend's module, holding its ``execute`` / ``aexecute`` pair."""


def run(saver: Any, flow: Flow[_T]) -> _T:
    """Drive ``flow`` over a sync ``saver`` (None for a flow whose calls name what they
    call); what it returns."""
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            query = flow.send(answer) if error is None else flow.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        error = None
        try:
            if isinstance(query, Call):
                answer = getattr(query.on or saver, query.method)(*query.args)
            elif isinstance(query, Listing):
                answer = list(saver.list(query.config, limit=query.limit))
            else:
                answer = _BACKENDS[backend(saver)].execute(saver, query)
        except BaseException as exc:  # thrown into the flow, which may handle it
            error = exc


async def arun(saver: Any, flow: Flow[_T]) -> _T:
    """Async twin of ``run``, over an async saver."""
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            query = flow.send(answer) if error is None else flow.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        error = None
        try:
            if isinstance(query, Call):
                method = query.amethod or "a" + query.method
                answer = await getattr(query.on or saver, method)(*query.args)
            elif isinstance(query, Listing):
                answer = [t async for t in saver.alist(query.config, limit=query.limit)]
            else:
                answer = await _BACKENDS[backend(saver)].aexecute(saver, query)
        except BaseException as exc:
            error = exc


def bound(
    flow: Callable[_P, Flow[_T]], saver: Callable[..., _Saver] = lambda first, *_, **__: first
) -> tuple[Callable[_P, _T], Callable[_P, Awaitable[_T]]]:
    """A flow's sync and async entry points, which take the flow's arguments; the saver
    it runs over is its first (else what ``saver`` finds among them)."""

    def sync(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        return run(saver(*args, **kwargs), flow(*args, **kwargs))

    def asynchronous(*args: _P.args, **kwargs: _P.kwargs) -> Awaitable[_T]:
        return arun(saver(*args, **kwargs), flow(*args, **kwargs))

    sync.__doc__ = asynchronous.__doc__ = flow.__doc__
    return sync, asynchronous


def backend(saver: _Saver) -> Backend:
    """Which tables ``saver`` keeps.

    Raises:
        GraphError: It is not one of LangGraph's SQLite or PostgreSQL savers.
    """
    if (kind := known_backend(saver)) is not None:
        return kind
    kind_name = f"{type(saver).__module__}.{type(saver).__qualname__}"
    raise GraphError(
        f"pruning needs LangGraph's SQLite or PostgreSQL saver (SqliteSaver, "
        f"AsyncSqliteSaver, PostgresSaver, AsyncPostgresSaver), not {kind_name}: "
        "its tables are unknown here; prune that store with its own tools"
    )


def known_backend(saver: object) -> Backend | None:
    """Which tables ``saver`` keeps; None for a saver of another kind. Optional drivers
    are never imported: a saver whose driver is not imported cannot be one of theirs."""
    for module, name, kind in _SAVERS:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and isinstance(saver, cls):
            return kind
    return None


_SAVERS: tuple[tuple[str, str, Backend], ...] = (
    ("langgraph.checkpoint.sqlite", "SqliteSaver", "sqlite"),
    ("langgraph.checkpoint.sqlite.aio", "AsyncSqliteSaver", "sqlite"),
    ("langgraph.checkpoint.postgres.base", "BasePostgresSaver", "postgres"),
)


class StorageReader(Protocol):
    """The flows reading one saver's tables, run by ``run`` over a sync saver
    (``reader_for``) or ``arun`` over an async one (``areader_for``)."""

    saver: _Saver
    """The saver whose tables are read."""

    def thread_ids(self, after: str | None, limit: int) -> Flow[list[str]]:
        """Up to ``limit`` ids of threads with a root checkpoint, greater than
        ``after`` (from the first when None), in the database's collation order (the
        order its index holds them, which need not be Python's); fewer than ``limit``
        only on the last page. The reserved threads are among them: a caller pages on
        from the last id of a page, whatever it keeps."""
        ...

    def heads(self, thread_ids: Sequence[str]) -> Flow[dict[str, CheckpointTuple]]:
        """Each thread's head (its newest root checkpoint) whole, as ``get_tuple``
        returns it, in one or two queries for the batch; a thread with no root
        checkpoint is absent."""
        ...

    def lineages(self, thread_ids: Sequence[str]) -> Flow[dict[str, list[CheckpointTuple]]]:
        """Each thread's root checkpoints, newest first, all light (see the module's
        rules), for the walks of threads whose heads were read already; a thread with
        no root checkpoint, or one that must be read through the saver, is absent."""
        ...

    def lineage(self, thread_id: str) -> Flow[Iterable[CheckpointTuple] | None]:
        """One thread's root checkpoints, newest first, all light, for a walk: they may
        be decoded one at a time as it reaches them, so a long thread is never held
        whole; None where ``lineages`` would leave the thread out."""
        ...


def reader_for(saver: _Saver) -> StorageReader | None:
    """The reader of a sync saver's tables; None for an async saver, or a saver of
    another type (or a subclass, which may store differently), read through its API."""
    kind = type(saver)
    if kind is _named("langgraph.checkpoint.sqlite", "SqliteSaver"):
        return SqliteReader(saver)
    if kind is _named("langgraph.checkpoint.postgres", "PostgresSaver"):
        return PostgresReader(saver)
    return None


def areader_for(saver: _Saver) -> StorageReader | None:
    """``reader_for`` for an async saver; None for a sync saver or one of another type."""
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
        page = run(reader.saver, reader.thread_ids(after, size))
        if kept := [name for name in page if not is_store_thread(name)]:
            yield kept
        if len(page) < size:
            return
        after = page[-1]


async def apages(reader: StorageReader, size: int) -> AsyncIterator[list[str]]:
    """Async twin of ``pages``."""
    after: str | None = None
    while True:
        page = await arun(reader.saver, reader.thread_ids(after, size))
        if kept := [name for name in page if not is_store_thread(name)]:
            yield kept
        if len(page) < size:
            return
        after = page[-1]


def _lineage_of(
    reader: StorageReader,
    thread_id: str,
    head_id: str,
    next_nodes: frozenset[str],
    described: Mapping[str, Stamp],
) -> Flow[tuple[Record, ...] | None]:
    """``head_id``'s lineage (``_history.lineage``), the thread read light through the
    saver's reader; None when the reader leaves the thread out.

    Read and walked with the garbage collector paused (``collector_paused``), the light
    tuples let go before it runs again: on a long thread its passes over them, which
    free nothing, cost more than the walk.
    """
    with collector_paused():
        listed = yield from reader.lineage(thread_id)
        if listed is None:
            return None
        walked = lineage(listed, head_id, next_nodes=next_nodes, described=described)
        del listed
    return walked


lineage_of, alineage_of = bound(_lineage_of, lambda reader, *_, **__: reader.saver)


def _named(module: str, name: str) -> object:
    """A saver class, if its module is imported (a saver of it exists only then)."""
    return getattr(sys.modules.get(module), name, None)
