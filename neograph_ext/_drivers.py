"""The two drivers of ``_flow``'s flows: they perform each operation on the saver and the
graph, sync or async, and differ by ``await`` alone.

Rules:
- A driver holds what a flow takes for its duration (the thread's lock) and releases it
  when the flow ends, however it ends.
- Reads that decode stored checkpoints run inside ``_unreadable.reading``, which names the
  thread when the saver cannot decode them.
- A sync listing is read whole and closed before the next operation: LangGraph's sync
  savers hold their (non-reentrant) lock until a listing ends.
- A lineage is read light through the saver's own tables where a reader knows them
  (``_storage.lineage_of``: no state value decoded), else by listing the thread.
- ``Invoke`` and ``Idle`` are performed as ``invoke`` performs them; ``stream`` drives
  them itself, yielding LangGraph's chunks (``streamed`` / ``astreamed``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator, Mapping
from contextlib import AsyncExitStack, ExitStack, aclosing, nullcontext
from types import TracebackType
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

from neograph_ext._call_match import checking
from neograph_ext._claim import CLAIM
from neograph_ext._decision import ResumePlan
from neograph_ext._graph import marking
from neograph_ext._head_state import output_of
from neograph_ext._history import lineage
from neograph_ext._keep import akeep, keep
from neograph_ext._keep_calls import akeep_calls, keep_calls
from neograph_ext._langgraph import custom_chunk
from neograph_ext._lock import athread_lock, thread_lock
from neograph_ext._migrate import acarry, carry
from neograph_ext._operations import (
    CarryValues,
    ClaimStep,
    Flow,
    Idle,
    Invoke,
    KeepTasks,
    ListThread,
    LoadDescriptions,
    Op,
    ReadLineage,
    ReadStampOrder,
    ReadSubgraphValues,
    ReadTuple,
    ReadValues,
    StoreDescription,
    TakeLock,
    Tell,
)
from neograph_ext._stamp import Stamp
from neograph_ext._stamp_order import aorder, order
from neograph_ext._stamp_store import aload, load
from neograph_ext._storage import alineage_of, areader_for, lineage_of, reader_for
from neograph_ext._subgraph_misread import subgraph_values
from neograph_ext._telemetry import (
    AsyncHerald,
    Herald,
    atold_outside,
    notice,
    recorded,
    told,
    told_outside,
)
from neograph_ext._thread import ThreadCall, whole_thread
from neograph_ext._unreadable import reading

__all__ = [
    "IDLE_MARK",
    "AsyncDriver",
    "Driver",
    "amarked",
]

_T = TypeVar("_T")

IDLE_MARK = ""
"""The run mark of replaying a thread with nothing to do: never stored, nothing is written."""

_END = object()
"""What ``anext`` returns for an exhausted stream."""


class Driver:
    """Performs a flow's operations with the saver's and graph's sync API."""

    def __init__(self, call: ThreadCall) -> None:
        self.call = call
        self._held = ExitStack()
        self._telling: ResumePlan | None = None
        """A decision told (``Tell``) whose event the next invocation carries."""
        self._notice: object = None
        """What a ``custom`` stream is told first of that decision (``notice``)."""

    def __enter__(self) -> Driver:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._held.close()

    def run(self, flow: Flow[_T]) -> _T:
        """Drive ``flow`` to its end; its result."""
        sent: Any = None
        while True:
            try:
                op = flow.send(sent)
            except StopIteration as done:
                return cast("_T", done.value)
            sent = self.perform(op)

    def stream(self, flow: Flow[Any]) -> Iterator[Any]:
        """Drive ``flow``, yielding the chunks of LangGraph's ``stream`` for its
        invocations (and, with nothing to invoke, for the thread as it stands)."""
        graph, stamp, sent = self.call.graph, self.call.stamp, None
        while True:
            try:
                op = flow.send(sent)
            except StopIteration:
                return
            sent = None
            if isinstance(op, Invoke):
                yield from _noticed(self, op.kwargs)
                with marking(stamp, op.mark), checking():
                    yield from graph.stream(op.input, self._told(op.config), **op.kwargs)
            elif isinstance(op, Idle):
                yield from _noticed(self, op.kwargs)
                with marking(stamp, IDLE_MARK):
                    yield from graph.stream(None, self._told(op.config), **op.kwargs)
            else:
                sent = self.perform(op)

    def perform(self, op: Op) -> Any:
        """Carry out one operation; what the flow is sent back."""
        call = self.call
        graph, saver, thread_id = call.graph, call.saver, call.thread_id
        if isinstance(op, ReadTuple):
            with reading(thread_id):
                return saver.get_tuple(op.config)
        if isinstance(op, ReadLineage):
            reader = reader_for(saver)
            with reading(thread_id):
                walked = (
                    lineage_of(reader, thread_id, op.head_id, op.next_nodes, op.described)
                    if reader is not None
                    else None
                )
            if walked is not None:
                return walked
            listing = saver.list(whole_thread(op.config))
            try:
                with reading(thread_id):
                    return lineage(
                        listing, op.head_id, next_nodes=op.next_nodes, described=op.described
                    )
            finally:
                _close(listing)
        if isinstance(op, ListThread):
            listing = saver.list(whole_thread(op.config))
            try:
                with reading(thread_id):
                    return list(listing)
            finally:
                _close(listing)
        if isinstance(op, LoadDescriptions):
            return load(saver, op.wanted)
        if isinstance(op, ReadValues):
            return graph.get_state(op.config).values
        if isinstance(op, ReadSubgraphValues):
            return subgraph_values(graph.get_state(op.config, subgraphs=True), op.nodes)
        if isinstance(op, ReadStampOrder):
            return order(saver, op.owner)
        if isinstance(op, TakeLock):
            policy = call.lock
            lock = thread_lock(saver, thread_id, on_busy=policy.on_busy, timeout=policy.timeout)
            return self._held.enter_context(lock)
        if isinstance(op, StoreDescription):
            return graph.neograph_ext_save(saver)
        if isinstance(op, CarryValues):
            return carry(graph, saver, op.config, op.plan, op.carrying, call.stamp, op.decision)
        if isinstance(op, KeepTasks):
            shape = graph.neograph_ext_entrypoint
            with marking(call.stamp, op.mark):
                if shape is not None:
                    kept = (op.nodes, op.upto)
                    return keep_calls(graph, saver, op.target, shape, kept, call.stamp, op.mark)
                return keep(graph, saver, op.target, op.nodes, call.stamp, op.mark)
        if isinstance(op, ClaimStep):
            return saver.put_writes(op.config, op.writes, CLAIM)
        if isinstance(op, Tell):
            self._telling, self._notice = _telling(call, op.plan), notice(op.plan)
            return None
        if isinstance(op, Invoke):
            with marking(call.stamp, op.mark), checking():
                return graph.invoke(op.input, self._told(op.config), **op.kwargs)
        if self._telling is not None:
            told_outside(op.config, self._telling)
        if op.stored is not None:
            return op.stored[0]
        return output_of(graph, graph.get_state(op.config).values)

    def _told(self, config: RunnableConfig) -> RunnableConfig:
        """``config``, carrying the decision told, for the call's first invocation."""
        plan, self._telling = self._telling, None
        return config if plan is None else told(config, plan, Herald, self.call.graph.config)


class AsyncDriver:
    """Async twin of ``Driver``."""

    def __init__(self, call: ThreadCall) -> None:
        self.call = call
        self._held = AsyncExitStack()
        self._telling: ResumePlan | None = None
        self._notice: object = None

    async def __aenter__(self) -> AsyncDriver:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._held.aclose()

    async def run(self, flow: Flow[_T]) -> _T:
        """Async twin of ``Driver.run``."""
        sent: Any = None
        while True:
            try:
                op = flow.send(sent)
            except StopIteration as done:
                return cast("_T", done.value)
            sent = await self.perform(op)

    async def stream(self, flow: Flow[Any]) -> AsyncIterator[Any]:
        """Async twin of ``Driver.stream``."""
        graph, stamp, sent = self.call.graph, self.call.stamp, None
        while True:
            try:
                op = flow.send(sent)
            except StopIteration:
                return
            sent = None
            if isinstance(op, Invoke):
                for chunk in _noticed(self, op.kwargs):
                    yield chunk
                chunks = graph.astream(op.input, self._told(op.config), **op.kwargs)
                async for chunk in amarked(stamp, op.mark, chunks, checked=True):
                    yield chunk
            elif isinstance(op, Idle):
                for chunk in _noticed(self, op.kwargs):
                    yield chunk
                chunks = graph.astream(None, self._told(op.config), **op.kwargs)
                async for chunk in amarked(stamp, IDLE_MARK, chunks):
                    yield chunk
            else:
                sent = await self.perform(op)

    async def perform(self, op: Op) -> Any:
        """Async twin of ``Driver.perform``."""
        call = self.call
        graph, saver, thread_id = call.graph, call.saver, call.thread_id
        if isinstance(op, ReadTuple):
            with reading(thread_id):
                return await saver.aget_tuple(op.config)
        if isinstance(op, ReadLineage):
            reader = areader_for(saver)
            with reading(thread_id):
                walked = (
                    await alineage_of(reader, thread_id, op.head_id, op.next_nodes, op.described)
                    if reader is not None
                    else None
                )
                if walked is not None:
                    return walked
                return lineage(
                    [tup async for tup in saver.alist(whole_thread(op.config))],
                    op.head_id,
                    next_nodes=op.next_nodes,
                    described=op.described,
                )
        if isinstance(op, ListThread):
            with reading(thread_id):
                return [tup async for tup in saver.alist(whole_thread(op.config))]
        if isinstance(op, LoadDescriptions):
            return await aload(saver, op.wanted)
        if isinstance(op, ReadValues):
            return (await graph.aget_state(op.config)).values
        if isinstance(op, ReadSubgraphValues):
            return subgraph_values(await graph.aget_state(op.config, subgraphs=True), op.nodes)
        if isinstance(op, ReadStampOrder):
            return await aorder(saver, op.owner)
        if isinstance(op, TakeLock):
            policy = call.lock
            lock = athread_lock(saver, thread_id, on_busy=policy.on_busy, timeout=policy.timeout)
            return await self._held.enter_async_context(lock)
        if isinstance(op, StoreDescription):
            return await graph.neograph_ext_asave(saver)
        if isinstance(op, CarryValues):
            return await acarry(
                graph, saver, op.config, op.plan, op.carrying, call.stamp, op.decision
            )
        if isinstance(op, KeepTasks):
            shape = graph.neograph_ext_entrypoint
            with marking(call.stamp, op.mark):
                if shape is not None:
                    kept = (op.nodes, op.upto)
                    return await akeep_calls(
                        graph, saver, op.target, shape, kept, call.stamp, op.mark
                    )
                return await akeep(graph, saver, op.target, op.nodes, call.stamp, op.mark)
        if isinstance(op, ClaimStep):
            return await saver.aput_writes(op.config, op.writes, CLAIM)
        if isinstance(op, Tell):
            self._telling, self._notice = _telling(call, op.plan), notice(op.plan)
            return None
        if isinstance(op, Invoke):
            with marking(call.stamp, op.mark), checking():
                return await graph.ainvoke(op.input, self._told(op.config), **op.kwargs)
        if self._telling is not None:
            await atold_outside(op.config, self._telling)
        if op.stored is not None:
            return op.stored[0]
        return output_of(graph, (await graph.aget_state(op.config)).values)

    def _told(self, config: RunnableConfig) -> RunnableConfig:
        """Async twin of ``Driver._told``."""
        plan, self._telling = self._telling, None
        return config if plan is None else told(config, plan, AsyncHerald, self.call.graph.config)


def _telling(call: ThreadCall, plan: ResumePlan) -> ResumePlan | None:
    """The decision whose event the call's first invocation carries: with telemetry only."""
    telemetry = call.graph.neograph_ext_telemetry
    return None if telemetry is None else recorded(plan, telemetry)


def _noticed(driver: Driver | AsyncDriver, kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
    """The chunk a stream yields first about the decision told (``notice``), once."""
    told, driver._notice = driver._notice, None
    return () if told is None else custom_chunk(driver.call.graph, kwargs, told)


def _close(listing: Iterable[CheckpointTuple]) -> None:
    """Close a listing, which may be left part-read by an error: a sync saver may hold
    its lock (and a cursor) until its listing ends."""
    close = getattr(listing, "close", None)
    if callable(close):
        close()


async def amarked(
    stamp: Stamp, mark: str, chunks: AsyncIterator[Any], *, checked: bool = False
) -> AsyncIterator[Any]:
    """``chunks``, with ``mark`` bound while the graph starts, which is when it is read;
    ``checked``: cached calls compared with the calls made (``_call_match.checking``) too.

    Not bound across yields: a consumer may pull each chunk in a task of its own (a
    server does, and LangGraph's v3 event stream), and a context variable set in one
    task cannot be reset in another.
    """
    async with aclosing(cast("AsyncGenerator[Any, None]", chunks)) as started:
        with marking(stamp, mark), checking() if checked else nullcontext():
            first = await anext(started, _END)
        if first is _END:
            return
        yield first
        while True:
            # A task a later step starts copies this context: it must see the check too.
            with checking() if checked else nullcontext():
                chunk = await anext(started, _END)
            if chunk is _END:
                return
            yield chunk
