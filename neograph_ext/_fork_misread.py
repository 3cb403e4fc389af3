"""Whether the values of the checkpoint a rewind forks from read back as declared.

The nodes a rewind runs again read the values of the checkpoint it forks from, not the
head's: a value an earlier node wrote there may have been replaced since (a key cleared
once used), so the head's check (``_misread.head_misread``) never sees it.

Rules:
- Only a rewind's target is read, once per target (``judged_fork``). While it holds a
  value that does not read back, the plan is decided again with it (``HeadFacts.
  fork_misread``): the record that last wrote the value up to the target counts as
  changed (``_plan``), so each round forks earlier, and it ends at a target whose
  values read back, one already judged, or a plan that does not rewind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from langchain_core.runnables import RunnableConfig

from neograph_ext._decision import HeadFacts, PlanKind, ResumePlan
from neograph_ext._misread import misread
from neograph_ext._operations import Flow, ReadTuple
from neograph_ext._revive import Revival
from neograph_ext._thread import at_checkpoint

__all__ = ["judged_fork"]


def judged_fork(
    config: RunnableConfig,
    checked: Revival,
    facts: HeadFacts,
    plan: ResumePlan,
    decided: Callable[[HeadFacts], ResumePlan],
) -> Flow[ResumePlan]:
    """``plan``, or, when the checkpoint it rewinds to holds values that do not read
    back, the plan ``decided`` with them, until its target's values read back.

    Args:
        config: The call's config (names the thread).
        checked: The graph's ``Revival``.
        facts: The head's facts ``plan`` was decided with.
        plan: The decision.
        decided: Decides again with other facts of the head.
    """
    judged = dict(facts.fork_misread)
    while (
        plan.kind is PlanKind.REWIND
        and not plan.blocker
        and plan.checkpoint_id is not None
        and plan.checkpoint_id != facts.checkpoint_id
        and plan.checkpoint_id not in judged
    ):
        target = yield ReadTuple(at_checkpoint(config, plan.checkpoint_id))
        values = target.checkpoint.get("channel_values") or {} if target is not None else {}
        judged[plan.checkpoint_id] = found = misread(checked, values)
        if not found:
            break
        facts = replace(facts, fork_misread=dict(judged))
        plan = decided(facts)
    return plan
