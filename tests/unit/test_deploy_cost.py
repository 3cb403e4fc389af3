"""``DeployCost.of``: what a fleet's rewinds repeat, and what their ledgers say it costs."""

from __future__ import annotations

from neograph_ext.decision._budget import Ledger, Spend
from neograph_ext.decision._decision import PlanKind, ResumePlan, TaskStep
from neograph_ext.decision._deploy_cost import CostLine, DeployCost, repeated

LEDGER = Ledger(Spend(3, 4, 40), (), {"draft": Spend(0, 1, 10), "review": Spend(0, 2, 20)})


def _rewind(thread: str, *rerun: str, kept: str = "draft") -> ResumePlan:
    steps = (TaskStep(kept, 0, True), *(TaskStep(n, i + 1, False) for i, n in enumerate(rerun)))
    return ResumePlan(PlanKind.REWIND, thread, rerun=frozenset(rerun), steps=steps)


def test_a_rewind_costs_what_its_repeated_nodes_last_spent() -> None:
    cost = DeployCost.of([(_rewind("t1", "review"), "old", LEDGER)])

    assert cost.total == CostLine(threads=1, runs=1, spend=Spend(1, 2, 20))
    assert cost.nodes == {"review": CostLine(threads=1, runs=1, spend=Spend(0, 2, 20))}
    assert cost.stamps == {"old": cost.total}


def test_threads_sum_per_node_and_per_code_version() -> None:
    cost = DeployCost.of(
        [
            (_rewind("t1", "review"), "v1", LEDGER),
            (_rewind("t2", "draft", "review", kept="start"), "v1", LEDGER),
            (_rewind("t3", "review"), "v2", LEDGER),
        ]
    )

    assert cost.total == CostLine(threads=3, runs=4, spend=Spend(4, 7, 70))
    assert cost.nodes["review"] == CostLine(threads=3, runs=3, spend=Spend(0, 6, 60))
    assert cost.nodes["draft"] == CostLine(threads=1, runs=1, spend=Spend(0, 1, 10))
    assert cost.stamps["v1"] == CostLine(threads=2, runs=3, spend=Spend(3, 5, 50))
    assert cost.stamps["v2"] == CostLine(threads=1, runs=1, spend=Spend(1, 2, 20))


def test_a_thread_without_a_full_record_adds_runs_and_no_spend() -> None:
    partial = Ledger(Spend(1, 1, 10), (), {"draft": Spend(0, 1, 10)})
    cost = DeployCost.of(
        [
            (_rewind("none", "review"), "v1", None),
            (_rewind("partial", "draft", "review", kept="start"), "v1", partial),
            (_rewind("full", "review"), "v1", LEDGER),
        ]
    )

    assert cost.total == CostLine(threads=3, runs=4, unrecorded=2, spend=Spend(1, 2, 20))
    assert cost.nodes["draft"] == CostLine(threads=1, runs=1, unrecorded=1)
    assert cost.nodes["review"].unrecorded == 2


def test_plans_that_repeat_nothing_cost_nothing() -> None:
    blocked = ResumePlan(PlanKind.REWIND, "b", rerun=frozenset({"x"}), blocker="refused")
    plans = [
        ResumePlan(PlanKind.UP_TO_DATE, "u"),
        ResumePlan(PlanKind.MIGRATE, "m", migrated=frozenset({"review"})),
        ResumePlan(PlanKind.CONTINUE, "c", next_nodes=frozenset({"review"})),
        blocked,
    ]

    assert DeployCost.of((plan, "v1", LEDGER) for plan in plans) == DeployCost()
    assert repeated(blocked) == []


def test_a_plan_without_steps_repeats_each_rerun_node_once() -> None:
    plan = ResumePlan(PlanKind.REWIND, "t", rerun=frozenset({"review", "draft"}))

    assert repeated(plan) == [("draft", 0), ("review", 1)]
    assert DeployCost.of([(plan, None, LEDGER)]).stamps[None].spend == Spend(2, 3, 30)
