"""Where the features of 0.3 meet: prune, the offline CI gate, the fleet check, rolling
deploys, budgets and telemetry, each proven alone, checked against each other on real
SQLite and PostgreSQL databases.

One database holds what a fleet holds after a rolling deploy: a thread the new release
owns (the old one must leave it alone), one the old release took back (a rollback), a
budgeted thread with its ledger, a thread a migration carried over and one at an
interrupt. Every way of planning a thread must then agree with ``plan``: the fleet's
``check_threads``, the offline gate (``plan_fixture``, ``check_fixtures``), before and
after ``prune(apply=True)``; a call that is refused spends and writes nothing, and tells
at most what it decided.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from neograph_ext.storage._stamp_order import ORDER_THREAD
from neograph_ext.testing import Outcome, check_fixtures
from tests.cli.support import DATABASE_KINDS, Database, async_saver, database
from tests.graphs.budget import CALLS, TOKENS
from tests.graphs.budget import pipeline as budget_pipeline
from tests.graphs.chat import ProfileV2, ProfileV3, chat, say
from tests.graphs.deploys import Release, SummaryV1, SummaryV2, SummaryV3, review
from tests.graphs.pipelines import model
from tests.graphs.pruning import cfg
from tests.integration.test_telemetry import TOLD, Recorder

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))
BUDGET = ne.budget.Budget(max_model_calls=100)
ROLLBACK = ne.ResumePolicy(take_over=True)


db = pytest.fixture(params=DATABASE_KINDS)(database)


class Fleet:
    """Two releases of the review graph and two of the budgeted pipeline on one
    database, with the threads a rolling deploy and a rollback leave."""

    def __init__(self, saver: BaseCheckpointSaver[Any], *, ask: bool = True) -> None:
        self.old = Release(SummaryV1, saver, ask=ask)
        self.new = Release(SummaryV2, saver, ask=ask)
        self.later = Release(SummaryV3, saver, ask=ask)  # about to be deployed: never stored
        self.runs: Counter[str] = Counter()
        self.spent_old = ne.compile(budget_pipeline(self.runs), checkpointer=saver, attach=[BUDGET])
        self.spent_new = ne.compile(
            budget_pipeline(self.runs),
            checkpointer=saver,
            versions={"review": "2"},
            attach=[BUDGET],
        )
        old, new = self.old.serving(), self.new.serving()
        ne.run(old, {"doc": "rolled"}, cfg("rolled"))  # waits for approval
        ne.run(new, None, cfg("rolled"))  # the new release rewinds it and owns it
        ne.run(old, {"doc": "back"}, cfg("rolled-back"))
        ne.run(new, None, cfg("rolled-back"))
        ne.run(old, None, cfg("rolled-back"), resume=ROLLBACK)  # and the old takes it back
        ne.run(self.spent_old, {"topic": "t"}, cfg("budgeted"))
        ne.run(self.spent_new, None, cfg("budgeted"))  # a rewind: review and publish again

    @property
    def threads(self) -> tuple[str, ...]:
        return ("rolled", "rolled-back", "budgeted")

    @property
    def graphs(self) -> tuple[Any, ...]:
        """Every code that serves the database, and the one about to be deployed."""
        return (self.old.graph, self.new.graph, self.later.graph, self.spent_old, self.spent_new)


def _key(plan: ne.ResumePlan) -> tuple[Any, ...]:
    return (plan.kind, plan.owner, frozenset(plan.rerun), plan.taken_from)


def _checked(graph: Any) -> dict[str, tuple[Any, ...]]:
    """Every thread the fleet's check finds (no reserved one), planned."""
    return {check.plan.thread_id: _key(check.plan) for check in ne.check_threads(graph)}


def _live(graph: Any, threads: tuple[str, ...]) -> dict[str, tuple[Any, ...]]:
    return {thread: _key(ne.plan(graph, cfg(thread))) for thread in threads}


def _counts(saver: BaseCheckpointSaver[Any], thread: str) -> tuple[int, Any]:
    """Checkpoints of the thread (every namespace, the ledger's included) and its ledger."""
    every = len(list(saver.list({"configurable": {"thread_id": thread}})))
    return every, ne.budget.ledger(saver, cfg(thread))


def _order(saver: BaseCheckpointSaver[Any]) -> list[str]:
    return [t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": ORDER_THREAD}})]


# 1. The offline gate after a rolling deploy


def test_a_fixture_of_a_thread_newer_code_owns_plans_superseded_offline_as_live(
    db: Database, tmp_path: Path
) -> None:
    fleet = Fleet(db.saver)
    ran = sum(fleet.old.runs.values()) + sum(fleet.new.runs.values())
    ne.export_threads(fleet.new.graph, tmp_path, threads=["rolled", "rolled-back"])
    fixtures = {f.thread_id: f for f in ne.testing.read_fixtures(tmp_path)}
    for graph in fleet.graphs[:3]:
        for thread, fixture in fixtures.items():
            for resume in (None, ROLLBACK):
                offline = ne.testing.plan_fixture(graph, fixture, resume=resume)
                assert offline == ne.plan(graph, cfg(thread), resume=resume), thread
    old_on_new = ne.testing.plan_fixture(fleet.old.graph, fixtures["rolled"])
    assert old_on_new.kind is ne.PlanKind.SUPERSEDED
    assert old_on_new.owner == fleet.new.graph.neograph_ext_stamp.id
    new_on_old = ne.testing.plan_fixture(fleet.new.graph, fixtures["rolled-back"])
    assert new_on_old.kind is ne.PlanKind.SUPERSEDED  # the rollback's take-over counts
    later = ne.testing.plan_fixture(fleet.graphs[2], fixtures["rolled"])
    assert later.kind is ne.PlanKind.REWIND and "summarize" in later.rerun
    assert sum(fleet.old.runs.values()) + sum(fleet.new.runs.values()) == ran


def test_code_stored_after_a_threads_owner_plans_alike_offline_though_the_fixture_omits_it(
    db: Database, tmp_path: Path
) -> None:
    fleet = Fleet(db.saver)
    ne.run(fleet.later.serving(), {"doc": "elsewhere"}, cfg("elsewhere"))  # V3 is stored now
    ne.export_threads(fleet.new.graph, tmp_path, threads=["rolled"])
    (fixture,) = ne.testing.read_fixtures(tmp_path)
    later = fleet.later.graph.neograph_ext_stamp.id
    assert later not in fixture.order  # past the newest stamp the thread names
    for graph in fleet.graphs[:3]:
        assert ne.testing.plan_fixture(graph, fixture) == ne.plan(graph, cfg("rolled"))
    assert ne.testing.plan_fixture(fleet.later.graph, fixture).kind is ne.PlanKind.REWIND


def test_the_gate_fails_old_code_on_a_newer_codes_thread_and_passes_the_newest(
    db: Database, tmp_path: Path
) -> None:
    fleet = Fleet(db.saver)
    ne.export_threads(fleet.new.graph, tmp_path, threads=["rolled"])
    old = check_fixtures(fleet.old.graph, tmp_path, allow="rewind")
    (refused,) = old.verdicts
    assert not old.ok and refused.outcome is Outcome.RAISE
    assert refused.plan is not None and refused.plan.kind is ne.PlanKind.SUPERSEDED
    assert refused.error is not None and "owned by newer code" in refused.error
    assert check_fixtures(fleet.new.graph, tmp_path).ok  # the owner resumes it
    later = check_fixtures(fleet.graphs[2], tmp_path, allow="rewind")
    assert later.ok and later.verdicts[0].outcome is Outcome.REWIND


def test_a_fixture_without_the_order_plans_the_code_checked_as_the_newest(
    db: Database, tmp_path: Path
) -> None:
    fleet = Fleet(db.saver)
    (path,) = ne.export_threads(fleet.new.graph, tmp_path, threads=["rolled"])
    document = json.loads(path.read_text())
    assert document["order"] == [
        fleet.old.graph.neograph_ext_stamp.id,
        fleet.new.graph.neograph_ext_stamp.id,
    ]
    del document["order"]  # as a file exported before the order was kept
    path.write_text(json.dumps(document))
    (fixture,) = ne.testing.read_fixtures(tmp_path)
    planned = ne.testing.plan_fixture(fleet.old.graph, fixture)
    assert planned.kind is ne.PlanKind.REWIND and planned.owner is None


# 2. The fleet's check against plan


def test_the_fleet_check_plans_every_thread_as_plan_does(db: Database) -> None:
    fleet = Fleet(db.saver)
    talked = ne.compile(chat(Counter()), checkpointer=db.saver)
    for thread in ("migrated", "kept"):
        ne.run(talked, say("hi"), cfg(thread))
        ne.run(talked, say("again"), cfg(thread))
    keeping = ne.compile(
        chat(Counter(), ProfileV2),
        checkpointer=db.saver,
        resume=ne.ResumePolicy(keep_compatible=True),
    )
    migrating = ne.compile(
        chat(Counter(), ProfileV3),
        checkpointer=db.saver,
        resume=ne.ResumePolicy(migrations={ProfileV3: lambda old: ProfileV3(full_name="Ada")}),
    )
    ne.run(keeping, None, cfg("kept"))
    ne.run(migrating, None, cfg("migrated"))
    blocked = ne.compile(chat(Counter(), ProfileV2), checkpointer=db.saver)
    threads = (*fleet.threads, "migrated", "kept")
    for graph in (*fleet.graphs, talked, keeping, migrating, blocked):
        assert _checked(graph) == _live(graph, threads)
    kinds = {thread: key[0] for thread, key in _live(fleet.old.graph, threads).items()}
    assert kinds["rolled"] is ne.PlanKind.SUPERSEDED
    assert kinds["rolled-back"] is ne.PlanKind.CONTINUE  # it waits on its question
    assert _live(fleet.new.graph, threads)["rolled-back"][0] is ne.PlanKind.SUPERSEDED
    assert _live(talked, threads)["kept"][0] is ne.PlanKind.SUPERSEDED


def test_the_async_fleet_check_and_aplan_agree_with_their_sync_twins(db: Database) -> None:
    fleet = Fleet(db.saver)
    summaries = (SummaryV1, SummaryV2, SummaryV3)
    expected = {
        summary: _live(graph, fleet.threads)
        for summary, graph in zip(summaries, fleet.graphs, strict=False)
    }

    async def planned() -> dict[Any, tuple[Any, Any]]:
        found = {}
        async with async_saver(db.url) as saver:
            for summary in summaries:
                graph = Release(summary, saver).graph
                checked = {c.plan.thread_id: _key(c.plan) async for c in ne.acheck_threads(graph)}
                live = {t: _key(await ne.aplan(graph, cfg(t))) for t in fleet.threads}
                found[summary] = (checked, live)
        return found

    for summary, (checked, live) in asyncio.run(planned()).items():
        assert checked == live == expected[summary], summary


# 3. Prune, then everything


def test_after_prune_ledgers_order_plans_checks_and_exports_are_as_before(
    db: Database, tmp_path: Path
) -> None:
    fleet = Fleet(db.saver, ask=False)  # prune leaves a thread waiting at a question alone
    ledgers = {thread: ne.budget.ledger(db.saver, cfg(thread)) for thread in fleet.threads}
    places = _order(db.saver)
    before = {id(graph): _live(graph, fleet.threads) for graph in fleet.graphs}
    exported = tmp_path / "before"
    ne.export_threads(fleet.new.graph, exported)
    offline_before = {
        (id(graph), f.thread_id): ne.testing.plan_fixture(graph, f)
        for graph in fleet.graphs
        for f in ne.testing.read_fixtures(exported)
    }

    report = ne.prune(fleet.new.graph, apply=True)
    assert {t.thread_id for t in report.threads if t.checkpoints} >= set(fleet.threads)

    assert {thread: ne.budget.ledger(db.saver, cfg(thread)) for thread in fleet.threads} == ledgers
    assert ledgers["budgeted"] is not None and ledgers["budgeted"].total.model_calls == 7
    assert _order(db.saver) == places and len(places) == 4
    after = tmp_path / "after"
    ne.export_threads(fleet.new.graph, after)
    fixtures = ne.testing.read_fixtures(after)
    assert {f.thread_id for f in fixtures} == set(fleet.threads)
    for graph in fleet.graphs:
        assert _live(graph, fleet.threads) == before[id(graph)]
        assert _checked(graph) == before[id(graph)]
        for fixture in fixtures:
            offline = ne.testing.plan_fixture(graph, fixture)
            assert offline == ne.plan(graph, cfg(fixture.thread_id))
            assert offline == offline_before[id(graph), fixture.thread_id]


# 4. A budget across a superseded refusal and a rollback's take-over


def test_a_refused_call_spends_and_writes_nothing_and_a_take_over_adds_its_spend(
    db: Database,
) -> None:
    fleet = Fleet(db.saver, ask=False)
    config = cfg("budgeted")
    before = _counts(db.saver, "budgeted")
    spent = before[1]
    assert spent is not None and spent.total.model_calls == CALLS + 3  # the rewind's three
    ran = Counter(fleet.runs)
    with pytest.raises(ne.ThreadSupersededError):
        ne.run(fleet.spent_old, None, config)
    with pytest.raises(ne.ThreadSupersededError):
        list(ne.stream(fleet.spent_old, {"topic": "again"}, config))
    assert _counts(db.saver, "budgeted") == before and fleet.runs == ran

    planned = ne.plan(fleet.spent_old, config, resume=ROLLBACK)
    assert planned.kind is ne.PlanKind.REWIND and planned.rerun == {"review", "publish"}
    assert planned.estimated_cost is not None and planned.estimated_cost.model_calls == 3
    ne.run(fleet.spent_old, None, config, resume=ROLLBACK)
    assert fleet.runs - ran == Counter({"review": 1, "publish": 1})
    taken = ne.budget.ledger(db.saver, config)
    assert taken is not None and taken.total.model_calls == spent.total.model_calls + 3
    assert taken.total.tokens == spent.total.tokens + 3 * TOKENS

    after = _counts(db.saver, "budgeted")  # the newer code must take it back in turn
    with pytest.raises(ne.ThreadSupersededError):
        ne.run(fleet.spent_new, None, config)
    assert _counts(db.saver, "budgeted") == after


def test_accept_takes_a_budgeted_thread_over_spending_nothing(db: Database, tmp_path: Path) -> None:
    fleet = Fleet(db.saver, ask=False)
    config = cfg("budgeted")
    spent, ran = ne.budget.ledger(db.saver, config), Counter(fleet.runs)
    ne.accept(fleet.spent_old, config)  # a take-over keeping the values: nothing runs
    assert ne.budget.ledger(db.saver, config) == spent and fleet.runs == ran
    for graph, kind in (
        (fleet.spent_old, ne.PlanKind.UP_TO_DATE),
        (fleet.spent_new, ne.PlanKind.SUPERSEDED),
    ):
        (path,) = ne.export_threads(graph, tmp_path / str(kind), threads=["budgeted"])
        (fixture,) = ne.testing.read_fixtures(path.parent)
        assert ne.plan(graph, config).kind is kind
        assert ne.testing.plan_fixture(graph, fixture) == ne.plan(graph, config)
        (checked,) = ne.check_threads(graph, ["budgeted"])
        assert _key(checked.plan) == _key(ne.plan(graph, config))


def test_a_budget_stopped_by_its_ledger_still_leaves_a_newer_codes_thread_alone(
    db: Database,
) -> None:
    fleet = Fleet(db.saver, ask=False)
    config = cfg("budgeted")
    capped = ne.compile(
        budget_pipeline(fleet.runs),
        checkpointer=db.saver,
        attach=[ne.budget.Budget(max_model_calls=5)],
    )
    before, ran = _counts(db.saver, "budgeted"), Counter(fleet.runs)
    with pytest.raises(ne.ThreadSupersededError):  # refused before any cap is looked at
        ne.run(capped, None, config)
    assert _counts(db.saver, "budgeted") == before and fleet.runs == ran
    with pytest.raises(ne.budget.BudgetExceededError):  # taken over, the cap stops the re-run
        ne.run(capped, None, config, resume=ROLLBACK)
    # The 8th call would pass the cap of 5: review started, and stopped before its call.
    assert fleet.runs - ran == Counter({"review": 1})
    stopped = ne.budget.ledger(db.saver, config)
    assert stopped is not None and stopped.total.model_calls == CALLS + 3


def test_a_served_budgeted_graph_refuses_a_newer_codes_thread_without_a_ledger_record(
    db: Database,
) -> None:
    fleet = Fleet(db.saver, ask=False)
    config = cfg("budgeted")
    served = ne.compile(
        budget_pipeline(fleet.runs), checkpointer=db.saver, attach=[ne.AutoResume(), BUDGET]
    )
    before, ran = _counts(db.saver, "budgeted"), Counter(fleet.runs)
    with pytest.raises(ne.ThreadSupersededError):
        served.invoke(None, config)
    with pytest.raises(ne.ThreadSupersededError):
        served.invoke({"topic": "a new turn"}, config)
    assert _counts(db.saver, "budgeted") == before and fleet.runs == ran


# 5. Telemetry on a refusal and on a budget stop


def _metadata(saver: BaseCheckpointSaver[Any], thread: str) -> list[dict[str, Any]]:
    """Every checkpoint's metadata of the thread, every namespace, without the ids that
    differ between two threads."""
    every = saver.list({"configurable": {"thread_id": thread}})
    return sorted(
        (
            {k: v for k, v in (t.metadata or {}).items() if k not in ("thread_id", "parents")}
            for t in every
        ),
        key=lambda found: json.dumps(found, sort_keys=True, default=str),
    )


def test_a_superseded_call_tells_nothing_and_writes_nothing(db: Database) -> None:
    fleet = Fleet(db.saver, ask=False)
    config = cfg("rolled")
    told = ne.compile(
        review(Counter(), SummaryV1, set(), ask=False), checkpointer=db.saver, attach=[TOLD]
    )
    served = ne.compile(
        review(Counter(), SummaryV1, set(), ask=False),
        checkpointer=db.saver,
        attach=[ne.AutoResume(), TOLD],
    )
    assert told.neograph_ext_stamp.id == fleet.old.graph.neograph_ext_stamp.id
    before = _counts(db.saver, "rolled")
    recorder = Recorder()
    for call in (
        lambda: ne.run(told, None, {**config, "callbacks": [recorder]}),
        lambda: list(ne.stream(told, {"doc": "again"}, {**config, "callbacks": [recorder]})),
        lambda: served.invoke(None, {**config, "callbacks": [recorder]}),
    ):
        with pytest.raises(ne.ThreadSupersededError):
            call()
    assert recorder.seen == []  # no graph run started, no event told
    assert _counts(db.saver, "rolled") == before


def test_a_budget_stop_tells_its_decision_once_and_adds_nothing_to_checkpoints(
    db: Database, runs: Counter[str]
) -> None:
    capped = ne.budget.Budget(max_model_calls=2)
    told = ne.compile(budget_pipeline(runs), checkpointer=db.saver, attach=[capped, TOLD])
    plain = ne.compile(budget_pipeline(Counter()), checkpointer=db.saver, attach=[capped])
    recorder = Recorder()
    with pytest.raises(ne.budget.BudgetExceededError):
        ne.run(told, {"topic": "t"}, {**cfg("told"), "callbacks": [recorder]})
    with pytest.raises(ne.budget.BudgetExceededError):
        ne.run(plain, {"topic": "t"}, cfg("untold"))
    assert runs == Counter({"draft": 1, "review": 1})  # stopped before review's own call
    (started,) = recorder.plans()
    assert started["kind"] == "fresh" and started["taken_from"] is None
    assert _metadata(db.saver, "told") == _metadata(db.saver, "untold")

    recorder.clear()  # a rollback's take-over, stopped by the ledger it adds to
    fleet = Fleet(db.saver, ask=False)
    taking = ne.compile(
        budget_pipeline(fleet.runs),
        checkpointer=db.saver,
        resume=ROLLBACK,
        attach=[ne.budget.Budget(max_model_calls=8), TOLD],
    )
    with pytest.raises(ne.budget.BudgetExceededError):
        ne.run(taking, None, {**cfg("budgeted"), "callbacks": [recorder]})
    (plan,) = recorder.plans()
    assert plan["kind"] == "rewind" and plan["rerun"] == ["review", "publish"]
    assert plan["taken_from"] == fleet.spent_new.neograph_ext_stamp.id  # a rollback, told so
    assert fleet.runs["review"] == 3  # the cap of 8 stopped the take-over's re-run in review
