"""Planning every thread of a database: ``check_threads``, the stream ``check`` reads.

Rules:
- Streams: thread ids come a page at a time from the saver's own tables
  (``_storage.reader_for``), or, for a saver no reader knows, from one scan of its
  checkpoints (``list_threads``); threads are planned in batches of ``batch``, so memory
  holds one batch, whatever the database size.
- The head first: a batch's heads are read whole in a query or two
  (``StorageReader.heads``) and each thread's flow (``_flow.planned``, as ``run`` plans)
  is driven until it asks for its lineage. A thread whose head decides alone (verified
  against the current stamp, or ``needs_lineage`` false) is settled from its head row;
  the lineages of the others are read light together (``StorageReader.lineages``, a
  few queries per batch) and their flows driven on; the batch is read, walked and decided
  with the garbage collector paused (``collector_paused``: its objects hold no cycle),
  its checks yielded after. Anything else a flow asks for (a named
  checkpoint, the values a carry converts, the turns a replay owes, stamp descriptions)
  is read through the saver, as ``plan`` reads it.
- A thread the reader leaves out, and every thread of a saver without a reader, is
  read through the saver (``list``, ``get_tuple``).
- Sync and async twins differ by ``await`` alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass
from logging import DEBUG
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.pregel import Pregel

from neograph_ext._lineage import alist_threads, list_threads
from neograph_ext.decision._claim import last_writer
from neograph_ext.decision._decision import ResumePlan
from neograph_ext.decision._head_state import is_paused, rewind_cut_short
from neograph_ext.decision._history import lineage
from neograph_ext.decision._operations import Flow, ReadLineage, ReadTuple
from neograph_ext.decision._stamp import read_marks
from neograph_ext.decision._unreadable import reading
from neograph_ext.drivers._drivers import ROWS, AsyncDriver, Driver, How, Row, answered
from neograph_ext.drivers._thread import (
    ThreadCall,
    checkpointer_of,
    named_checkpoint,
    stamped,
    thread_call,
)
from neograph_ext.flows._decision_log import logged
from neograph_ext.flows._flow import planned, read_head
from neograph_ext.storage._storage import (
    StorageReader,
    apages,
    areader_for,
    arun,
    pages,
    reader_for,
    run,
)
from neograph_ext.storage._storage_rows import collector_paused

__all__ = ["BATCH", "ThreadCheck", "acheck_threads", "check_threads"]

_Saver = BaseCheckpointSaver[Any]

BATCH = 200
"""Threads read and planned together: a few queries per batch, and one batch in memory."""


@dataclass(frozen=True)
class ThreadCheck:
    """One thread as ``check_threads`` found it."""

    plan: ResumePlan
    """What ``run`` would do with it now (``kept`` and ``rerun`` are complete only when
    its lineage was read: a head ``run`` verified against the current code decides
    alone, as it does for ``run``)."""
    written_by: str | None
    """The id of the stamp its newest checkpoint was written under, or of the code that
    claimed it since (``_claim``): the code that last wrote it; None when that
    checkpoint carries no readable stamp (plain LangGraph)."""
    paused: bool
    """Its newest checkpoint waits on a question (an ``interrupt()`` or a breakpoint)."""
    current: bool = False
    """``written_by`` is the stamp of the graph checked: the current code wrote it."""
    rewinding: bool = False
    """Its newest checkpoint was left by a rewind that did not finish (a process killed
    in it): resuming it runs the rest of the rewind."""

    @property
    def unfinished(self) -> bool:
        """It has nodes left to run: waiting on a question, or cut short (a crash)."""
        return bool(self.plan.next_nodes)


def check_threads(
    graph: Pregel[Any, Any, Any, Any],
    threads: Iterable[str] | None = None,
    *,
    batch: int = BATCH,
) -> Iterator[ThreadCheck]:
    """Plan every thread of the graph's checkpointer (or those named), one at a time.

    What ``neograph-ext check`` reads: each thread's plan (as ``run`` would make it,
    executing and writing nothing), the code that last wrote it, and whether it waits on
    a question. Memory holds one batch of threads, whatever the database size.

    Args:
        graph: A graph made by ``neograph_ext.compile`` with a checkpointer.
        threads: The thread ids to check, in this order; by default every thread with a
            root checkpoint but the reserved ones, in the order the database sorts
            their ids (its collation's), a page at a time.
        batch: How many threads are read and planned together.

    Yields:
        A ``ThreadCheck`` per thread; a named thread with no checkpoint gets a plan of
        kind ``fresh``.

    Raises:
        GraphError: The graph was not compiled by neograph-ext or has no checkpointer,
            or a named thread is reserved.
        UnreadableCheckpointError: A thread's stored checkpoints cannot be decoded.
        ValueError: ``batch`` is not positive.
    """
    saver = checkpointer_of(stamped(graph))
    reader = reader_for(saver)
    scanned = list_threads(saver) if reader is None and threads is None else ()
    for names in _batches(threads, batch, reader, scanned):
        with collector_paused():
            checks = _checked_batch(graph, saver, reader, names)
        yield from checks


async def acheck_threads(
    graph: Pregel[Any, Any, Any, Any],
    threads: Iterable[str] | None = None,
    *,
    batch: int = BATCH,
) -> AsyncIterator[ThreadCheck]:
    """Async twin of ``check_threads``."""
    saver = checkpointer_of(stamped(graph))
    reader = areader_for(saver)
    scanned = await alist_threads(saver) if reader is None and threads is None else ()
    async for names in _abatches(threads, batch, reader, scanned):
        with collector_paused():
            checks = await _achecked_batch(graph, saver, reader, names)
        for check in checks:
            yield check


def _checked_batch(
    graph: Pregel[Any, Any, Any, Any],
    saver: _Saver,
    reader: StorageReader | None,
    names: Sequence[str],
) -> list[ThreadCheck]:
    """One batch's checks: every head read, each flow driven until it asks for its
    lineage, the lineages asked for read together, and those flows driven on."""
    heads = run(saver, reader.heads(names)) if reader is not None else {}
    with ExitStack() as held:
        started: list[tuple[Driver, Flow[ThreadCheck], ReadLineage | ThreadCheck]] = []
        for name in names:
            call = thread_call(graph, _config(name))
            driver = held.enter_context(Driver(call, _rows(heads.get(name))))
            flow = _checked(call)
            started.append((driver, flow, _driven(driver, flow, None, until=ReadLineage)))
        walking = [d.call.thread_id for d, _, at in started if isinstance(at, ReadLineage)]
        listed = run(saver, reader.lineages(walking)) if reader and walking else {}
        checks = []
        for driver, flow, at in started:
            if isinstance(at, ReadLineage):
                walked = _walked(driver, at, listed.get(driver.call.thread_id))
                at = _driven(driver, flow, walked)
            checks.append(cast("ThreadCheck", at))
        return checks


async def _achecked_batch(
    graph: Pregel[Any, Any, Any, Any],
    saver: _Saver,
    reader: StorageReader | None,
    names: Sequence[str],
) -> list[ThreadCheck]:
    """Async twin of ``_checked_batch``."""
    heads = await arun(saver, reader.heads(names)) if reader is not None else {}
    async with AsyncExitStack() as held:
        started: list[tuple[AsyncDriver, Flow[ThreadCheck], ReadLineage | ThreadCheck]] = []
        for name in names:
            call = thread_call(graph, _config(name))
            driver = await held.enter_async_context(AsyncDriver(call, _rows(heads.get(name))))
            flow = _checked(call)
            started.append((driver, flow, await _adriven(driver, flow, None, until=ReadLineage)))
        walking = [d.call.thread_id for d, _, at in started if isinstance(at, ReadLineage)]
        listed = await arun(saver, reader.lineages(walking)) if reader and walking else {}
        checks = []
        for driver, flow, at in started:
            if isinstance(at, ReadLineage):
                walked = await _awalked(driver, at, listed.get(driver.call.thread_id))
                at = await _adriven(driver, flow, walked)
            checks.append(cast("ThreadCheck", at))
        return checks


def _driven(driver: Driver, flow: Flow[Any], sent: Any, until: type | None = None) -> Any:
    """Drive ``flow`` on from ``sent`` (what its last operation answered) to its end, or
    to its first operation of type ``until``: its result, or that operation."""
    while True:
        try:
            op = flow.send(sent)
        except StopIteration as done:
            return done.value
        if until is not None and isinstance(op, until):
            return op
        sent = driver.perform(op)


async def _adriven(
    driver: AsyncDriver, flow: Flow[Any], sent: Any, until: type | None = None
) -> Any:
    """Async twin of ``_driven``."""
    while True:
        try:
            op = flow.send(sent)
        except StopIteration as done:
            return done.value
        if until is not None and isinstance(op, until):
            return op
        sent = await driver.perform(op)


def _walked(driver: Driver, op: ReadLineage, listed: Sequence[CheckpointTuple] | None) -> Any:
    """The records of ``op``'s lineage, walked from what the batch read listed; else
    read as the driver reads one (the reader left the thread out)."""
    if listed is None:
        return driver.perform(op)
    with reading(driver.call.thread_id):
        return lineage(listed, op.head_id, next_nodes=op.next_nodes, described=op.described)


async def _awalked(
    driver: AsyncDriver, op: ReadLineage, listed: Sequence[CheckpointTuple] | None
) -> Any:
    """Async twin of ``_walked``."""
    if listed is None:
        return await driver.perform(op)
    with reading(driver.call.thread_id):
        return lineage(listed, op.head_id, next_nodes=op.next_nodes, described=op.described)


def _checked(call: ThreadCall) -> Flow[ThreadCheck]:
    """The flow of one thread: its head, then its plan as ``run`` makes it."""
    head = yield from read_head(call)
    plan = logged(call.saver, call.thread_id, (yield from planned(call, head)), level=DEBUG)
    if head is None:
        return ThreadCheck(plan, None, False)
    written_by = last_writer(read_marks(head.metadata or {})[0], head.pending_writes or ())
    paused = is_paused(call.graph, head)
    rewinding = rewind_cut_short(call.graph, head)
    return ThreadCheck(plan, written_by, paused, written_by == call.stamp.id, rewinding)


def _batches(
    threads: Iterable[str] | None,
    size: int,
    reader: StorageReader | None,
    scanned: Sequence[str],
) -> Iterator[list[str]]:
    """The thread ids to check, ``size`` at a time."""
    if size < 1:
        raise ValueError(f"batch must be at least 1, got {size}")
    if threads is not None or reader is None:
        yield from _chunks(dict.fromkeys(threads) if threads is not None else scanned, size)
    else:
        yield from pages(reader, size)


async def _abatches(
    threads: Iterable[str] | None,
    size: int,
    reader: StorageReader | None,
    scanned: Sequence[str],
) -> AsyncIterator[list[str]]:
    """Async twin of ``_batches``."""
    if size < 1:
        raise ValueError(f"batch must be at least 1, got {size}")
    if threads is not None or reader is None:
        for chunk in _chunks(dict.fromkeys(threads) if threads is not None else scanned, size):
            yield chunk
    else:
        async for page in apages(reader, size):
            yield page


def _chunks(names: Iterable[str], size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for name in names:
        chunk.append(name)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def _rows(head: CheckpointTuple | None) -> Mapping[type, Row]:
    """The drivers' rows, answering the thread's head from what the batch read, when
    it read the thread."""
    if head is None:
        return ROWS

    def newest(driver: Any, op: ReadTuple) -> How:
        if named_checkpoint(op.config) is not None:
            return ROWS[ReadTuple](driver, op)
        return answered(head)

    return {**ROWS, ReadTuple: newest}
