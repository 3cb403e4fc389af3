"""What one call reads and how it is planned: the read side of the execution layer.

Rules:
- A call is checked once (``_call``): a graph compiled by neograph-ext, with a
  checkpointer, and a config that names a thread.
- Nothing here writes: the saver is only read, and the decision is ``_plan.decide``'s.
- The descriptions of the stamps a lineage names are fetched from the stamp store
  once per plan, and only when the head alone does not decide it.
- Sync and async twins differ by ``await`` alone.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel

from neograph_ext._errors import GraphError
from neograph_ext._graph import StampedGraph
from neograph_ext._head import _next, _paused
from neograph_ext._history import (
    NotNewestFirst,
    Record,
    lineage,
    owed_turns,
    reading,
    references,
    resolved,
    resumable,
)
from neograph_ext._keep import incomplete
from neograph_ext._langgraph import delta_channels
from neograph_ext._migrate import Carrying, carry_for, carrying, readable, rebuilt_channels
from neograph_ext._plan import (
    ASKED_AGAIN,
    PlanKind,
    ResumePlan,
    at_verified_head,
    decide,
    verified,
)
from neograph_ext._policy import Asked, LockPolicy, ResumePolicy, resolve
from neograph_ext._revive import head_misread
from neograph_ext._stamp import Stamp, read_marks
from neograph_ext._stamp_store import aload, is_store_thread, load, reserved

__all__ = [
    "_Call",
    "_afollowed",
    "_ahead",
    "_anewest",
    "_aread",
    "_aread_from",
    "_by",
    "_call",
    "_followed",
    "_head",
    "_moved",
    "_named",
    "_newest",
    "_read",
    "_read_from",
    "_with_checkpoint",
]

logger = logging.getLogger("neograph_ext")


class _Call(NamedTuple):
    """What one call works on, checked once. A named tuple, as the records of
    ``_invocations``: every call builds one."""

    graph: StampedGraph
    config: RunnableConfig
    stamp: Stamp
    saver: BaseCheckpointSaver[Any]
    thread_id: str
    resume: ResumePolicy = ResumePolicy()
    """What the call does about changes (``_policy.resolve``)."""
    lock: LockPolicy = LockPolicy()
    """How the call waits for the thread's lock."""
    carrying: Carrying = Carrying()
    """``resume``'s ``keep_compatible`` and ``migrations``, per channel of the graph."""


_GRAPHS = Asked()
"""What a call that gives no options asks for: the graph's policies."""


def _call(
    graph: Pregel[Any, Any, Any, Any], config: RunnableConfig, asked: Asked = _GRAPHS
) -> _Call:
    if not isinstance(graph, StampedGraph):
        if not isinstance(graph, CompiledStateGraph):
            raise GraphError(
                "this graph is built with LangGraph's functional API (@entrypoint), which "
                "neograph-ext does not support yet: build it as a StateGraph"
            )
        raise GraphError(
            "this graph carries no neograph-ext stamp: build it with "
            "neograph_ext.compile(builder, checkpointer=...) instead of builder.compile(...)"
        )
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if thread_id is None:
        raise GraphError('config names no thread: pass {"configurable": {"thread_id": "..."}}')
    if is_store_thread(thread_id):
        raise GraphError(reserved(thread_id))
    stamp = graph.neograph_ext_stamp
    resume, lock = resolve(asked, graph.neograph_ext_resume, graph.neograph_ext_lock)
    carried = carrying(graph.neograph_ext_channel_types, resume.keep_compatible, resume.migrations)
    return _Call(graph, config, stamp, _saver(graph), str(thread_id), resume, lock, carried)


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


def _with_checkpoint(config: RunnableConfig, checkpoint_id: str | None) -> RunnableConfig:
    configurable = {**(config.get("configurable") or {})}
    configurable.pop("checkpoint_id", None)
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {**config, "configurable": configurable}


def _read(call: _Call, *, full: bool = False) -> tuple[ResumePlan, CheckpointTuple | None]:
    if full and _named(call) is None:
        with reading(call.thread_id):
            listing = call.saver.list(_thread(call.config))
            try:
                with contextlib.suppress(NotNewestFirst):
                    return _listed(call, listing)
            finally:
                _close(listing)  # left part-read when not newest first, or on an error
    return _read_from(call, _head(call), full=full)


async def _aread(call: _Call, *, full: bool = False) -> tuple[ResumePlan, CheckpointTuple | None]:
    if full and _named(call) is None:
        with reading(call.thread_id):
            tuples = [tup async for tup in call.saver.alist(_thread(call.config))]
            with contextlib.suppress(NotNewestFirst):  # read whole: nothing is left open
                return await _alisted(call, tuples)
    return await _aread_from(call, await _ahead(call), full=full)


def _head(call: _Call) -> CheckpointTuple | None:
    """The checkpoint a call starts from: the one its config names, else the thread's
    newest; checked resumable."""
    with reading(call.thread_id):
        return _found(call, resumable(call.saver.get_tuple(call.config), call.thread_id))


async def _ahead(call: _Call) -> CheckpointTuple | None:
    """Async twin of ``_head``."""
    with reading(call.thread_id):
        return _found(call, resumable(await call.saver.aget_tuple(call.config), call.thread_id))


def _read_from(
    call: _Call, head: CheckpointTuple | None, *, full: bool = False
) -> tuple[ResumePlan, CheckpointTuple | None]:
    """``_read`` once its head is read (``_head``)."""
    with reading(call.thread_id):
        head = _restarted(call, head)
        plan = None if full else _from_head(call, head)
        if plan is None:
            listing = call.saver.list(_thread(call.config))
            try:
                plan = _from_history(call, head, listing)
            finally:
                _close(listing)  # left part-read by an error: the saver would stay locked
        plan = _owing(call, head, plan)
    return plan, head


async def _aread_from(
    call: _Call, head: CheckpointTuple | None, *, full: bool = False
) -> tuple[ResumePlan, CheckpointTuple | None]:
    """Async twin of ``_read_from``."""
    with reading(call.thread_id):
        head = await _arestarted(call, head)
        plan = None if full else _from_head(call, head)
        if plan is None:
            tuples = [tup async for tup in call.saver.alist(_thread(call.config))]
            plan = await _afrom_history(call, head, tuples)
        source = _replaying(call, head, plan)
        if source is not None:
            tuples = [tup async for tup in call.saver.alist(_thread(call.config))]
            plan = _owed(call, head, plan, tuples, source)
    return plan, head


def _listed(
    call: _Call, listing: Iterable[CheckpointTuple]
) -> tuple[ResumePlan, CheckpointTuple | None]:
    """The whole-lineage read of a thread's newest checkpoint in one listing: savers list
    newest first, so the head is the first tuple listed, no read of its own (checked
    by ``lineage``, which raises ``NotNewestFirst`` otherwise).

    No other saver call is made while the listing is open: LangGraph's sync savers hold
    their (non-reentrant) lock until a listing ends, so a ``get_tuple`` made meanwhile
    would wait forever. A head planned from elsewhere (``_restarted``) closes it first.
    """
    tuples = iter(listing)
    newest = resumable(next(tuples, None), call.thread_id)
    if incomplete(newest) is not None:
        _close(listing)
        return _read_from(call, newest, full=True)
    head = newest
    listed = itertools.chain([newest], tuples) if newest is not None else ()
    plan = _from_history(call, head, listed, newest)
    _close(listing)  # read whole by now; another listing may follow
    return _owing(call, head, plan), head


def _close(listing: Iterable[CheckpointTuple]) -> None:
    """Close a listing, which may be left part-read: a sync saver may hold its lock (and
    a cursor) until its listing ends, and the thread is read again next."""
    close = getattr(listing, "close", None)
    if callable(close):
        close()


async def _alisted(
    call: _Call, tuples: list[CheckpointTuple]
) -> tuple[ResumePlan, CheckpointTuple | None]:
    """Async twin of ``_listed``."""
    newest = resumable(tuples[0] if tuples else None, call.thread_id)
    head = await _arestarted(call, newest)
    plan = await _afrom_history(call, head, tuples, newest)
    source = _replaying(call, head, plan)
    return (plan if source is None else _owed(call, head, plan, tuples, source)), head


def _replaying(call: _Call, head: CheckpointTuple | None, plan: ResumePlan) -> str | None:
    """The head whose turns the run that wrote ``head`` was replaying, when ``plan``
    resumes ``head`` itself (a rewind planned anew replaces what a replay owed)."""
    if head is None or plan.kind not in (PlanKind.CONTINUE, PlanKind.UP_TO_DATE):
        return None
    stamp, mark = read_marks(head.metadata)
    if mark.replaying is None or not verified(stamp, mark.verified, call.stamp):
        return None
    # A replay stops at the first question: nothing more is owed then.
    return None if _paused(call.graph, head) else mark.replaying


def _owing(call: _Call, head: CheckpointTuple | None, plan: ResumePlan) -> ResumePlan:
    """``plan``, with the turns a replay killed part-way still owes (``_owed``)."""
    source = _replaying(call, head, plan)
    if source is None:
        return plan
    listing = call.saver.list(_thread(call.config))
    try:
        tuples = list(listing)
    finally:
        _close(listing)
    return _owed(call, head, plan, tuples, source)


def _owed(
    call: _Call,
    head: CheckpointTuple | None,
    plan: ResumePlan,
    tuples: list[CheckpointTuple],
    source: str,
) -> ResumePlan:
    """``plan`` resuming a head a replay of ``source``'s turns wrote (``_replaying``),
    with the later turns it has not started yet (``_history.owed_turns``): they are
    replayed after the head."""
    if head is None:
        return plan
    owed = owed_turns(tuples, head.checkpoint["id"], source)
    if not owed:
        return plan
    logger.warning(
        "thread %r: a replay of the turns of checkpoint %s was cut short; %d turn(s) "
        "still owed are replayed",
        call.thread_id,
        source,
        len(owed),
    )
    return replace(plan, kind=PlanKind.CONTINUE, replayed=owed)


def _restarted(call: _Call, head: CheckpointTuple | None) -> CheckpointTuple | None:
    """``head``, or the checkpoint to plan from instead: the parent of a keeping fork
    missing some of its writes (``_keep.incomplete``)."""
    restart = incomplete(head)
    return head if restart is None else call.saver.get_tuple(restart)


async def _arestarted(call: _Call, head: CheckpointTuple | None) -> CheckpointTuple | None:
    """Async twin of ``_restarted``."""
    restart = incomplete(head)
    return head if restart is None else await call.saver.aget_tuple(restart)


def _described(call: _Call, wanted: frozenset[str]) -> dict[str, Stamp]:
    """The descriptions of ``wanted`` stamps: those found before, and the rest looked up."""
    known = _known(call, wanted)
    return _kept(call, known, load(call.saver, wanted - known.keys()))


async def _adescribed(call: _Call, wanted: frozenset[str]) -> dict[str, Stamp]:
    """Async twin of ``_described``."""
    known = _known(call, wanted)
    return _kept(call, known, await aload(call.saver, wanted - known.keys()))


def _known(call: _Call, wanted: frozenset[str]) -> dict[str, Stamp]:
    found = call.graph.neograph_ext_described(call.saver)
    return {stamp_id: found[stamp_id] for stamp_id in wanted if stamp_id in found}


def _kept(call: _Call, known: dict[str, Stamp], loaded: dict[str, Stamp]) -> dict[str, Stamp]:
    # A description is content-addressed and checked against its id when loaded, so a
    # found one never goes stale; one still missing is looked up again next time.
    call.graph.neograph_ext_described(call.saver).update(loaded)
    return {**known, **loaded}


def _found(call: _Call, head: CheckpointTuple | None) -> CheckpointTuple | None:
    """The head, after checking that a checkpoint named in the config exists."""
    wanted = (call.config.get("configurable") or {}).get("checkpoint_id")
    if head is None and wanted is not None:
        raise GraphError(
            f"thread {call.thread_id!r} has no checkpoint {wanted!r}: drop checkpoint_id "
            "from the config to resume the thread's newest checkpoint"
        )
    return head


def _from_head(call: _Call, head: CheckpointTuple | None) -> ResumePlan | None:
    """The plan when the head alone decides it; None when the history must be read.

    It does for a new thread, and for a head ``run`` verified against the current
    stamp whose stored values read back as declared: that run checked the head's whole
    lineage. The most frequent resume then reads two metadata keys, not a lineage.
    """
    if head is None:
        return _decided((), call, None, {})
    stamp, mark = read_marks(head.metadata)  # a mapping: ``resumable`` checked it
    if not verified(stamp, mark.verified, call.stamp) or mark.replaying is not None:
        return None
    waits = _next(call.graph, head)
    if head_misread(call.graph.neograph_ext_revival, head, bool(waits)):
        return None
    plan = at_verified_head(head.checkpoint["id"], waits, call.thread_id)
    return _logged(call.saver, call.thread_id, plan)


def _from_history(
    call: _Call,
    head: CheckpointTuple | None,
    tuples: Iterable[CheckpointTuple],
    newest: CheckpointTuple | None = None,
) -> ResumePlan:
    """The plan from the head's whole lineage, read from ``tuples`` (``_lineage``)."""
    records = _lineage(call, head, tuples, newest)
    records = resolved(records, _described(call, references(records, call.stamp.id)))
    return _decided(records, call, head, _carried_values(call, head))


async def _afrom_history(
    call: _Call,
    head: CheckpointTuple | None,
    tuples: Iterable[CheckpointTuple],
    newest: CheckpointTuple | None = None,
) -> ResumePlan:
    """Async twin of ``_from_history``."""
    records = _lineage(call, head, tuples, newest)
    records = resolved(records, await _adescribed(call, references(records, call.stamp.id)))
    return _decided(records, call, head, await _acarried_values(call, head))


def _lineage(
    call: _Call,
    head: CheckpointTuple | None,
    tuples: Iterable[CheckpointTuple],
    newest: CheckpointTuple | None,
) -> tuple[Record, ...]:
    if head is None:
        return ()
    return lineage(
        tuples,
        head.checkpoint["id"],
        next_nodes=_next(call.graph, head),
        described=call.graph.neograph_ext_described(call.saver),
        newest=newest.checkpoint["id"] if newest is not None else None,
    )


def _carried_values(call: _Call, head: CheckpointTuple | None) -> Mapping[str, Any]:
    """The head's values a carry would convert (``_migrate.readable``)."""
    options = _by(call)[0]
    if head is None or not (options.keep or options.migrations):
        return {}  # nothing to carry (and no read of the graph's nodes while planning)
    channels = rebuilt_channels(options, delta_channels(call.graph))
    rebuilt = call.graph.get_state(head.config).values if channels else {}
    return readable(head.checkpoint.get("channel_values", {}), rebuilt, channels)


async def _acarried_values(call: _Call, head: CheckpointTuple | None) -> Mapping[str, Any]:
    """Async twin of ``_carried_values``."""
    options = _by(call)[0]
    if head is None or not (options.keep or options.migrations):
        return {}  # nothing to carry (and no read of the graph's nodes while planning)
    channels = rebuilt_channels(options, delta_channels(call.graph))
    rebuilt = (await call.graph.aget_state(head.config)).values if channels else {}
    return readable(head.checkpoint.get("channel_values", {}), rebuilt, channels)


def _decided(
    records: tuple[Record, ...],
    call: _Call,
    head: CheckpointTuple | None,
    values: Mapping[str, Any],
) -> ResumePlan:
    thread_id = call.thread_id
    replay = call.resume.replay_turns
    revival = call.graph.neograph_ext_revival
    misread = head_misread(revival, head, bool(records and records[-1].next_nodes))
    decision = decide(records, call.stamp, thread_id, replay_turns=replay, misread=misread)
    options = _by(call)[0]
    if decision.candidates and head is not None and (options.keep or options.migrations):
        # A converted value of a type that cannot be revived would not read back either.
        candidates = decision.candidates - (revival.unrevivable & misread.keys())
        carry = carry_for(options, candidates, values)
        decision = decide(
            records, call.stamp, thread_id, carry, replay_turns=replay, misread=misread
        )
    if decision.kind is PlanKind.REWIND and head is not None and _paused(call.graph, head):
        decision = replace(decision, notes=(*decision.notes, ASKED_AGAIN))
    return _logged(call.saver, thread_id, decision)


def _logged(saver: BaseCheckpointSaver[Any], thread_id: str, decision: ResumePlan) -> ResumePlan:
    if logger.isEnabledFor(logging.INFO):  # the arguments are built only when logged
        _log_decision(thread_id, decision)
    if decision.kind is PlanKind.UNVERIFIED:
        _warn_unverified(saver, thread_id, decision.notes)
        return decision
    for note in decision.notes:
        logger.warning("thread %r: %s", thread_id, note)
    return decision


_WARNED: weakref.WeakKeyDictionary[BaseCheckpointSaver[Any], set[str]] = weakref.WeakKeyDictionary()
"""Per saver, the threads whose unverified checkpoints were logged in this process."""


def _warn_unverified(
    saver: BaseCheckpointSaver[Any], thread_id: str, notes: tuple[str, ...]
) -> None:
    """One warning per thread and process for checkpoints that cannot be verified: they
    stay in the lineage for good, and every later plan finds them again."""
    warned = _WARNED.setdefault(saver, set())
    if thread_id in warned:
        return
    warned.add(thread_id)
    reasons = Counter(note.split(": ", 1)[-1] for note in notes)
    logger.warning(
        "thread %r: %d checkpoint(s) cannot be verified (%s): they count as unchanged and "
        "the thread resumes as LangGraph would; logged once per thread and process",
        thread_id,
        len(notes),
        "; ".join(f"{why}: {count}" for why, count in reasons.items()),
    )


def _log_decision(thread_id: str, decision: ResumePlan) -> None:
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


def _by(call: _Call) -> tuple[Carrying, Stamp]:
    """The call's carrying options and stamp, as ``_migrate.carry`` takes them."""
    return call.carrying, call.stamp


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
    return call if branch in known else call._replace(config=named[1])
