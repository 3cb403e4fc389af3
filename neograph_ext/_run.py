"""Resuming the threads of a stamped graph: the execution layer.

Reads as a recipe: ``_read`` reads the thread and decides, ``_invocations`` says what
to invoke, and the drivers here invoke it under the thread's lock. The most frequent
call, a resume of a head that ``run`` itself verified, needs no plan: it is continued
as soon as its head is read (``_continuing``).

Rules:
- Reading and deciding are shared; the sync and async drivers below differ by
  ``await`` alone.
- Nothing is deleted or overwritten: a rewind forks (``_invocations``).
- The caller's input and config are never mutated.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    aclosing,
    asynccontextmanager,
    contextmanager,
    nullcontext,
)
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.pregel import Pregel
from langgraph.types import Command

from neograph_ext._errors import GraphError
from neograph_ext._graph import StampedGraph, marking
from neograph_ext._head import _output, _stored_input
from neograph_ext._history import reading, resumable
from neograph_ext._invocations import (
    _continued,
    _holds,
    _Invocation,
    _prepare,
    _Prepared,
    _Replay,
    _When,
    durable,
)
from neograph_ext._keep import akeep, keep
from neograph_ext._lock import athread_lock, thread_lock
from neograph_ext._migrate import acarry, carry
from neograph_ext._plan import PlanKind, ResumePlan
from neograph_ext._policy import Asked, LockPolicy, ResumePolicy, asked
from neograph_ext._read import (
    _afollowed,
    _ahead,
    _anewest,
    _aread,
    _aread_from,
    _by,
    _Call,
    _call,
    _followed,
    _head,
    _moved,
    _named,
    _newest,
    _read,
    _read_from,
    _with_checkpoint,
)
from neograph_ext._stamp import Stamp, encode_run, input_digest

__all__ = ["aplan", "arun", "astream", "plan", "run", "stream"]

logger = logging.getLogger("neograph_ext")

_END = object()
"""What ``anext`` returns for an exhausted stream."""

_IDLE = ""
"""The run mark of replaying a thread with nothing to do: never stored, nothing is written."""


def plan(
    graph: Pregel[Any, Any, Any, Any],
    config: RunnableConfig,
    *,
    resume: ResumePolicy | None = None,
    **deprecated: Any,
) -> ResumePlan:
    """What ``run`` would do with the thread in ``config``; executes and writes nothing.

    Unlike ``run``, which trusts a head it verified itself, ``plan`` always reads the
    thread's lineage, so ``kept`` and ``rerun`` are complete.

    Args:
        graph: A graph made by ``neograph_ext.compile`` with a checkpointer.
        config: Names the thread (``configurable.thread_id``) and optionally a
            ``checkpoint_id`` to plan from.
        resume: Plan as ``run(..., resume=resume)`` would; by default under the
            graph's policy (``compile(resume=...)``).
        **deprecated: 0.2's ``replay_turns=`` (now ``ResumePolicy.replay_turns``),
            with a ``DeprecationWarning``.

    Returns:
        The decision, with each change explained at field level.

    Raises:
        GraphError: The graph was not compiled by neograph-ext, has no checkpointer,
            or the config names no thread; or ``replay_turns`` is given with ``resume``.
        UnreadableCheckpointError: The thread's stored checkpoints cannot be decoded.
        ValueError: ``resume`` names a channel or type the state does not have.
    """
    return _read(_call(graph, config, _planning("plan", resume, deprecated)), full=True)[0]


async def aplan(
    graph: Pregel[Any, Any, Any, Any],
    config: RunnableConfig,
    *,
    resume: ResumePolicy | None = None,
    **deprecated: Any,
) -> ResumePlan:
    """Async twin of ``plan``."""
    given = _planning("aplan", resume, deprecated)
    return (await _aread(_call(graph, config, given), full=True))[0]


def _planning(function: str, resume: ResumePolicy | None, deprecated: Mapping[str, Any]) -> Asked:
    """What ``plan`` was asked, refusing keywords it does not take, as Python would."""
    given, unknown = asked(function, resume, None, deprecated, stacklevel=4)
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument {next(iter(unknown))!r}")
    return given


def run(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    resume: ResumePolicy | None = None,
    lock: LockPolicy | None = None,
    **kwargs: Any,
) -> Any:
    """Run or resume a thread, rewinding past checkpoints that other types wrote.

    Args:
        graph: A graph made by ``neograph_ext.compile`` with a checkpointer.
        input: The run's input; ignored when resuming an incomplete thread, and a
            ``Command(resume=...)`` answers an interrupt as usual.
        config: Names the thread; a ``checkpoint_id`` in it is planned from.
        resume: What the resume does about changes (``ResumePolicy``: rewind or raise,
            keep or migrate stored values, replay later turns, re-answer a question);
            replaces the graph's (``compile(resume=...)``) whole for this call.
        lock: How the call waits for a thread another process runs (``LockPolicy``);
            replaces the graph's (``compile(lock=...)``) whole for this call.
        **kwargs: Passed to ``graph.invoke``; ``durability`` defaults to ``"sync"``.
            0.2's ``auto_resume``, ``reanswer``, ``replay_turns``,
            ``strict_unverified`` (now ``ResumePolicy`` fields) and ``on_busy``,
            ``lock_timeout`` (now ``LockPolicy`` fields) still work, set on the graph's
            policies, with a ``DeprecationWarning``.

    Returns:
        What ``graph.invoke`` returns; for a complete, unchanged thread, its stored output.

    Raises:
        CheckpointSchemaError: Strict mode (``on_change="raise"``) and something
            changed, or a change that cannot be rewound safely, or
            (``on_unverified="raise"``) checkpoints that cannot be verified; raised
            before any node runs.
        GraphError: The graph or config cannot be used, or a 0.2 keyword is given
            with the policy that covers it.
        StampLostError: The saver drops the metadata the stamp rides in (checked
            once per saver class and process, before the first invocation).
        ThreadBusyError: Another process holds the thread's lock.
        UnreadableCheckpointError: The thread's stored checkpoints cannot be decoded.
        ValueError: ``resume`` names a channel or type the state does not have.
    """
    given, kwargs = asked("run", resume, lock, kwargs)
    call = _call(graph, config, given)
    first = _locks_first(call, input)
    with _held(call, first):
        head = _head(call) if first else None
        continued = _continuing(call, input, head)
        if continued is not None:
            with marking(call.stamp, continued):
                return graph.invoke(None, call.config, **durable(kwargs, graph))
        with _planned(call, input, kwargs, first, head) as (prepared, work):
            if not prepared.invocations:
                if prepared.stored is not None:
                    return prepared.stored[0]
                return _output(graph, graph.get_state(_idle(call, work)).values)
            result = None
            for step in prepared.invocations:
                if _due(call, step):
                    value, mark = _begun(call, step)
                    with marking(call.stamp, mark):
                        result = graph.invoke(value, step.config, **prepared.kwargs)
            return result


async def arun(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    resume: ResumePolicy | None = None,
    lock: LockPolicy | None = None,
    **kwargs: Any,
) -> Any:
    """Async twin of ``run``."""
    given, kwargs = asked("arun", resume, lock, kwargs)
    call = _call(graph, config, given)
    first = _locks_first(call, input)
    async with _aheld(call, first):
        head = await _ahead(call) if first else None
        continued = await _acontinuing(call, input, head)
        if continued is not None:
            with marking(call.stamp, continued):
                return await graph.ainvoke(None, call.config, **durable(kwargs, graph))
        async with _aplanned(call, input, kwargs, first, head) as (prepared, work):
            if not prepared.invocations:
                if prepared.stored is not None:
                    return prepared.stored[0]
                return _output(graph, (await graph.aget_state(_idle(call, work))).values)
            result = None
            for step in prepared.invocations:
                if await _adue(call, step):
                    value, mark = await _abegun(call, step)
                    with marking(call.stamp, mark):
                        result = await graph.ainvoke(value, step.config, **prepared.kwargs)
            return result


def stream(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    resume: ResumePolicy | None = None,
    lock: LockPolicy | None = None,
    **kwargs: Any,
) -> Iterator[Any]:
    """Like ``run``, yielding exactly the chunks of LangGraph's ``stream``.

    A complete, unchanged thread yields what LangGraph yields when resuming a thread
    with nothing left to do: its stored state once if ``stream_mode`` includes
    ``"values"``, else nothing. No node runs and nothing is written.
    """
    given, kwargs = asked("stream", resume, lock, kwargs)
    call = _call(graph, config, given)
    first = _locks_first(call, input)
    with _held(call, first):
        head = _head(call) if first else None
        continued = _continuing(call, input, head)
        if continued is not None:
            with marking(call.stamp, continued):
                yield from graph.stream(None, call.config, **durable(kwargs, graph))
            return
        with _planned(call, input, kwargs, first, head) as (prepared, work):
            if not prepared.invocations:
                with marking(call.stamp, _IDLE):
                    yield from graph.stream(None, _idle(call, work), **prepared.kwargs)
                return
            for step in prepared.invocations:
                if _due(call, step):
                    value, mark = _begun(call, step)
                    with marking(call.stamp, mark):
                        yield from graph.stream(value, step.config, **prepared.kwargs)


async def astream(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    resume: ResumePolicy | None = None,
    lock: LockPolicy | None = None,
    **kwargs: Any,
) -> AsyncIterator[Any]:
    """Async twin of ``stream``."""
    given, kwargs = asked("astream", resume, lock, kwargs)
    call = _call(graph, config, given)
    first = _locks_first(call, input)
    async with _aheld(call, first):
        head = await _ahead(call) if first else None
        continued = await _acontinuing(call, input, head)
        if continued is not None:
            chunks = graph.astream(None, call.config, **durable(kwargs, graph))
            async for chunk in _amarked(call.stamp, continued, chunks):
                yield chunk
            return
        async with _aplanned(call, input, kwargs, first, head) as (prepared, work):
            if not prepared.invocations:
                idle = graph.astream(None, _idle(call, work), **prepared.kwargs)
                async for chunk in _amarked(call.stamp, _IDLE, idle):
                    yield chunk
                return
            for step in prepared.invocations:
                if await _adue(call, step):
                    value, mark = await _abegun(call, step)
                    chunks = graph.astream(value, step.config, **prepared.kwargs)
                    async for chunk in _amarked(call.stamp, mark, chunks):
                        yield chunk


def _idle(call: _Call, carried: bool) -> RunnableConfig:
    """The checkpoint whose state a call with nothing left to do returns or streams, as
    LangGraph rebuilds it (every channel kind, ``DeltaChannel`` included): the call's,
    or the thread's newest once values were carried onto a fork. ``run`` reads it
    (``get_state``: resuming a named checkpoint would be time travel, which writes a
    fork); ``stream`` resumes it, as LangGraph streams a thread with nothing to do."""
    return _with_checkpoint(call.config, None) if carried else call.config


async def _amarked(stamp: Stamp, mark: str, chunks: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``chunks``, with ``mark`` bound while the graph starts, which is when it is read.

    Not bound across yields: a consumer may pull each chunk in a task of its own (a
    server does, and LangGraph's v3 event stream), and a context variable set in one
    task cannot be reset in another.
    """
    async with aclosing(cast("AsyncGenerator[Any, None]", chunks)) as started:
        with marking(stamp, mark):
            first = await anext(started, _END)
        if first is _END:
            return
        yield first
        async for chunk in started:
            yield chunk


@contextmanager
def _planned(
    call: _Call, input: Any, kwargs: Mapping[str, Any], locked: bool, head: CheckpointTuple | None
) -> Iterator[tuple[_Prepared, bool]]:
    """What to invoke for the call, and whether there is work: then under the thread's
    lock, taken here unless the caller holds it (``locked``: a resume takes it, then
    reads its ``head``, before planning: ``_locks_first``), planned again if the thread
    moved meanwhile (``_settled``).

    With nothing to invoke, the caller replays the thread (``_idle``).
    """
    newest = _newest(call)
    read = _read_from(call, head) if locked else _read(call)
    prepared = _prepare(call, *read, input, kwargs)
    if not prepared.invocations and prepared.carry is None:
        yield prepared, False
        return
    with _held(call, not locked):
        yield _settled(call, newest, read[1], prepared, locked, input, kwargs), True


@asynccontextmanager
async def _aplanned(
    call: _Call, input: Any, kwargs: Mapping[str, Any], locked: bool, head: CheckpointTuple | None
) -> AsyncIterator[tuple[_Prepared, bool]]:
    """Async twin of ``_planned``."""
    newest = await _anewest(call)
    read = await _aread_from(call, head) if locked else await _aread(call)
    prepared = _prepare(call, *read, input, kwargs)
    if not prepared.invocations and prepared.carry is None:
        yield prepared, False
        return
    async with _aheld(call, not locked):
        yield await _asettled(call, newest, read[1], prepared, locked, input, kwargs), True


def _continuing(call: _Call, input: Any, head: CheckpointTuple | None) -> str | None:
    """For a resume (input None) of a head that ``run`` verified and that waits on
    nodes, the run mark to continue it with (``_continued``), once the stamp's
    description is stored: nothing to plan. None for any other call or head, which is
    then planned.
    """
    mark = _continued(call, head) if input is None else None
    if mark is not None:
        call.graph.neograph_ext_save(call.saver)
        logger.info("thread %r: %s", call.thread_id, PlanKind.CONTINUE)
    return mark


async def _acontinuing(call: _Call, input: Any, head: CheckpointTuple | None) -> str | None:
    """Async twin of ``_continuing``."""
    mark = _continued(call, head) if input is None else None
    if mark is not None:
        await call.graph.neograph_ext_asave(call.saver)
        logger.info("thread %r: %s", call.thread_id, PlanKind.CONTINUE)
    return mark


def _locks_first(call: _Call, input: Any) -> bool:
    """Whether the call takes the thread's lock before reading the thread.

    A resume of the newest checkpoint (no input, or an answer) nearly always has work
    to do: read under the lock, the thread is read once, and not again to check that it
    did not move meanwhile. Any other call reads first and locks only for work.
    """
    return (input is None or isinstance(input, Command)) and _named(call) is None


def _held(call: _Call, take: bool) -> AbstractContextManager[None]:
    """The thread's lock if ``take``; else nothing (held already, or not needed yet)."""
    if not take:
        return nullcontext()
    return thread_lock(
        call.saver, call.thread_id, on_busy=call.lock.on_busy, timeout=call.lock.timeout
    )


def _aheld(call: _Call, take: bool) -> AbstractAsyncContextManager[None]:
    """Async twin of ``_held``."""
    if not take:
        return nullcontext()
    return athread_lock(
        call.saver, call.thread_id, on_busy=call.lock.on_busy, timeout=call.lock.timeout
    )


def _settled(
    call: _Call,
    newest: CheckpointTuple | None,
    head: CheckpointTuple | None,
    prepared: _Prepared,
    planned_locked: bool,
    input: Any,
    kwargs: Mapping[str, Any],
) -> _Prepared:
    """What to invoke, once the thread's lock is held.

    Unless it was planned under the lock (``planned_locked``), planned again when the
    thread moved while this call waited for the lock (``_followed``, ``_moved``); a plan
    that carries values first writes the fork that carries them, then plans again from
    it.
    """
    locked = _followed(call, newest)
    if locked is not call or (
        not planned_locked and _moved(head, call.saver.get_tuple(call.config))
    ):
        prepared = _prepare(locked, *_read(locked), input, kwargs)
    if prepared.carry is not None:
        locked = _carried(
            locked, carry(call.graph, call.saver, locked.config, prepared.carry, *_by(call))
        )
        prepared = _prepare(locked, *_read(locked), input, kwargs)
    return prepared


async def _asettled(
    call: _Call,
    newest: CheckpointTuple | None,
    head: CheckpointTuple | None,
    prepared: _Prepared,
    planned_locked: bool,
    input: Any,
    kwargs: Mapping[str, Any],
) -> _Prepared:
    """Async twin of ``_settled``."""
    locked = await _afollowed(call, newest)
    if locked is not call or (
        not planned_locked and _moved(head, await call.saver.aget_tuple(call.config))
    ):
        prepared = _prepare(locked, *(await _aread(locked)), input, kwargs)
    if prepared.carry is not None:
        locked = _carried(
            locked,
            await acarry(call.graph, call.saver, locked.config, prepared.carry, *_by(call)),
        )
        prepared = _prepare(locked, *(await _aread(locked)), input, kwargs)
    return prepared


def _due(call: _Call, step: _Invocation) -> bool:
    """Whether ``step`` runs: always, or when the thread is as its condition wants it."""
    return step.when is _When.ALWAYS or _holds(
        step.when, call.graph, call.saver.get_tuple(step.config)
    )


async def _adue(call: _Call, step: _Invocation) -> bool:
    """Async twin of ``_due``."""
    return step.when is _When.ALWAYS or _holds(
        step.when, call.graph, await call.saver.aget_tuple(step.config)
    )


def _begun(call: _Call, step: _Invocation) -> tuple[Any, str]:
    """The input and run mark to invoke ``step`` with, once the stamp's description is
    stored and, for a keeping rewind, the fork holding the kept tasks' writes is made."""
    call.graph.neograph_ext_save(call.saver)
    value, mark = _fed(call, step)
    if step.keep:
        with marking(call.stamp, mark):
            keep(call.graph, call.saver, *step.keep, call.stamp, mark)
    return value, mark


async def _abegun(call: _Call, step: _Invocation) -> tuple[Any, str]:
    """Async twin of ``_begun``."""
    await call.graph.neograph_ext_asave(call.saver)
    value, mark = await _afed(call, step)
    if step.keep:
        with marking(call.stamp, mark):
            await akeep(call.graph, call.saver, *step.keep, call.stamp, mark)
    return value, mark


_PLAIN_KINDS = frozenset(
    {PlanKind.FRESH, PlanKind.CONTINUE, PlanKind.UP_TO_DATE, PlanKind.UNVERIFIED}
)
"""Plans that leave LangGraph nothing to change: a served call of one is LangGraph's."""


def served(
    graph: StampedGraph, input: Any, config: RunnableConfig, kwargs: Mapping[str, Any]
) -> Iterator[Any]:
    """A plain ``stream`` call on a graph compiled with ``auto_resume``.

    Planned as ``run`` plans it, under the graph's whole policies (``compile(resume=...,
    lock=...)``). When nothing changed (``_as_given``: a new thread, a continue, an
    up-to-date or (unless refused) unverified thread, from the newest checkpoint or from
    a ``checkpoint_id``), the call is LangGraph's own, with the caller's input, config and
    keywords as given, so on unchanged code the option is invisible; its checkpoints
    carry a run mark that says the lineage was checked, so the next call needs no plan,
    and the stamp's description is stored afterwards, as by any plain call.
    Otherwise (a rewind, a migrate, a strict error) it is ``stream`` under those
    policies, whose invocations keep the caller's keywords, ``durability`` included.
    """
    resume = graph.neograph_ext_auto_resume
    call = _call(graph, config, Asked("stream", resume))
    with reading(call.thread_id):
        head = resumable(call.saver.get_tuple(config), call.thread_id)
    decision = _read_from(call, head)[0] if head is not None else None
    if not _as_given(decision, call.resume):
        yield from stream(graph, input, config, resume=resume, **kwargs)
        return
    with marking(call.stamp, _plain_mark(call, decision, head, input)):
        yield from graph.neograph_ext_plain_stream(input, config, kwargs, call.saver)


async def aserved(
    graph: StampedGraph, input: Any, config: RunnableConfig, kwargs: Mapping[str, Any]
) -> AsyncGenerator[Any, None]:
    """Async twin of ``served``."""
    resume = graph.neograph_ext_auto_resume
    call = _call(graph, config, Asked("astream", resume))
    with reading(call.thread_id):
        head = resumable(await call.saver.aget_tuple(config), call.thread_id)
    decision = (await _aread_from(call, head))[0] if head is not None else None
    if not _as_given(decision, call.resume):
        chunks = astream(graph, input, config, resume=resume, **kwargs)
    else:
        mark = _plain_mark(call, decision, head, input)
        plain = graph.neograph_ext_plain_astream(input, config, kwargs, call.saver)
        chunks = _amarked(call.stamp, mark, plain)
    async with aclosing(cast("AsyncGenerator[Any, None]", chunks)) as served_chunks:
        async for chunk in served_chunks:
            yield chunk


def _as_given(decision: ResumePlan | None, resume: ResumePolicy) -> bool:
    """Whether a served call is LangGraph's own: a new thread, or a plan that leaves
    LangGraph nothing to change (``_PLAIN_KINDS``) and that the policy does not refuse
    (``on_unverified="raise"``)."""
    if decision is None:
        return True
    if decision.kind is PlanKind.UNVERIFIED:
        return resume.on_unverified == "resume"
    return decision.kind in _PLAIN_KINDS


def _plain_mark(
    call: _Call, decision: ResumePlan | None, head: CheckpointTuple | None, input: Any
) -> str:
    """The run mark of a served call LangGraph runs as given: the plan's kind (so an
    unverified thread stays unverified) and the input its turn started with."""
    kind = decision.kind if decision is not None else PlanKind.FRESH
    given = None if input is None or isinstance(input, Command) else input_digest(input)
    return encode_run(call.stamp, kind, given if given is not None else _stored_input(head))


def _fed(call: _Call, step: _Invocation) -> tuple[Any, str]:
    """The input and run mark of an invocation, reading a replayed turn's stored input."""
    if not isinstance(step.input, _Replay):
        return step.input, step.mark
    return _replayed(call, step.input, call.saver.get_tuple(step.input.config))


async def _afed(call: _Call, step: _Invocation) -> tuple[Any, str]:
    """Async twin of ``_fed``."""
    if not isinstance(step.input, _Replay):
        return step.input, step.mark
    return _replayed(call, step.input, await call.saver.aget_tuple(step.input.config))


def _replayed(call: _Call, replay: _Replay, stored: CheckpointTuple | None) -> tuple[Any, str]:
    if stored is None:
        raise GraphError(
            f"thread {call.thread_id!r}: the input checkpoint of a turn to replay is gone "
            f"({replay.config['configurable'].get('checkpoint_id')}); nothing after it was "
            "replayed"
        )
    value = stored.checkpoint["channel_values"].get("__start__")
    logger.info(
        "thread %r: replaying the input of the turn that started at checkpoint %s",
        call.thread_id,
        stored.checkpoint["id"],
    )
    return value, encode_run(call.stamp, PlanKind.REWIND, input_digest(value), replay.source)


def _carried(call: _Call, written: RunnableConfig) -> _Call:
    """The call on the checkpoint just carried: the thread's newest, so it is resumed
    (finished tasks and interrupts kept) rather than forked again."""
    checkpoint_id = (written.get("configurable") or {}).get("checkpoint_id")
    logger.info(
        "thread %r: wrote checkpoint %s carrying the values on", call.thread_id, checkpoint_id
    )
    return call._replace(config=_with_checkpoint(call.config, None))
