"""Whether the values of the checkpoint a rewind forks from read back as declared.

The nodes a rewind runs again read the values of the checkpoint it forks from, not the
head's: a value an earlier node wrote there may have been replaced since (a key cleared
once used), so the head's check (``_misread.head_misread``) never sees it.

Rules:
- Only a rewind's target is read, once per target (``judged_fork``), and only when a
  channel declares a class the serializer stores by path. While it holds a
  value that does not read back, the plan is decided again with it (``HeadFacts.
  fork_misread``): the record that last wrote the value up to the target counts as
  changed (``_plan``), so each round forks earlier, and it ends at a target whose
  values read back, one already judged, or a plan that does not rewind.
- Only a value replaced since is judged there: one the head still holds is the head's
  check's (which judges a value of an earlier turn by its own rules). One that check
  does not judge (a complete head's) is named in a note of the rewind: no rewind can
  rebuild a value that crossed turns through the checkpoint.
- A ``DeltaChannel`` is not judged there: its checkpoint holds a log of writes, not the
  value nodes read, and what it accumulated up to the target is still in the head's
  value, which the head's check judges as LangGraph rebuilds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from langchain_core.runnables import RunnableConfig

from neograph_ext.decision._decision import HeadFacts, PlanKind, ResumePlan
from neograph_ext.decision._misread import misread
from neograph_ext.decision._operations import Flow, ReadTuple
from neograph_ext.decision._revive import Revival, revived_classes
from neograph_ext.drivers._thread import at_checkpoint

__all__ = ["judged_fork"]


def judged_fork(
    config: RunnableConfig,
    checked: Revival,
    held: Mapping[str, Any],
    facts: HeadFacts,
    plan: ResumePlan,
    decided: Callable[[HeadFacts], ResumePlan],
    deltas: Callable[[], Iterable[str]] = tuple,
) -> Flow[ResumePlan]:
    """``plan``, or, when the checkpoint it rewinds to holds values that do not read
    back, the plan ``decided`` with them, until its target's values read back.

    Args:
        config: The call's config (names the thread).
        checked: The graph's ``Revival``.
        held: The head's stored values.
        facts: The head's facts ``plan`` was decided with.
        plan: The decision.
        decided: Decides again with other facts of the head.
        deltas: The graph's ``DeltaChannel``s, which are not judged here (asked only
            when a target is read: finding them walks the graph's nodes).
    """
    if plan.kind is not PlanKind.REWIND or not any(
        next(revived_classes(tp), None) for tp in checked.types.values()
    ):
        return plan  # no channel holds a class the serializer could hand back as data
    judged = dict(facts.fork_misread)
    delta = frozenset(deltas())
    crossed: dict[str, str] = {}
    while (
        plan.kind is PlanKind.REWIND
        and not plan.blocker
        and plan.checkpoint_id is not None
        and plan.checkpoint_id != facts.checkpoint_id
        and plan.checkpoint_id not in judged
    ):
        target = yield ReadTuple(at_checkpoint(config, plan.checkpoint_id))
        stored = target.checkpoint.get("channel_values") or {} if target is not None else {}
        values = {ch: value for ch, value in stored.items() if ch not in delta}
        found: dict[str, str] = {}
        crossed = {}
        for channel, why in misread(checked, values).items():
            replaced = channel not in held or _replaced(held[channel], values[channel])
            (found if replaced else crossed)[channel] = why
        judged[plan.checkpoint_id] = found
        if not found:
            break
        facts = replace(facts, fork_misread=dict(judged))
        plan = decided(facts)
    crossed = {ch: why for ch, why in crossed.items() if ch not in facts.misread}
    if plan.kind is not PlanKind.REWIND or plan.blocker or not crossed:
        return plan
    return replace(plan, notes=(*plan.notes, _crossed_note(crossed)))


def _crossed_note(crossed: Mapping[str, str]) -> str:
    return (
        f"the rewind hands on stored values that do not read back "
        f"({'; '.join(crossed[ch] for ch in sorted(crossed))}): the head holds them too, "
        "so no rewind can rebuild them, and a node that reads one gets the plain data. "
        "Fix: define the class at the top level of an importable module (or allow it on "
        "the saver's msgpack allowlist); neograph_ext.unrevivable_types(graph) names it"
    )


def _replaced(held: object, stored: object) -> bool:
    """Whether the head holds another value than the fork's (a value that cannot be
    compared counts as another)."""
    try:
        return bool(held != stored)
    except Exception:  # a value whose comparison fails (an array, say): judged anyway
        return True
