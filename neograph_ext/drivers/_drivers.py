"""The two drivers of the flows (``_flow``, ``_keep``, ``_migrate``, ...): a table of how
each basic operation is performed on the saver and the graph (``ROWS``), written once,
and a sync and an async driver that make or await its calls, differing by ``await`` alone.

Rules:
- A driver holds what a flow takes for its duration (the thread's lock) and releases it
  when the flow ends, however it ends.
- Reads that decode stored checkpoints run inside ``_unreadable.reading``, which names the
  thread when the saver cannot decode them.
- A sync listing is read whole and closed before the next operation: LangGraph's sync
  savers hold their (non-reentrant) lock until a listing ends.
- A lineage is read light through the saver's own tables where a reader knows them
  (``_storage.lineage_of``: no state value decoded); else the flow lists the thread.
- ``Invoke`` and ``Idle`` are performed as ``invoke`` performs them; ``stream`` drives
  them itself, yielding LangGraph's chunks (``streamed`` / ``astreamed``), and ends the
  flow at ``Idle``.
- A driver made with other rows (``_fleet``, ``_offline``) answers those operations its
  own way; an operation its rows lack is refused.
"""

from __future__ import annotations

from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import (
    AbstractContextManager,
    AsyncExitStack,
    ExitStack,
    aclosing,
    contextmanager,
    nullcontext,
)
from types import TracebackType
from typing import Any, NamedTuple, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

from neograph_ext.decision._decision import ResumePlan
from neograph_ext.decision._errors import GraphError
from neograph_ext.decision._history import inner_heads
from neograph_ext.decision._langgraph import custom_chunk, writes_path
from neograph_ext.decision._operations import (
    Flow,
    Idle,
    Invoke,
    ListThread,
    LoadDescriptions,
    Op,
    Put,
    PutWrites,
    ReadInnerHeads,
    ReadLineage,
    ReadStampOrder,
    ReadSubgraphValues,
    ReadTasks,
    ReadTuple,
    ReadValues,
    Store,
    TakeLock,
    Tell,
)
from neograph_ext.decision._stamp import Stamp
from neograph_ext.decision._subgraph_misread import subgraph_values
from neograph_ext.decision._unreadable import reading
from neograph_ext.drivers._call_match import checking
from neograph_ext.drivers._graph import marking
from neograph_ext.drivers._thread import ThreadCall, whole_thread
from neograph_ext.storage._lock import athread_lock, thread_lock
from neograph_ext.storage._stamp_order import aorder, order
from neograph_ext.storage._stamp_store import aload, load
from neograph_ext.storage._storage import alineage_of, areader_for, lineage_of, reader_for
from neograph_ext.storage._telemetry import (
    AsyncHerald,
    Herald,
    atold_outside,
    notice,
    recorded,
    told,
    told_outside,
)

__all__ = [
    "IDLE_MARK",
    "ROWS",
    "AsyncDriver",
    "Driver",
    "How",
    "Row",
    "amarked",
    "answered",
]

_T = TypeVar("_T")

IDLE_MARK = ""
"""The run mark of replaying a thread with nothing to do: never stored, nothing is written."""

_END = object()
"""What ``anext`` returns for an exhausted stream."""


class How(NamedTuple):
    """How both drivers perform one operation: the same call, made or awaited, each given
    what its driver holds until the flow ends."""

    call: Callable[[ExitStack], Any]
    acall: Callable[[AsyncExitStack], Awaitable[Any]]
    within: AbstractContextManager[Any] = nullcontext()
    """Entered around the call (a fresh one per operation)."""
    then: Callable[[Any], Any] = lambda found: found
    """What the flow is sent back, from what the call returned."""


class _Driving:
    """What both drivers share: the call, their rows, and the decision told."""

    def __init__(self, call: ThreadCall, rows: Mapping[type, Row] | None = None) -> None:
        self.call = call
        self.rows = ROWS if rows is None else rows
        self.telling: ResumePlan | None = None  # told (``Tell``), for the next invocation
        self.notice: object = None  # what a ``custom`` stream is told first of it

    def how(self, op: Op) -> How:
        """How to perform ``op`` (its row).

        Raises:
            GraphError: This driver's rows have none for it.
        """
        row = self.rows.get(type(op))
        if row is None:
            raise GraphError(f"this driver cannot perform {type(op).__name__}")
        return row(self, op)

    def told(
        self, config: RunnableConfig, herald: type[Herald] | type[AsyncHerald]
    ) -> RunnableConfig:
        """``config``, carrying the decision told, for the call's first invocation."""
        plan, self.telling = self.telling, None
        return config if plan is None else told(config, plan, herald, self.call.graph.config)


Row = Callable[[_Driving, Any], How]
"""How a driver performs one type of operation."""


class Driver(_Driving):
    """Performs a flow's operations with the saver's and graph's sync API."""

    def __init__(self, call: ThreadCall, rows: Mapping[type, Row] | None = None) -> None:
        super().__init__(call, rows)
        self._held = ExitStack()

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
            if isinstance(op, Invoke | Idle):
                yield from _noticed(self, op.kwargs)
                value, mark = (op.input, op.mark) if isinstance(op, Invoke) else (None, IDLE_MARK)
                with _invoking(stamp, mark, checked=isinstance(op, Invoke)):
                    yield from graph.stream(value, self.told(op.config, Herald), **op.kwargs)
                if isinstance(op, Idle):
                    return
                sent = None
            else:
                sent = self.perform(op)

    def perform(self, op: Op) -> Any:
        """Carry out one operation; what the flow is sent back."""
        how = self.how(op)
        with how.within:
            return how.then(how.call(self._held))


class AsyncDriver(_Driving):
    """Async twin of ``Driver``."""

    def __init__(self, call: ThreadCall, rows: Mapping[type, Row] | None = None) -> None:
        super().__init__(call, rows)
        self._held = AsyncExitStack()

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
            if isinstance(op, Invoke | Idle):
                for chunk in _noticed(self, op.kwargs):
                    yield chunk
                value, mark = (op.input, op.mark) if isinstance(op, Invoke) else (None, IDLE_MARK)
                chunks = graph.astream(value, self.told(op.config, AsyncHerald), **op.kwargs)
                async for chunk in amarked(stamp, mark, chunks, checked=isinstance(op, Invoke)):
                    yield chunk
                if isinstance(op, Idle):
                    return
                sent = None
            else:
                sent = await self.perform(op)

    async def perform(self, op: Op) -> Any:
        """Async twin of ``Driver.perform``."""
        how = self.how(op)
        with how.within:
            return how.then(await how.acall(self._held))


async def _ready(value: _T) -> _T:
    return value


def answered(value: Any) -> How:
    """An operation answered without I/O: ``value`` is sent back."""
    return How(lambda _: value, lambda _: _ready(value))


@contextmanager
def _invoking(stamp: Stamp, mark: str, *, checked: bool = True) -> Iterator[None]:
    """``mark`` bound while the graph runs, and (``checked``) cached calls compared with
    the calls made (``_call_match.checking``)."""
    with marking(stamp, mark), checking() if checked else nullcontext():
        yield


def _drained(listing: Iterable[CheckpointTuple]) -> list[CheckpointTuple]:
    """A listing read whole and closed (it may be left part-read by an error: a sync saver
    holds its lock until it ends)."""
    try:
        return list(listing)
    finally:
        close = getattr(listing, "close", None)
        if callable(close):
            close()


async def _collected(listing: AsyncIterator[CheckpointTuple]) -> list[CheckpointTuple]:
    return [tup async for tup in listing]


def _read_lineage(d: _Driving, op: ReadLineage) -> How:
    """The lineage read light through the saver's own tables; None when no reader knows
    them, or the reader leaves the thread out (the flow then lists the thread)."""
    saver, thread_id = d.call.saver, d.call.thread_id
    reader, areader = reader_for(saver), areader_for(saver)
    wanted = (thread_id, op.head_id, op.next_nodes, op.described)
    return How(
        lambda _: lineage_of(reader, *wanted) if reader is not None else None,
        lambda _: alineage_of(areader, *wanted) if areader is not None else _ready(None),
        reading(thread_id),
    )


def _path(put_writes: Callable[..., Any], path: Sequence[Any] | None) -> dict[str, str]:
    return {} if path is None else writes_path(put_writes, path)


def _tell(d: _Driving, op: Tell) -> How:
    """Record the decision (with telemetry only) for the first invocation to carry."""
    telemetry = d.call.graph.neograph_ext_telemetry
    d.telling = None if telemetry is None else recorded(op.plan, telemetry)
    d.notice = notice(op.plan)
    return answered(None)


def _idle(d: _Driving, op: Idle) -> How:
    """Tell the decision outside any graph run (there is none to be in)."""
    plan = d.telling
    if plan is None:
        return answered(None)
    return How(lambda _: told_outside(op.config, plan), lambda _: atold_outside(op.config, plan))


def _state(then: Callable[[Any, Any], Any], subgraphs: bool = False) -> Row:
    """A row reading a checkpoint's state (``get_state``), of which ``then`` keeps a part."""
    return lambda d, op: How(
        lambda _: d.call.graph.get_state(op.config, subgraphs=subgraphs),
        lambda _: d.call.graph.aget_state(op.config, subgraphs=subgraphs),
        then=lambda state: then(state, op),
    )


def _take_lock(d: _Driving, op: TakeLock) -> How:
    saver, thread_id, policy = d.call.saver, d.call.thread_id, d.call.lock
    timeout = policy.timeout
    return How(
        lambda held: held.enter_context(
            thread_lock(saver, thread_id, on_busy=policy.on_busy, timeout=timeout)
        ),
        lambda held: held.enter_async_context(
            athread_lock(saver, thread_id, on_busy=policy.on_busy, timeout=timeout)
        ),
    )


ROWS: Mapping[type, Row] = {
    ReadTuple: lambda d, op: How(
        lambda _: d.call.saver.get_tuple(op.config),
        lambda _: d.call.saver.aget_tuple(op.config),
        reading(d.call.thread_id),
    ),
    ReadLineage: _read_lineage,
    ListThread: lambda d, op: How(
        lambda _: d.call.saver.list(whole_thread(op.config, op.namespace)),
        lambda _: _collected(d.call.saver.alist(whole_thread(op.config, op.namespace))),
        reading(d.call.thread_id),
        _drained,
    ),
    LoadDescriptions: lambda d, op: How(
        lambda _: load(d.call.saver, op.wanted), lambda _: aload(d.call.saver, op.wanted)
    ),
    ReadValues: _state(lambda state, _: state.values),
    ReadSubgraphValues: _state(lambda state, op: subgraph_values(state, op.nodes), True),
    ReadInnerHeads: _state(lambda state, op: inner_heads(state, op.nodes), True),
    ReadTasks: _state(lambda state, _: state.tasks),
    ReadStampOrder: lambda d, op: How(
        lambda _: order(d.call.saver, op.owner, op.declared),
        lambda _: aorder(d.call.saver, op.owner, op.declared),
    ),
    TakeLock: _take_lock,
    Store: lambda d, op: How(lambda _: op.run(*op.args), lambda _: op.arun(*op.args)),
    Put: lambda d, op: How(
        lambda _: d.call.saver.put(op.config, op.checkpoint, op.metadata, op.versions),
        lambda _: d.call.saver.aput(op.config, op.checkpoint, op.metadata, op.versions),
    ),
    PutWrites: lambda d, op: How(
        lambda _: d.call.saver.put_writes(
            op.config, op.writes, op.task_id, **_path(d.call.saver.put_writes, op.path)
        ),
        lambda _: d.call.saver.aput_writes(
            op.config, op.writes, op.task_id, **_path(d.call.saver.aput_writes, op.path)
        ),
    ),
    Tell: _tell,
    Invoke: lambda d, op: How(
        lambda _: d.call.graph.invoke(op.input, d.told(op.config, Herald), **op.kwargs),
        lambda _: d.call.graph.ainvoke(op.input, d.told(op.config, AsyncHerald), **op.kwargs),
        _invoking(d.call.stamp, op.mark),
    ),
    Idle: _idle,
}
"""How each basic operation is performed: one row per operation type (``_operations``)."""


def _noticed(driver: _Driving, kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
    """The chunk a stream yields first about the decision told (``notice``), once."""
    told, driver.notice = driver.notice, None
    return () if told is None else custom_chunk(driver.call.graph, kwargs, told)


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
