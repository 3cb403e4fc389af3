"""Resuming the threads of a stamped graph: the execution layer.

Rules:
- Reading and deciding are shared; the sync and async drivers below differ by
  ``await`` alone. What to invoke is computed once, purely, by ``_prepare``.
- The descriptions of the stamps a lineage names are fetched from the stamp store
  once per plan, and only when the head alone does not decide it.
- A rewind is LangGraph time travel: invoke from the target checkpoint, a fork.
  When the plan keeps finished tasks of the target's step, ``_keep`` makes the fork
  and saves their writes on it first; the thread then resumes from that fork.
  Nothing is deleted or overwritten.
- The caller's input and config are never mutated.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command

from neograph_ext._errors import CheckpointSchemaError, GraphError
from neograph_ext._graph import StampedGraph, marking
from neograph_ext._history import (
    Record,
    lineage,
    reading,
    references,
    resolved,
    resumable,
    waiting,
)
from neograph_ext._keep import akeep, incomplete, keep
from neograph_ext._lock import OnBusy, athread_lock, thread_lock
from neograph_ext._migrate import Carrying, acarry, carry, carry_for
from neograph_ext._plan import ASKED_AGAIN, PlanKind, ResumePlan, decide, verified_head
from neograph_ext._stamp import (
    STAMP_KEY,
    Stamp,
    encode_run,
    input_digest,
    read_run,
    read_stamp,
)
from neograph_ext._stamp_store import aload, load

__all__ = ["aplan", "arun", "astream", "plan", "run", "stream"]

logger = logging.getLogger("neograph_ext")

_END = object()
"""What ``anext`` returns for an exhausted stream."""

_IDLE = ""
"""The run mark of replaying a thread with nothing to do: never stored, nothing is written."""


class _When(StrEnum):
    ALWAYS = "always"
    INTERRUPTED = "interrupted"
    COMPLETE = "complete"


@dataclass(frozen=True)
class _Replay:
    """An input to read when it is due: the one a later turn started with."""

    config: RunnableConfig
    """Names that turn's ``input`` checkpoint, whose ``__start__`` value is the input."""


@dataclass(frozen=True)
class _Invocation:
    input: Any
    config: RunnableConfig
    mark: str
    """The run mark its checkpoints carry (``_stamp.encode_run``)."""
    when: _When = _When.ALWAYS
    keep: tuple[RunnableConfig, frozenset[str]] | None = None
    """Before invoking: fork this checkpoint, keeping the finished tasks of these nodes."""


@dataclass(frozen=True)
class _Prepared:
    invocations: tuple[_Invocation, ...]
    stored: Any
    kwargs: dict[str, Any]
    carry: ResumePlan | None = None
    """A plan whose values are carried (``_migrate``) before planning the invocations."""


def plan(
    graph: Pregel[Any, Any, Any, Any], config: RunnableConfig, *, replay_turns: bool = False
) -> ResumePlan:
    """What ``run`` would do with the thread in ``config``; executes and writes nothing.

    Unlike ``run``, which trusts a head it verified itself, ``plan`` always reads the
    thread's lineage, so ``kept`` and ``rerun`` are complete.

    Args:
        graph: A graph made by ``neograph_ext.compile`` with a checkpointer.
        config: Names the thread (``configurable.thread_id``) and optionally a
            ``checkpoint_id`` to plan from.
        replay_turns: Plan as ``run(..., replay_turns=True)`` would.

    Returns:
        The decision, with each change explained at field level.

    Raises:
        GraphError: The graph was not compiled by neograph-ext, has no checkpointer,
            or the config names no thread.
        UnreadableCheckpointError: The thread's stored checkpoints cannot be decoded.
    """
    return _read(_call(graph, config, replay_turns), full=True)[0]


async def aplan(
    graph: Pregel[Any, Any, Any, Any], config: RunnableConfig, *, replay_turns: bool = False
) -> ResumePlan:
    """Async twin of ``plan``."""
    return (await _aread(_call(graph, config, replay_turns), full=True))[0]


def run(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    auto_resume: bool = True,
    reanswer: bool = False,
    replay_turns: bool = False,
    on_busy: OnBusy = "wait",
    lock_timeout: float = 300.0,
    **kwargs: Any,
) -> Any:
    """Run or resume a thread, rewinding past checkpoints that other types wrote.

    Args:
        graph: A graph made by ``neograph_ext.compile`` with a checkpointer.
        input: The run's input; ignored when resuming an incomplete thread, and a
            ``Command(resume=...)`` answers an interrupt as usual.
        config: Names the thread; a ``checkpoint_id`` in it is planned from.
        auto_resume: False (strict mode, for CI) raises instead of rewinding.
        reanswer: When the thread waits on a question (an ``interrupt()`` or an
            ``interrupt_before`` breakpoint) and something upstream of it changed, the
            rewind asks it again and returns the new question, setting the answer given
            now aside (logged). True applies the answer to the new question instead:
            for questions that do not show upstream content.
        replay_turns: For a changed value of an earlier turn that is still live and
            neither kept nor migrated: rewind into that turn, re-run from the changed
            node, then feed every later turn its stored input again, in order,
            stopping at the first interrupt. Without it, that raises.
        on_busy: When another process holds the thread: ``"wait"`` for it, up to
            ``lock_timeout`` seconds, or ``"raise"`` at once. Whenever there is work to
            do, the thread is planned again and executed under its lock (SQLite files
            and PostgreSQL; other savers take none), so concurrent callers never run
            a node twice.
        lock_timeout: Seconds to wait for the thread's lock.
        **kwargs: Passed to ``graph.invoke``; ``durability`` defaults to ``"sync"``.

    Returns:
        What ``graph.invoke`` returns; for a complete, unchanged thread, its stored output.

    Raises:
        CheckpointSchemaError: Strict mode and something changed, or a change that
            cannot be rewound safely; raised before any node runs.
        GraphError: The graph or config cannot be used.
        ThreadBusyError: Another process holds the thread's lock.
        UnreadableCheckpointError: The thread's stored checkpoints cannot be decoded.
    """
    call = _call(graph, config, replay_turns)
    newest = _newest(call)
    decision, head = _read(call)
    prepared = _prepare(call, decision, head, input, auto_resume, kwargs, reanswer)
    if not prepared.invocations and prepared.carry is None:
        return prepared.stored
    with thread_lock(call.saver, call.thread_id, on_busy=on_busy, timeout=lock_timeout):
        prepared = _settled(call, newest, head, prepared, input, auto_resume, kwargs, reanswer)
        result = prepared.stored
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
    auto_resume: bool = True,
    reanswer: bool = False,
    replay_turns: bool = False,
    on_busy: OnBusy = "wait",
    lock_timeout: float = 300.0,
    **kwargs: Any,
) -> Any:
    """Async twin of ``run``."""
    call = _call(graph, config, replay_turns)
    newest = await _anewest(call)
    decision, head = await _aread(call)
    prepared = _prepare(call, decision, head, input, auto_resume, kwargs, reanswer)
    if not prepared.invocations and prepared.carry is None:
        return prepared.stored
    async with athread_lock(call.saver, call.thread_id, on_busy=on_busy, timeout=lock_timeout):
        prepared = await _asettled(
            call, newest, head, prepared, input, auto_resume, kwargs, reanswer
        )
        result = prepared.stored
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
    auto_resume: bool = True,
    reanswer: bool = False,
    replay_turns: bool = False,
    on_busy: OnBusy = "wait",
    lock_timeout: float = 300.0,
    **kwargs: Any,
) -> Iterator[Any]:
    """Like ``run``, yielding exactly the chunks of LangGraph's ``stream``.

    A complete, unchanged thread yields what LangGraph yields when resuming a thread
    with nothing left to do: its stored state once if ``stream_mode`` includes
    ``"values"``, else nothing. No node runs and nothing is written.
    """
    call = _call(graph, config, replay_turns)
    newest = _newest(call)
    decision, head = _read(call)
    prepared = _prepare(call, decision, head, input, auto_resume, kwargs, reanswer)
    if not prepared.invocations and prepared.carry is None:
        with marking(call.stamp, _IDLE):
            yield from graph.stream(None, call.config, **prepared.kwargs)
        return
    with thread_lock(call.saver, call.thread_id, on_busy=on_busy, timeout=lock_timeout):
        prepared = _settled(call, newest, head, prepared, input, auto_resume, kwargs, reanswer)
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
    auto_resume: bool = True,
    reanswer: bool = False,
    replay_turns: bool = False,
    on_busy: OnBusy = "wait",
    lock_timeout: float = 300.0,
    **kwargs: Any,
) -> AsyncIterator[Any]:
    """Async twin of ``stream``."""
    call = _call(graph, config, replay_turns)
    newest = await _anewest(call)
    decision, head = await _aread(call)
    prepared = _prepare(call, decision, head, input, auto_resume, kwargs, reanswer)
    if not prepared.invocations and prepared.carry is None:
        idle = graph.astream(None, call.config, **prepared.kwargs)
        async for chunk in _amarked(call.stamp, _IDLE, idle):
            yield chunk
        return
    async with athread_lock(call.saver, call.thread_id, on_busy=on_busy, timeout=lock_timeout):
        prepared = await _asettled(
            call, newest, head, prepared, input, auto_resume, kwargs, reanswer
        )
        for step in prepared.invocations:
            if await _adue(call, step):
                value, mark = await _abegun(call, step)
                chunks = graph.astream(value, step.config, **prepared.kwargs)
                async for chunk in _amarked(call.stamp, mark, chunks):
                    yield chunk


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


def _settled(
    call: _Call,
    newest: CheckpointTuple | None,
    head: CheckpointTuple | None,
    prepared: _Prepared,
    input: Any,
    auto_resume: bool,
    kwargs: Mapping[str, Any],
    reanswer: bool,
) -> _Prepared:
    """What to invoke, once the thread's lock is held.

    Planned again when the thread moved while this call waited for the lock
    (``_followed``, ``_moved``); a plan that carries values first writes the fork that
    carries them, then plans again from it.
    """
    locked = _followed(call, newest)
    if locked is not call or _moved(head, call.saver.get_tuple(call.config)):
        prepared = _prepare(locked, *_read(locked), input, auto_resume, kwargs, reanswer)
    if prepared.carry is not None:
        locked = _carried(
            locked, carry(call.graph, call.saver, locked.config, prepared.carry, *_by(call))
        )
        prepared = _prepare(locked, *_read(locked), input, auto_resume, kwargs, reanswer)
    return prepared


async def _asettled(
    call: _Call,
    newest: CheckpointTuple | None,
    head: CheckpointTuple | None,
    prepared: _Prepared,
    input: Any,
    auto_resume: bool,
    kwargs: Mapping[str, Any],
    reanswer: bool,
) -> _Prepared:
    """Async twin of ``_settled``."""
    locked = await _afollowed(call, newest)
    if locked is not call or _moved(head, await call.saver.aget_tuple(call.config)):
        prepared = _prepare(locked, *await _aread(locked), input, auto_resume, kwargs, reanswer)
    if prepared.carry is not None:
        locked = _carried(
            locked,
            await acarry(call.graph, call.saver, locked.config, prepared.carry, *_by(call)),
        )
        prepared = _prepare(locked, *await _aread(locked), input, auto_resume, kwargs, reanswer)
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


def served(
    graph: StampedGraph, input: Any, config: RunnableConfig, kwargs: Mapping[str, Any]
) -> Iterator[Any]:
    """A plain ``stream`` call on a graph compiled with ``auto_resume``: ``stream`` with
    the graph's mode and ``durability="sync"`` forced, since a server passes ``"async"``,
    which was seen to lose every loop checkpoint of a killed process."""
    return stream(
        graph,
        input,
        config,
        auto_resume=bool(graph.neograph_ext_auto_resume),
        **{**kwargs, "durability": "sync"},
    )


def aserved(
    graph: StampedGraph, input: Any, config: RunnableConfig, kwargs: Mapping[str, Any]
) -> AsyncIterator[Any]:
    """Async twin of ``served``."""
    return astream(
        graph,
        input,
        config,
        auto_resume=bool(graph.neograph_ext_auto_resume),
        **{**kwargs, "durability": "sync"},
    )


def _read(call: _Call, *, full: bool = False) -> tuple[ResumePlan, CheckpointTuple | None]:
    with reading(call.thread_id):
        head = _found(call, resumable(call.saver.get_tuple(call.config), call.thread_id))
        restart = incomplete(head)
        if restart is not None:
            head = call.saver.get_tuple(restart)
        records = None if full else _from_head(call, head)
        if records is None:
            records = _from_history(call, head, call.saver.list(_thread(call.config)))
            records = resolved(records, load(call.saver, references(records, call.stamp.id)))
    return _decided(records, call, head), head


async def _aread(call: _Call, *, full: bool = False) -> tuple[ResumePlan, CheckpointTuple | None]:
    with reading(call.thread_id):
        head = _found(call, resumable(await call.saver.aget_tuple(call.config), call.thread_id))
        restart = incomplete(head)
        if restart is not None:
            head = await call.saver.aget_tuple(restart)
        records = None if full else _from_head(call, head)
        if records is None:
            tuples = [tup async for tup in call.saver.alist(_thread(call.config))]
            records = _from_history(call, head, tuples)
            records = resolved(records, await aload(call.saver, references(records, call.stamp.id)))
    return _decided(records, call, head), head


@dataclass(frozen=True)
class _Call:
    """What one call works on, checked once."""

    graph: StampedGraph
    config: RunnableConfig
    stamp: Stamp
    saver: BaseCheckpointSaver[Any]
    thread_id: str
    replay_turns: bool = False
    """Whether a rewind into an earlier turn replays the later turns (``run``'s option)."""


def _moved(planned: CheckpointTuple | None, now: CheckpointTuple | None) -> bool:
    """Whether the thread changed between planning and taking its lock.

    Another process may have worked on it meanwhile; then the plan is made again.
    """
    if planned is None or now is None:
        return planned is not now
    return planned.checkpoint["id"] != now.checkpoint["id"] or len(
        planned.pending_writes or ()
    ) != len(now.pending_writes or ())


def _newest(call: _Call) -> CheckpointTuple | None:
    """The thread's newest checkpoint when the config names another one; else None."""
    named = _named(call)
    return call.saver.get_tuple(named[1]) if named else None


async def _anewest(call: _Call) -> CheckpointTuple | None:
    """Async twin of ``_newest``."""
    named = _named(call)
    return await call.saver.aget_tuple(named[1]) if named else None


def _followed(call: _Call, newest: CheckpointTuple | None) -> _Call:
    """The call to plan under the lock: itself, or the same call on the newest checkpoint.

    A run from a named checkpoint is a deliberate fork. But when, while this run waited
    for the lock, the thread's newest checkpoint moved to a new branch off the named
    one, another run made that fork meanwhile: this one continues from the newest
    checkpoint instead, so concurrent runs from one checkpoint fork it once, not once
    each. A thread that moved along an older branch is forked from the named one.
    """
    named = _named(call)
    if newest is None or named is None:
        return call
    now = call.saver.get_tuple(named[1])
    if now is None or not _moved(newest, now):
        return call
    return _onto(call, named, newest, now, list(call.saver.list(_thread(call.config))))


async def _afollowed(call: _Call, newest: CheckpointTuple | None) -> _Call:
    """Async twin of ``_followed``."""
    named = _named(call)
    if newest is None or named is None:
        return call
    now = await call.saver.aget_tuple(named[1])
    if now is None or not _moved(newest, now):
        return call
    tuples = [tup async for tup in call.saver.alist(_thread(call.config))]
    return _onto(call, named, newest, now, tuples)


def _named(call: _Call) -> tuple[str, RunnableConfig] | None:
    """The checkpoint id the config names, and the config of the thread's newest."""
    named = (call.config.get("configurable") or {}).get("checkpoint_id")
    return (str(named), _with_checkpoint(call.config, None)) if named else None


def _onto(
    call: _Call,
    named: tuple[str, RunnableConfig],
    before: CheckpointTuple,
    now: CheckpointTuple,
    tuples: list[CheckpointTuple],
) -> _Call:
    """The call on the newest checkpoint when ``now`` leaves the named checkpoint by a
    branch that ``before`` (the newest when this run planned) did not know; else ``call``."""
    path = [record.checkpoint_id for record in lineage(tuples, now.checkpoint["id"])]
    if named[0] not in path[:-1]:
        return call
    branch = path[path.index(named[0]) + 1]
    known = {record.checkpoint_id for record in lineage(tuples, before.checkpoint["id"])}
    return call if branch in known else replace(call, config=named[1])


def _found(call: _Call, head: CheckpointTuple | None) -> CheckpointTuple | None:
    """The head, after checking that a checkpoint named in the config exists."""
    wanted = (call.config.get("configurable") or {}).get("checkpoint_id")
    if head is None and wanted is not None:
        raise GraphError(
            f"thread {call.thread_id!r} has no checkpoint {wanted!r}: drop checkpoint_id "
            "from the config to resume the thread's newest checkpoint"
        )
    return head


def _call(
    graph: Pregel[Any, Any, Any, Any], config: RunnableConfig, replay_turns: bool = False
) -> _Call:
    if not isinstance(graph, CompiledStateGraph):
        raise GraphError(
            "this graph is built with LangGraph's functional API (@entrypoint), which "
            "neograph-ext does not support yet: build it as a StateGraph"
        )
    if not isinstance(graph, StampedGraph):
        raise GraphError(
            "this graph carries no neograph-ext stamp: build it with "
            "neograph_ext.compile(builder, checkpointer=...) instead of builder.compile(...)"
        )
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if thread_id is None:
        raise GraphError('config names no thread: pass {"configurable": {"thread_id": "..."}}')
    stamp = graph.neograph_ext_stamp
    return _Call(graph, config, stamp, _saver(graph), str(thread_id), replay_turns)


def _next(graph: Pregel[Any, Any, Any, Any], head: CheckpointTuple) -> frozenset[str]:
    # ``__start__`` counts: a head that is the input checkpoint (a process killed
    # before the first step was saved) still waits to run the whole graph.
    triggers = {name: tuple(node.triggers) for name, node in graph.nodes.items()}
    return waiting(head.checkpoint, triggers, graph.channels)


def _saver(graph: Pregel[Any, Any, Any, Any]) -> BaseCheckpointSaver[Any]:
    saver = graph.checkpointer
    if not isinstance(saver, BaseCheckpointSaver):
        raise GraphError(
            "this graph has no checkpointer to resume from: "
            "compile it with neograph_ext.compile(builder, checkpointer=saver)"
        )
    return saver


def _thread(config: RunnableConfig) -> RunnableConfig:
    """The whole root namespace of the thread: every branch, not one checkpoint."""
    configurable = config.get("configurable") or {}
    return {"configurable": {"thread_id": configurable["thread_id"], "checkpoint_ns": ""}}


def _from_head(call: _Call, head: CheckpointTuple | None) -> tuple[Record, ...] | None:
    """The lineage when the head alone decides it; None when the history must be read."""
    if head is None:
        return ()
    records = lineage([head], head.checkpoint["id"], next_nodes=_next(call.graph, head))
    return records if verified_head(records[-1], call.stamp) else None


def _from_history(
    call: _Call, head: CheckpointTuple | None, tuples: Iterable[CheckpointTuple]
) -> tuple[Record, ...]:
    if head is None:
        return ()
    return lineage(tuples, head.checkpoint["id"], next_nodes=_next(call.graph, head))


def _decided(records: tuple[Record, ...], call: _Call, head: CheckpointTuple | None) -> ResumePlan:
    thread_id = call.thread_id
    replay = call.replay_turns
    decision = decide(records, call.stamp, thread_id, replay_turns=replay)
    options = _by(call)[0]
    if decision.candidates and head is not None and (options.keep or options.migrations):
        values = head.checkpoint.get("channel_values", {})
        carry = carry_for(options, decision.candidates, values)
        decision = decide(records, call.stamp, thread_id, carry, replay_turns=replay)
    if decision.kind is PlanKind.REWIND and head is not None and _paused(call.graph, head):
        decision = replace(decision, notes=(*decision.notes, ASKED_AGAIN))
    logger.info(
        "thread %r: %s%s%s%s",
        thread_id,
        decision.kind,
        f" from checkpoint {decision.checkpoint_id} (step {decision.step})"
        if decision.kind is PlanKind.REWIND
        else "",
        f", values kept or migrated: {', '.join(sorted(decision.migrated))}"
        if decision.migrated
        else "",
        f", invalidated: {', '.join(sorted(decision.invalidated_nodes))}"
        if decision.invalidated_nodes
        else "",
    )
    for note in decision.notes:
        logger.warning("thread %r: %s", thread_id, note)
    return decision


def _prepare(
    call: _Call,
    decision: ResumePlan,
    head: CheckpointTuple | None,
    input: Any,
    auto_resume: bool,
    kwargs: Mapping[str, Any],
    reanswer: bool,
) -> _Prepared:
    """What to invoke for a decision; raises before anything runs when it must."""
    if decision.blocker:
        raise CheckpointSchemaError(_message(decision, decision.blocker), decision)
    if decision.kind is PlanKind.REWIND and not auto_resume:
        ways = (
            "run with auto_resume=True to rewind and re-run them, keeping the upstream "
            "work, or start a new thread_id"
        )
        raise CheckpointSchemaError(_message(decision, ways + _carrying(decision)), decision)
    if decision.kind is PlanKind.MIGRATE and not auto_resume:
        ways = "run with auto_resume=True to convert them, or start a new thread_id"
        raise CheckpointSchemaError(_message(decision, ways + _carrying(decision)), decision)
    if decision.migrated:
        return _Prepared((), None, {}, carry=decision)
    stored_input = _stored_input(head)
    answer = isinstance(input, Command)
    given = None if input is None or answer else input_digest(input)
    here = encode_run(call.stamp, decision.kind, stored_input)
    new_run = _with_checkpoint(call.config, None)
    new_mark = encode_run(call.stamp, decision.kind, given)
    complete = head is not None and not decision.next_nodes and not _interrupted(head)
    # A complete thread given another input starts a new turn; the same input (or an
    # input whose digest is unknown) asks for the stored result. So does an input
    # given to a thread whose own input was never recorded, as plain LangGraph would.
    new_turn = complete and given is not None and stored_input != given
    if head is None:
        steps: tuple[_Invocation, ...] = (_Invocation(input, new_run, new_mark),)
    elif decision.kind is PlanKind.REWIND:
        rewind = _with_checkpoint(call.config, decision.checkpoint_id)
        steps = (_Invocation(None, rewind, here),)
        if decision.kept_tasks:
            # Resumed without a checkpoint_id: the fork is the newest checkpoint, and
            # LangGraph hands the writes saved on it back to the kept tasks.
            after = _with_checkpoint(call.config, None)
            steps = (_Invocation(None, after, here, keep=(rewind, decision.kept_tasks)),)
        steps += tuple(
            _Invocation(_Replay(_with_checkpoint(call.config, cp)), new_run, "", _When.COMPLETE)
            for cp in decision.replayed
        )
        paused = _paused(call.graph, head)
        if reanswer and (answer or paused):
            after = _with_checkpoint(call.config, None)
            steps += (_Invocation(input, after, here, _When.INTERRUPTED),)
        elif paused:
            logger.warning(
                "thread %r: something upstream of the question it waits on changed: the "
                "question is asked again%s (run(..., reanswer=True) would apply it)",
                decision.thread_id,
                "; the answer given was set aside" if answer else "",
            )
        elif new_turn:
            steps += (_Invocation(input, new_run, new_mark, _When.COMPLETE),)
    elif new_turn:
        steps = (_Invocation(input, new_run, new_mark),)
    elif complete:
        steps = ()
    else:
        if given is not None and given != stored_input:
            logger.info(
                "thread %r is incomplete: resuming it; the input given is ignored",
                decision.thread_id,
            )
        steps = (_Invocation(input if answer else None, call.config, here),)
    stored = _output(call.graph, head) if complete and not steps else None
    return _Prepared(steps, stored, {"durability": "sync", **kwargs})


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
    return value, encode_run(call.stamp, PlanKind.REWIND, input_digest(value))


def _carrying(decision: ResumePlan) -> str:
    if not decision.migrated:
        return ""
    channels = ", ".join(sorted(decision.migrated))
    return f" (auto_resume=True keeps or migrates the stored values of: {channels})"


def _by(call: _Call) -> tuple[Carrying, Stamp]:
    """The graph's carrying options and stamp, as ``_migrate.carry`` takes them."""
    graph = call.graph
    assert isinstance(graph, StampedGraph), "checked by _call"
    return graph.neograph_ext_carrying, call.stamp


def _carried(call: _Call, written: RunnableConfig) -> _Call:
    """The call on the checkpoint just carried: the thread's newest, so it is resumed
    (finished tasks and interrupts kept) rather than forked again."""
    checkpoint_id = (written.get("configurable") or {}).get("checkpoint_id")
    logger.info(
        "thread %r: wrote checkpoint %s carrying the values on", call.thread_id, checkpoint_id
    )
    return replace(call, config=_with_checkpoint(call.config, None))


def _message(decision: ResumePlan, ways: str) -> str:
    changed = "\n".join(change.describe() for change in decision.changes)
    nodes = ", ".join(sorted(decision.invalidated_nodes)) or "none"
    return (
        f"thread {decision.thread_id!r}: checkpoints were written by code that differs "
        f"from the current graph (types, versions or edges). Invalidated nodes: {nodes}.\n"
        f"{changed}\nTo proceed: {ways}."
    )


def _stored_input(head: CheckpointTuple | None) -> str | None:
    """The digest of the input the head's run started with, where it was recorded."""
    if head is None:
        return None
    metadata = head.metadata or {}
    return read_run(metadata, read_stamp(metadata.get(STAMP_KEY))).input


def _with_checkpoint(config: RunnableConfig, checkpoint_id: str | None) -> RunnableConfig:
    configurable = {**(config.get("configurable") or {})}
    configurable.pop("checkpoint_id", None)
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {**config, "configurable": configurable}


def _interrupted(head: CheckpointTuple) -> bool:
    return any(channel == "__interrupt__" for _, channel, _ in head.pending_writes or ())


def _paused(graph: Pregel[Any, Any, Any, Any], head: CheckpointTuple) -> bool:
    """Whether the head waits on a question: an ``interrupt()`` or a static breakpoint."""
    if _interrupted(head):
        return True
    before = graph.interrupt_before_nodes
    waits = _next(graph, head)
    return bool(waits) and (before == "*" or bool(waits & set(before)))


def _holds(when: _When, graph: Pregel[Any, Any, Any, Any], head: CheckpointTuple | None) -> bool:
    """Whether a follow-up invocation applies to the thread as the first one left it."""
    if head is None:
        return False
    if when is _When.INTERRUPTED:
        return _paused(graph, head)
    return not _interrupted(head) and not _next(graph, head)


def _output(graph: Pregel[Any, Any, Any, Any], head: CheckpointTuple | None) -> Any:
    """What ``invoke`` returns for a finished thread, read from the raw head."""
    if head is None:
        return None
    values = head.checkpoint.get("channel_values", {})
    channels = graph.output_channels
    if isinstance(channels, str):
        return values.get(channels)
    return {key: values[key] for key in channels if key in values}
