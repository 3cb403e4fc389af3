"""The plan == run harness itself: it fails a call whose executions the plan did not say."""

from __future__ import annotations

import pytest

from neograph_ext import PlanKind, ResumePlan
from tests.integration.agreement import Call


def _call(plan: ResumePlan, ran: list[tuple[int, str]], new_turn: bool = False) -> Call:
    call = Call(plan, new_turn)
    call.executions.tasks.extend(ran)
    return call


@pytest.mark.parametrize(
    ("plan", "ran"),
    [
        (ResumePlan(PlanKind.UP_TO_DATE, "t"), [(1, "a")]),
        (ResumePlan(PlanKind.MIGRATE, "t", kept=frozenset("ab")), [(3, "b")]),
        (ResumePlan(PlanKind.CONTINUE, "t", next_nodes=frozenset("c")), [(3, "b"), (4, "c")]),
        (
            ResumePlan(PlanKind.REWIND, "t", rerun=frozenset("cd"), kept=frozenset("ab")),
            [(2, "b"), (3, "c"), (4, "d")],
        ),
    ],
    ids=["up-to-date-ran", "migrate-ran", "continue-ran-a-finished-node", "rewind-ran-kept"],
)
def test_a_disagreement_fails_the_test(plan: ResumePlan, ran: list[tuple[int, str]]) -> None:
    with pytest.raises(pytest.fail.Exception, match="plan and run disagree"):
        _call(plan, ran).check(None, {"configurable": {}}, RuntimeError("stop before reads"))


def test_a_new_turn_may_run_anything() -> None:
    call = _call(ResumePlan(PlanKind.UP_TO_DATE, "t"), [(6, "a")], new_turn=True)
    call.check(None, {"configurable": {}}, RuntimeError("no reads"))
