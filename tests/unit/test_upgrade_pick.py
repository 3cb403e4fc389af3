"""What ``upgrade_threads`` decides from a plan alone: the action, the canary's pick, and
which rewinds ``max_cost`` lets run."""

from __future__ import annotations

from neograph_ext._fleet import ThreadCheck
from neograph_ext._upgrade import ThreadUpgrade, UpgradeAction, _bounded, _found, in_canary
from neograph_ext.decision._budget import Budget, Spend
from neograph_ext.decision._decision import PlanKind, ResumePlan


def _action(plan: ResumePlan, canary: float | None = None) -> UpgradeAction:
    return _found(ThreadCheck(plan, "old", False), canary).action


def test_the_action_is_what_a_resume_does_first() -> None:
    done = frozenset({"summary"})
    assert _action(ResumePlan(PlanKind.MIGRATE, "t", migrated=done)) is UpgradeAction.CARRY
    carried = (("summary", "abc"),)
    assert _action(ResumePlan(PlanKind.REWIND, "t", carried_from=carried)) is UpgradeAction.CARRY
    assert _action(ResumePlan(PlanKind.UNVERIFIED, "t")) is UpgradeAction.CARRY
    waiting = ResumePlan(PlanKind.UNVERIFIED, "t", next_nodes=frozenset({"ask"}))
    assert _action(waiting) is UpgradeAction.NOTHING  # adopted by the resume that answers
    assert _action(ResumePlan(PlanKind.REWIND, "t")) is UpgradeAction.REWIND
    assert _action(ResumePlan(PlanKind.SUPERSEDED, "t")) is UpgradeAction.SUPERSEDED
    refused = ResumePlan(PlanKind.REWIND, "t", migrated=done, blocker="an earlier turn")
    assert _action(refused) is UpgradeAction.BLOCKED
    assert _action(ResumePlan(PlanKind.UP_TO_DATE, "t")) is UpgradeAction.NOTHING
    assert _action(ResumePlan(PlanKind.CONTINUE, "t")) is UpgradeAction.NOTHING


def test_the_canary_is_a_stable_share_of_the_ids() -> None:
    ids = [f"thread-{n}" for n in range(10_000)]
    picked = [t for t in ids if in_canary(t, 5)]
    assert 400 < len(picked) < 600
    assert picked == [t for t in ids if in_canary(t, 5)]
    assert set(picked) <= {t for t in ids if in_canary(t, 20)}  # a larger canary grows it
    assert all(in_canary(t, 100) for t in ids)
    outside = ResumePlan(PlanKind.MIGRATE, next(t for t in ids if not in_canary(t, 5)))
    assert _action(outside, canary=5) is UpgradeAction.LATER


def test_max_cost_runs_a_rewind_only_within_the_cap_and_with_a_record() -> None:
    plan = ResumePlan(PlanKind.REWIND, "t")
    costed = ThreadUpgrade("t", UpgradeAction.REWIND, plan, "old", cost=Spend(1, 3, 30))
    unknown = ThreadUpgrade("t", UpgradeAction.REWIND, plan, "old")
    cap = Budget(max_model_calls=10)

    assert _bounded(costed, None, Spend(0, 100, 0)) == (costed, Spend(1, 3, 30))
    assert _bounded(unknown, None, Spend()) == (unknown, Spend())
    assert _bounded(costed, cap, Spend(0, 7, 0)) == (costed, Spend(1, 3, 30))
    over, cost = _bounded(costed, cap, Spend(0, 8, 0))
    assert cost is None and over.note and "model_calls" in over.note
    skipped, cost = _bounded(unknown, cap, Spend())
    assert cost is None and skipped.note and "no budget ledger" in skipped.note
