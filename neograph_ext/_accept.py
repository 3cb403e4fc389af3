"""``accept``: "this thread was handled by hand"; its head is stamped as current.

Rules:
- Never automatic: only a call of ``accept`` writes it, and it is logged as a warning.
- On a thread newer code owns (``superseded``), it takes the thread over: its fork
  names the stamp it takes the thread from (``_ownership``), so that code must take it
  over in turn.
- It writes one checkpoint, a fork of the head under the current stamp, marked as
  verified, holding the head's values, pending writes and interrupts unchanged
  (``_migrate.carry`` with nothing to carry). Nothing is deleted or overwritten.
- The next plan starts at that checkpoint: what changed before it counts as handled.
- A head verified against the current stamp already is current: nothing is written, so
  a retried or racing ``accept`` writes no second fork. A fork a kill left without its
  copied writes is not current: the head it forked is accepted again.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.pregel import Pregel

from neograph_ext.decision._carrying import Carrying
from neograph_ext.decision._decision import PlanKind, ResumePlan
from neograph_ext.decision._errors import GraphError
from neograph_ext.decision._lineage_facts import verified
from neograph_ext.decision._operations import Flow, TakeLock
from neograph_ext.decision._stamp import read_marks
from neograph_ext.drivers._drivers import AsyncDriver, Driver
from neograph_ext.drivers._thread import ThreadCall, thread_call
from neograph_ext.flows._decision_log import logged
from neograph_ext.flows._flow import planned, read_head
from neograph_ext.flows._fork import address
from neograph_ext.flows._migrate import carry

__all__ = ["aaccept", "accept"]

logger = logging.getLogger("neograph_ext")


def accept(graph: Pregel[Any, Any, Any, Any], config: RunnableConfig) -> RunnableConfig:
    """Record that a thread's stored values were brought up to date by hand.

    For a thread whose data you migrated yourself (say, in SQL): writes a fork of its
    head stamped with the graph's current fingerprints, so the next ``run`` carries on
    from it instead of rewinding or raising. The head's values, next nodes and pending
    interrupts are kept as they are.

    Args:
        graph: A graph made by ``neograph_ext.compile`` with a checkpointer.
        config: Names the thread (and optionally a ``checkpoint_id`` to accept).

    Returns:
        The config of the checkpoint written.

    Raises:
        GraphError: The graph cannot be used, or the thread has no checkpoint.
        ThreadBusyError: Another process holds the thread's lock (``LockPolicy(on_busy="raise")``).
    """
    call = thread_call(graph, config)
    with Driver(call) as driver:
        return driver.run(_accepted(call))


async def aaccept(graph: Pregel[Any, Any, Any, Any], config: RunnableConfig) -> RunnableConfig:
    """Async twin of ``accept``."""
    call = thread_call(graph, config)
    async with AsyncDriver(call) as driver:
        return await driver.run(_accepted(call))


def _accepted(call: ThreadCall) -> Flow[RunnableConfig]:
    """Under the thread's lock: plan the thread, and unless its head is current already,
    write the fork that stamps it as the current graph's."""
    yield TakeLock()
    head = yield from read_head(call)
    decision = yield from planned(call, head, full=True)
    logged(call.saver, call.thread_id, decision, level=logging.DEBUG)
    current = _current(call, decision, head)
    if current is not None:
        return current
    accepted = _as_accepted(decision)
    written = yield from carry(call, call.config, accepted, Carrying(), "accept")
    return _logged(accepted, written)


def _current(
    call: ThreadCall, decision: ResumePlan, head: CheckpointTuple | None
) -> RunnableConfig | None:
    """The head's config when the head is current already (``run`` or an ``accept``
    verified it against the current stamp): nothing to accept, and nothing is written,
    so a retried or racing ``accept`` adds no fork."""
    if decision.kind is PlanKind.FRESH or head is None:
        return None
    stamp, mark = read_marks(head.metadata)
    if not verified(stamp, mark.verified, call.stamp):
        return None
    logger.info("thread %r: its head is current already; nothing to accept", call.thread_id)
    return address(head)


def _as_accepted(decision: ResumePlan) -> ResumePlan:
    """The plan ``carry`` applies: the head, nothing converted, its pending writes kept;
    taken over from the code that owns it, if newer code does."""
    if decision.kind is PlanKind.FRESH:
        raise GraphError(
            f"thread {decision.thread_id!r} has no checkpoint to accept: check the thread_id"
        )
    return replace(
        decision,
        kind=PlanKind.MIGRATE,
        migrated=frozenset(),
        owner=None,
        taken_from=decision.owner if decision.kind is PlanKind.SUPERSEDED else None,
    )


def _logged(decision: ResumePlan, written: RunnableConfig) -> RunnableConfig:
    took = decision.taken_from
    logger.warning(
        "thread %r: accepted by hand as written by the current graph (checkpoint %s, "
        "a fork of %s); changes before it no longer count%s",
        decision.thread_id,
        (written.get("configurable") or {}).get("checkpoint_id"),
        decision.head_id,
        f"; taken over from newer code (stamp {took[:16]}), which must take it over in turn"
        if took
        else "",
    )
    return written
