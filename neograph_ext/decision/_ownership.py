"""Who owns a thread during a rolling deploy: older code never undoes newer code's work.

Rules:
- The owner is the code whose stamp the newest stamped checkpoint of the lineage names,
  or the code that last claimed that checkpoint waiting on a question (``_claim``).
- Newer is the order in which the database first stored each stamp (``_stamp_order``,
  ``HeadFacts.stamp_order``), the same for every worker and free of their clocks; a
  stamp it does not list counts as newer than all it lists when it is the current
  code's (code not deployed yet), older otherwise.
- A take-over (``ResumePolicy(take_over=True)``, ``accept``) marks every checkpoint it
  writes with the stamp it took the thread from (``Record.took_from``): on this thread
  its code then counts as newer than that one, whatever the order, until the other
  code takes the thread back the same way. The latest take-over between two stamps
  wins, so neither takes the thread back silently: no ping-pong either way.
- When the owner outranks the current code, the plan is ``superseded`` (nothing runs,
  nothing is written), whatever it would have done: a thread is pinned to the newest
  code that wrote it, as durable execution engines pin a run to its version, so old
  code neither undoes the new code's work nor adds old work the new code would undo.
  With ``take_over`` the plan stands, naming the stamp it takes the thread from. A
  thread planned fresh, or blocked for being another graph's, is left as it is.
- Pure: records and stamp ids in, a ``ResumePlan`` out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from neograph_ext.decision._decision import PlanKind, ResumePlan
from neograph_ext.decision._history import Record
from neograph_ext.decision._stamp import Stamp, StampRef

__all__ = ["outranks", "owned", "owner", "superseded_message"]

_PREFIX = 16
"""Hex digits of a stamp id a take-over's mark records."""


def owner(records: Sequence[Record]) -> str | None:
    """The stamp id of the code that last wrote the lineage, if any wrote it stamped: a
    claim on the head (``_claim``) counts as the claimant's write."""
    for stamp, _ in _marks(records):
        return stamp.id
    return None


def _marks(records: Sequence[Record]) -> Iterator[tuple[Stamp | StampRef, str | None]]:
    """Each stamped write of the lineage, newest first: the stamp it was written under,
    and the stamp whose code it took the thread over from."""
    for record in reversed(records):
        for claim in reversed(record.claims):
            yield claim.stamp, claim.took_from
        if isinstance(record.stamp, Stamp | StampRef):
            yield record.stamp, record.took_from


def outranks(holder: str, current: str, records: Sequence[Record], order: Sequence[str]) -> bool:
    """Whether the code of stamp ``holder`` counts as newer than ``current``'s on the
    thread of ``records``: by the latest take-over between the two, else by ``order``."""
    for stamp, took in _marks(records):
        if took is None:
            continue
        if stamp.id == holder and took == current[:_PREFIX]:
            return True
        if stamp.id == current and took == holder[:_PREFIX]:
            return False
    if current not in order or holder not in order:
        return False
    return order.index(holder) > order.index(current)


def owned(
    plan: ResumePlan,
    records: Sequence[Record],
    current: Stamp,
    order: Sequence[str],
    *,
    take_over: bool = False,
) -> ResumePlan:
    """``plan``, unless it would undo the work of code that outranks the current code:
    then ``superseded``, or with ``take_over`` the plan taking the thread from it."""
    if plan.kind is PlanKind.FRESH or (plan.blocker and plan.kind is not PlanKind.REWIND):
        return plan
    holder = owner(records)
    if holder is None or holder == current.id or not outranks(holder, current.id, records, order):
        return plan
    if take_over:
        return replace(plan, taken_from=holder, notes=(*plan.notes, _took_over(holder)))
    return ResumePlan(
        PlanKind.SUPERSEDED,
        plan.thread_id,
        head_id=plan.head_id,
        invalidated_nodes=plan.invalidated_nodes,
        changes=plan.changes,
        next_nodes=plan.next_nodes,
        owner=holder,
        order=plan.order,
        turn_input=plan.turn_input,
    )


def _took_over(holder: str) -> str:
    return (
        f"newer code (stamp {holder[:_PREFIX]}) owns this thread; this code takes it over "
        "(ResumePolicy(take_over=True)) and re-runs what that code wrote differently: from "
        "now on, that code must take the thread over in turn"
    )


def superseded_message(plan: ResumePlan) -> str:
    """Why a ``superseded`` plan does not run, and the ways out."""
    changed = "".join(f"\n{change.describe()}" for change in plan.changes)
    owner_id = (plan.owner or "")[:_PREFIX]
    return (
        f"thread {plan.thread_id!r} is owned by newer code: stamp {owner_id} last wrote it, "
        "and this code is older (the database stored its stamp first, or that code took "
        "the thread over from it). Older code leaves the thread alone, so that workers of "
        "an old and a new release serving it during a rolling deploy do not undo each "
        "other's work: nothing ran and nothing was written; a worker of the newer code "
        f"serves it.{' What differs from this code:' if changed else ''}{changed}\n"
        "To roll back deliberately, take the thread over: run with "
        "resume=ResumePolicy(take_over=True) (for a served graph, compile with it), or "
        "neograph-ext accept GRAPH --db URL --thread ID to keep its values as they are; "
        "neograph-ext plan GRAPH --db URL --thread ID --take-over shows what a take-over "
        "re-runs. Afterwards the newer code must take the thread over in turn."
    )
