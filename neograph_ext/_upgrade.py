"""``upgrade_threads``: bring a fleet's threads forward after a deploy, as their next
resume would, without waiting for users.

Rules:
- The survey is ``check_threads``' (its read path, its batches); a thread is then
  brought forward by the resume's own flow and decision: planned under its lock again
  (``_flow._settled``), the carry a resume writes first (compatible values kept,
  migrations applied, a fork past changes nothing live reads, stamped as the current
  code's) written here instead. Whatever needs a node run is left to a resume: a rewind
  is listed, not run, unless asked (``rewind``), then run by ``run`` with the graph's
  policies and budget, bounded by ``max_cost``.
- A dry run by default: nothing is locked or written until ``apply``.
- Resumable: a thread brought forward plans as having nothing to carry, so a re-run
  (after a kill, or after a canary) skips it; the carry itself is kill-safe as a
  resume's is (``_keep.incomplete``). A rewind cut short (``ThreadCheck.rewinding``) is
  still a rewind: a re-run with ``rewind`` finishes it, one without lists it.
- A thread another process holds is skipped (``busy``), never waited for; a thread newer
  code owns is left alone (``superseded``).
- A canary is a stable pick: a thread is in the first ``canary`` percent by a hash of
  its id, the same in every process.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel

from neograph_ext._fleet import BATCH, ThreadCheck, acheck_threads, check_threads
from neograph_ext._run import aplan, arun, plan, run
from neograph_ext.decision._budget import Budget, Ledger, Spend
from neograph_ext.decision._decision import PlanKind, ResumePlan
from neograph_ext.decision._deploy_cost import DeployCost
from neograph_ext.decision._errors import NeographExtError, ThreadBusyError
from neograph_ext.decision._policy import Asked, LockPolicy
from neograph_ext.drivers._drivers import AsyncDriver, Driver
from neograph_ext.drivers._thread import checkpointer_of, stamped, thread_call
from neograph_ext.flows._flow import carried_forward
from neograph_ext.storage._ledger_store import aread_ledger, read_ledger

__all__ = ["ThreadUpgrade", "UpgradeAction", "aupgrade_threads", "in_canary", "upgrade_threads"]

_AT_ONCE = LockPolicy(on_busy="raise")
"""An upgrade never waits for a thread another process runs: it skips it."""


class UpgradeAction(StrEnum):
    """What ``upgrade_threads`` does with a thread."""

    CARRY = "carry"
    """Its values are carried forward and stamped (a fork), no node run."""
    REWIND = "rewind"
    """It needs node runs: listed, or run with ``rewind=True``; a rewind cut short (a
    process killed in it) too: the rest of it."""
    NOTHING = "nothing"
    """The next resume has nothing to bring forward (up to date, or its own work left)."""
    SUPERSEDED = "superseded"
    """Newer code owns it: left alone."""
    BLOCKED = "blocked"
    """A resume would refuse it (the plan's ``blocker``, or the graph's policy)."""
    BUSY = "busy"
    """Another process held its lock: skipped."""
    LATER = "later"
    """Not in the canary: left for the next call."""


@dataclass(frozen=True)
class ThreadUpgrade:
    """One thread, as ``upgrade_threads`` found and left it."""

    thread_id: str
    """The thread."""
    action: UpgradeAction
    """What the upgrade does with it."""
    plan: ResumePlan
    """Its plan when found (as ``check_threads`` made it)."""
    written_by: str | None
    """The stamp that last wrote it when found (``ThreadCheck.written_by``)."""
    done: bool = False
    """The action was carried out: the carry written, or the rewind run."""
    after: ResumePlan | None = None
    """Once done: what its next resume will do (a carried thread's: nothing to carry)."""
    cost: Spend | None = None
    """For a rewind: what its ledger says running it again costs; None: no record."""
    note: str | None = None
    """Why a rewind was not run, or the busy thread's error."""


def in_canary(thread_id: str, percent: float) -> bool:
    """Whether ``thread_id`` is in the first ``percent`` of a fleet: a stable hash of its
    id, so every call and every process picks the same threads."""
    digest = hashlib.sha256(thread_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % 10_000 < percent * 100


def upgrade_threads(
    graph: Pregel[Any, Any, Any, Any],
    threads: Iterable[str] | None = None,
    *,
    apply: bool = False,
    rewind: bool = False,
    max_cost: Budget | None = None,
    canary: float | None = None,
    batch: int = BATCH,
) -> Iterator[ThreadUpgrade]:
    """Bring the threads of the graph's checkpointer forward to the graph's code, as the
    next resume of each would, doing only what needs no node run.

    Args:
        graph: A graph made by ``neograph_ext.compile`` with a checkpointer: the code
            deployed.
        threads: The thread ids, in this order; by default every thread
            (``check_threads``).
        apply: Write; by default a dry run that plans, locks and writes nothing.
        rewind: With ``apply``: also run the rewinds (``run(graph, None, config)``, under
            the graph's policies and budget).
        max_cost: With ``rewind``: the most the rewinds run may cost together, by their
            ledgers' estimates; a rewind that would pass a cap, or whose cost no ledger
            recorded, is not run.
        canary: Only the threads ``in_canary`` picks for this percent; the others are
            reported ``later``.
        batch: Threads read and planned together (``check_threads``).

    Yields:
        A ``ThreadUpgrade`` per thread.

    Raises:
        GraphError: The graph was not compiled by neograph-ext or has no checkpointer.
        ValueError: ``canary`` is not a percent, or ``rewind`` without ``apply``.
    """
    _checked(apply, rewind, canary)
    saver, spent = checkpointer_of(stamped(graph)), Spend()
    for check in check_threads(graph, threads, batch=batch):
        found = _found(check, canary)
        if found.action is UpgradeAction.REWIND:
            found = _costed(found, read_ledger(saver, found.thread_id))
        if apply and found.action is UpgradeAction.CARRY:
            found = _carried(graph, found)
        elif apply and rewind and found.action is UpgradeAction.REWIND:
            found, cost = _bounded(found, max_cost, spent)
            if cost is not None:
                found = _rewound(graph, found)
                spent = spent + cost if found.done else spent
        yield found


async def aupgrade_threads(
    graph: Pregel[Any, Any, Any, Any],
    threads: Iterable[str] | None = None,
    *,
    apply: bool = False,
    rewind: bool = False,
    max_cost: Budget | None = None,
    canary: float | None = None,
    batch: int = BATCH,
) -> AsyncIterator[ThreadUpgrade]:
    """Async twin of ``upgrade_threads``."""
    _checked(apply, rewind, canary)
    saver, spent = checkpointer_of(stamped(graph)), Spend()
    async for check in acheck_threads(graph, threads, batch=batch):
        found = _found(check, canary)
        if found.action is UpgradeAction.REWIND:
            found = _costed(found, await aread_ledger(saver, found.thread_id))
        if apply and found.action is UpgradeAction.CARRY:
            found = await _acarried(graph, found)
        elif apply and rewind and found.action is UpgradeAction.REWIND:
            found, cost = _bounded(found, max_cost, spent)
            if cost is not None:
                found = await _arewound(graph, found)
                spent = spent + cost if found.done else spent
        yield found


def _checked(apply: bool, rewind: bool, canary: float | None) -> None:
    if rewind and not apply:
        raise ValueError("rewind=True runs nodes: it needs apply=True")
    if canary is not None and not 0 < canary <= 100:
        raise ValueError(f"canary is a percent of the threads, above 0 and up to 100: {canary}")


def _found(check: ThreadCheck, canary: float | None) -> ThreadUpgrade:
    """What the upgrade would do with a thread, from its plan: what a resume would do
    first, when it needs no node run."""
    plan = check.plan
    if canary is not None and not in_canary(plan.thread_id, canary):
        action = UpgradeAction.LATER
    elif plan.kind is PlanKind.SUPERSEDED:
        action = UpgradeAction.SUPERSEDED
    elif plan.blocker:
        action = UpgradeAction.BLOCKED
    elif plan.migrated or plan.carried_from:
        action = UpgradeAction.CARRY
    elif plan.kind is PlanKind.UNVERIFIED and not plan.next_nodes:
        action = UpgradeAction.CARRY  # a finished thread plain LangGraph wrote: adopted, stamped
    elif plan.kind is PlanKind.REWIND or (plan.kind is PlanKind.CONTINUE and check.rewinding):
        action = UpgradeAction.REWIND  # a rewind cut short (this upgrade killed, say) is owed
    else:
        action = UpgradeAction.NOTHING
    return ThreadUpgrade(plan.thread_id, action, plan, check.written_by)


def _costed(found: ThreadUpgrade, ledger: Ledger | None) -> ThreadUpgrade:
    if found.plan.kind is not PlanKind.REWIND:
        return found  # the rest of a rewind cut short: which steps are left, no ledger says
    cost = DeployCost().plus(found.plan, found.written_by, ledger).total
    spend = None if cost.unrecorded else cost.spend
    return replace(found, cost=spend)


def _bounded(
    found: ThreadUpgrade, cap: Budget | None, spent: Spend
) -> tuple[ThreadUpgrade, Spend | None]:
    """The rewind, and its cost when it may run within ``cap`` after ``spent``; else
    None, and the rewind noted with why not."""
    if cap is None:
        return found, found.cost or Spend()
    if found.cost is None:
        why = "not run: no budget ledger recorded what it costs, and a max cost is set"
        if found.plan.kind is not PlanKind.REWIND:
            why = "not run: a rewind cut short, whose rest no ledger prices, and a max cost is set"
        return replace(found, note=why), None
    after = spent + found.cost
    limits = {"supersteps": cap.max_supersteps, "model_calls": cap.max_model_calls}
    limits["tokens"] = cap.max_tokens
    over = [m for m, most in limits.items() if most is not None and getattr(after, m) > most]
    if over:
        why = f"not run: it would take the rewinds past the max cost ({', '.join(over)})"
        return replace(found, note=why), None
    return found, found.cost


def _carried(graph: Pregel[Any, Any, Any, Any], found: ThreadUpgrade) -> ThreadUpgrade:
    call = thread_call(graph, _config(found.thread_id), Asked("run", lock=_AT_ONCE))
    try:
        with Driver(call) as driver:
            return _left(found, *driver.run(carried_forward(call)))
    except ThreadBusyError as exc:
        return _skipped(found, exc)
    except NeographExtError as exc:
        return _refused(found, exc)


async def _acarried(graph: Pregel[Any, Any, Any, Any], found: ThreadUpgrade) -> ThreadUpgrade:
    call = thread_call(graph, _config(found.thread_id), Asked("run", lock=_AT_ONCE))
    try:
        async with AsyncDriver(call) as driver:
            return _left(found, *(await driver.run(carried_forward(call))))
    except ThreadBusyError as exc:
        return _skipped(found, exc)
    except NeographExtError as exc:
        return _refused(found, exc)


def _rewound(graph: Pregel[Any, Any, Any, Any], found: ThreadUpgrade) -> ThreadUpgrade:
    config = _config(found.thread_id)
    try:
        run(graph, None, config, lock=_AT_ONCE)
    except ThreadBusyError as exc:
        return _skipped(found, exc)
    except NeographExtError as exc:  # a budget stop, say: the thread stays resumable
        return _refused(found, exc, UpgradeAction.REWIND)
    return _left(found, True, plan(graph, config))


async def _arewound(graph: Pregel[Any, Any, Any, Any], found: ThreadUpgrade) -> ThreadUpgrade:
    config = _config(found.thread_id)
    try:
        await arun(graph, None, config, lock=_AT_ONCE)
    except ThreadBusyError as exc:
        return _skipped(found, exc)
    except NeographExtError as exc:
        return _refused(found, exc, UpgradeAction.REWIND)
    return _left(found, True, await aplan(graph, config))


def _left(found: ThreadUpgrade, done: bool, after: ResumePlan) -> ThreadUpgrade:
    action = found.action if done else UpgradeAction.NOTHING
    return replace(found, action=action, done=done, after=after)


def _skipped(found: ThreadUpgrade, exc: ThreadBusyError) -> ThreadUpgrade:
    return replace(found, action=UpgradeAction.BUSY, note=str(exc))


def _refused(
    found: ThreadUpgrade, exc: NeographExtError, action: UpgradeAction = UpgradeAction.BLOCKED
) -> ThreadUpgrade:
    return replace(found, action=action, note=str(exc))


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}
