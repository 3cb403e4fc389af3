"""A thread's history as a script reads it: ``history`` and ``list_threads``.

Rules:
- Read-only: the thread's root-namespace checkpoints are listed once, the stamp
  descriptions they name are looked up, nothing is written and nothing is planned.
- The history is the head's lineage (``_history.lineage``), oldest first, as
  ``graph.get_state_history`` would walk it but one branch only; branches off it are
  counted (``History.checkpoints``, ``HistoryEntry.children``), not listed.
- What changed is ``_changes.step_changes``, the very comparison ``plan`` makes for a
  step: the nodes that ran and the channels they wrote, under the stamp the checkpoint
  was written under and the graph's.
- Sync and async twins differ by ``await`` alone; the rest is written once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, overload

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.pregel import Pregel

from neograph_ext.decision._changes import NodeChange
from neograph_ext.decision._history import Record, lineage, references, resolved
from neograph_ext.decision._lineage_facts import StepChanges
from neograph_ext.decision._stamp import Stamp, StampRef, Unreadable
from neograph_ext.decision._unreadable import reading
from neograph_ext.drivers._thread import (
    checkpointer_of,
    named_checkpoint,
    stamped,
    thread_of,
    whole_thread,
)
from neograph_ext.storage._stamp_store import aload, is_store_thread, load
from neograph_ext.storage._storage import apages, areader_for, pages, reader_for

__all__ = [
    "History",
    "HistoryEntry",
    "Saver",
    "StampStatus",
    "ahistory",
    "alist_threads",
    "history",
    "list_threads",
]

Saver = BaseCheckpointSaver[Any]


class StampStatus(StrEnum):
    """What a checkpoint records about the types it was written under."""

    STAMPED = "stamped"
    """Written under a stamp whose description is stored: comparable with a graph."""
    UNDESCRIBED = "undescribed"
    """Written under a stamp whose description is not stored (its reserved thread was
    deleted): every node it covers counts as changed (``ChangeReason.UNKNOWN``)."""
    UNSTAMPED = "unstamped"
    """Written without neograph-ext (plain LangGraph, or before it was adopted)."""
    UNREADABLE = "unreadable"
    """Its stamp cannot be trusted (not JSON, an unknown format, a bad shape)."""


@dataclass(frozen=True)
class HistoryEntry:
    """One checkpoint of a thread's lineage."""

    checkpoint_id: str
    """The checkpoint's id."""
    parent_id: str | None
    """The id of the checkpoint it was written after; None for the thread's first."""
    step: int
    """LangGraph's step counter (``-1`` for an input checkpoint)."""
    source: str
    """LangGraph's ``source`` metadata: ``input``, ``loop``, ``update`` or ``fork``."""
    ran: frozenset[str]
    """The nodes whose tasks ran in the step that produced it."""
    wrote: frozenset[str]
    """The state channels that step updated."""
    stamp: StampStatus
    """Whether it was written under a stamp, and whether that stamp is usable."""
    stamp_id: str | None
    """The id of the stamp it was written under; None when ``UNSTAMPED`` or
    ``UNREADABLE``."""
    why: str | None
    """Why its stamp cannot be compared with a graph, one line; None when ``STAMPED``."""
    verified: bool
    """Whether ``run`` had checked this checkpoint's whole lineage against its stamp
    before writing it (a resume of a verified head need not read the history)."""
    children: int
    """How many checkpoints of the thread were written after it, on any branch: more
    than 1 where time travel (a rewind) forked the thread."""
    changes: tuple[NodeChange, ...] | None
    """What differs, for the nodes in ``ran`` and the channels in ``wrote``, between
    the stamp it was written under and the graph's, as ``plan`` compares a step:
    empty when nothing does; None when there is nothing to compare (``history`` was
    given a checkpointer, not a graph, or the checkpoint is ``UNSTAMPED`` or
    ``UNREADABLE``). A channel's change names the node that wrote it, or
    ``"(stored value)"`` on a checkpoint no node produced."""


@dataclass(frozen=True)
class History(Sequence[HistoryEntry]):
    """A thread's lineage, oldest first: a sequence of ``HistoryEntry``.

    Empty when the thread has no checkpoint, or not the one the config names.
    """

    thread_id: str
    """The thread."""
    entries: tuple[HistoryEntry, ...]
    """The lineage, oldest first (what indexing and iterating give)."""
    checkpoints: int
    """The thread's root-namespace checkpoints on every branch: more than ``len(self)``
    once time travel forked it."""

    @overload
    def __getitem__(self, index: int) -> HistoryEntry: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[HistoryEntry, ...]: ...
    def __getitem__(self, index: int | slice) -> HistoryEntry | tuple[HistoryEntry, ...]:
        return self.entries[index]

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[HistoryEntry]:
        return iter(self.entries)


def history(source: Pregel[Any, Any, Any, Any] | Saver, config: RunnableConfig) -> History:
    """A thread's lineage, oldest first, each checkpoint compared with a graph.

    The counterpart of LangGraph's ``graph.get_state_history(config)`` for what
    neograph-ext records: for each checkpoint of the head's lineage (one branch, not
    every branch), the nodes that ran, whether it was stamped and verified, and what
    changed since for those nodes. Reads raw checkpoints, so old values that no longer
    fit the state schema read fine. Writes nothing.

    Args:
        source: A graph made by ``neograph_ext.compile`` with a checkpointer, to
            compare each step with; or a checkpointer alone, for the lineage without
            comparison (``HistoryEntry.changes`` is then None).
        config: Names the thread (``configurable.thread_id``) and optionally a
            ``checkpoint_id`` whose lineage to read instead of the newest checkpoint's.

    Returns:
        The lineage; empty when the thread has no checkpoint, or not the one named.

    Raises:
        GraphError: The graph was not compiled by neograph-ext or has no checkpointer;
            the config names no thread, or a reserved one (``is_reserved_thread``).
        UnreadableCheckpointError: The saver cannot decode the thread's checkpoints.
    """
    saver, current, thread_id = _reader(source, config)
    with reading(thread_id):
        tuples = [tup for tup in saver.list(whole_thread(config))]
        records = _lineage(tuples, config)
        found = load(saver, references(records, _id(current)))
    return _history(thread_id, tuples, records, found, current)


async def ahistory(source: Pregel[Any, Any, Any, Any] | Saver, config: RunnableConfig) -> History:
    """Async twin of ``history``."""
    saver, current, thread_id = _reader(source, config)
    with reading(thread_id):
        tuples = [tup async for tup in saver.alist(whole_thread(config))]
        records = _lineage(tuples, config)
        found = await aload(saver, references(records, _id(current)))
    return _history(thread_id, tuples, records, found, current)


def list_threads(checkpointer: Saver) -> tuple[str, ...]:
    """The ids of every thread with a root-namespace checkpoint in ``checkpointer``,
    sorted, without the reserved threads holding stamp descriptions.

    LangGraph's savers have no call that lists threads. For the SQLite and PostgreSQL
    savers the ids are read from their tables, a page at a time (one indexed query a
    page); any other saver's checkpoints are each read once
    (``checkpointer.list(None)``), in time in proportion to all checkpoints stored.

    Args:
        checkpointer: The saver whose database to list.

    Returns:
        The thread ids, each once.
    """
    reader = reader_for(checkpointer)
    if reader is not None:
        return tuple(sorted(name for page in pages(reader, _PAGE) for name in page))
    return _sorted({_graph_thread(tup) for tup in checkpointer.list(None)})


async def alist_threads(checkpointer: Saver) -> tuple[str, ...]:
    """Async twin of ``list_threads``."""
    reader = areader_for(checkpointer)
    if reader is not None:
        return tuple(sorted([name async for page in apages(reader, _PAGE) for name in page]))
    return _sorted({_graph_thread(tup) async for tup in checkpointer.alist(None)})


_PAGE = 1000
"""Thread ids read per query. Pages come in the database's collation order, which need
not be Python's: the ids are sorted once all are read."""


def _reader(
    source: Pregel[Any, Any, Any, Any] | Saver, config: RunnableConfig
) -> tuple[Saver, Stamp | None, str]:
    """The saver to read, the stamp to compare with (None for a saver alone), the thread."""
    if isinstance(source, BaseCheckpointSaver):
        return source, None, thread_of(config)
    graph = stamped(source)
    return checkpointer_of(graph), graph.neograph_ext_stamp, thread_of(config)


def _id(stamp: Stamp | None) -> str:
    """The id of the stamp compared with, whose description needs no lookup."""
    return stamp.id if stamp is not None else ""


def _lineage(tuples: Sequence[CheckpointTuple], config: RunnableConfig) -> tuple[Record, ...]:
    """The lineage of the checkpoint ``config`` names, or of the newest; () when absent."""
    if not tuples:
        return ()
    head = named_checkpoint(config) or max(t.checkpoint["id"] for t in tuples)
    try:
        return lineage(tuples, head)
    except KeyError:
        return ()


def _history(
    thread_id: str,
    tuples: Sequence[CheckpointTuple],
    records: Sequence[Record],
    found: Mapping[str, Stamp],
    current: Stamp | None,
) -> History:
    described = {**found, current.id: current} if current is not None else found
    children = Counter(
        (tup.parent_config.get("configurable") or {}).get("checkpoint_id")
        for tup in tuples
        if tup.parent_config
    )
    walked = resolved(records, described)
    compared = StepChanges(walked, current) if current is not None else None
    entries = tuple(
        _entry(record, children[record.checkpoint_id], _compared(record, compared))
        for record in walked
    )
    return History(thread_id, entries, len(tuples))


def _compared(record: Record, compared: StepChanges | None) -> tuple[NodeChange, ...] | None:
    """What changed for ``record``'s step, as ``plan`` compares it; None when there is
    nothing to compare."""
    stamp = record.stamp
    if compared is None or not isinstance(stamp, Stamp | StampRef):
        return None
    if stamp.id == compared.current.id:
        return ()
    return compared.of(record, stamp)


def _entry(record: Record, children: int, changes: tuple[NodeChange, ...] | None) -> HistoryEntry:
    stamp = record.stamp
    status, why = _status(stamp)
    return HistoryEntry(
        checkpoint_id=record.checkpoint_id,
        parent_id=record.parent_id,
        step=record.step,
        source=record.source,
        ran=record.ran,
        wrote=record.wrote,
        stamp=status,
        stamp_id=stamp.id if isinstance(stamp, Stamp | StampRef) else None,
        why=why,
        verified=record.verified is not None,
        children=children,
        changes=changes,
    )


def _status(stamp: Stamp | StampRef | Unreadable | None) -> tuple[StampStatus, str | None]:
    if isinstance(stamp, Stamp):
        return StampStatus.STAMPED, None
    if isinstance(stamp, StampRef):
        return StampStatus.UNDESCRIBED, f"the description of stamp {stamp.id[:12]} is not stored"
    if isinstance(stamp, Unreadable):
        return StampStatus.UNREADABLE, f"stamp not trusted ({stamp.reason}): {stamp.detail}"
    return StampStatus.UNSTAMPED, "written without a stamp"


def _graph_thread(tup: CheckpointTuple) -> str | None:
    """The thread of a root-namespace checkpoint of a graph's thread; None for any other."""
    configurable = tup.config["configurable"]
    thread_id = configurable["thread_id"]
    if configurable.get("checkpoint_ns", "") != "" or is_store_thread(thread_id):
        return None
    return str(thread_id)


def _sorted(names: set[str | None]) -> tuple[str, ...]:
    return tuple(sorted(name for name in names if name is not None))
