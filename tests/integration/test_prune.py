"""``prune`` on real SQLite and PostgreSQL databases after rewinds, accepts, a user's own
fork, a DeltaChannel thread and a thread waiting at an interrupt.

Each database is fresh (a SQLite file, or a PostgreSQL schema of its own), so the whole
database is what a test made. What ``prune`` reports is checked against the rows
themselves: the dry run names exactly what ``apply`` removes, the bytes are the bytes
the tables lost, and every thread reads and plans as before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import sqlite3
import threading
from collections import Counter
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

import neograph_ext as ne
from neograph_ext.storage._stamp_order import ORDER_THREAD
from neograph_ext.types import PruneSkip
from tests.cli.support import (
    DATABASE_KINDS,
    Database,
    async_saver,
    database,
    postgres_database,
    sqlite_database,
)
from tests.fixtures import v0_1_0 as fx
from tests.graphs.budget import pipeline as budget_pipeline
from tests.graphs.delta import Far, Near, fan
from tests.graphs.deploys import Release, SummaryV1, SummaryV2
from tests.graphs.notes import ItemV2, note, notes
from tests.graphs.pipelines import State, linear
from tests.graphs.pruning import LAST, THREADS, cfg, ids, namespaces, payload, reads, written

db = pytest.fixture(params=DATABASE_KINDS)(database)


def test_the_dry_run_names_exactly_what_apply_removes_and_every_thread_reads_as_before(
    db: Database,
) -> None:
    graph = written(db.saver)
    before, size, seen = ids(db.saver), payload(db.saver), {t: reads(graph, t) for t in THREADS}
    spaces = namespaces(db.saver)

    dry = ne.prune(graph)
    assert ids(db.saver) == before and payload(db.saver) == size  # a dry run writes nothing
    by_thread = {t.thread_id: t for t in dry.threads}
    assert by_thread["waiting"].skipped is PruneSkip.WAITING
    assert by_thread["user"].checkpoints == ()  # the user's fork stays by default
    for thread in ("rewound", "delta", "migrated", "subgraph"):
        assert by_thread[thread].checkpoints, thread
    assert len(by_thread["subgraph"].namespaces) == 1
    assert dry.descriptions, "the stamp only the abandoned branch named"

    done = ne.prune(graph, apply=True)
    after = ids(db.saver)
    assert dataclasses.replace(done, applied=False) == dry
    for thread in THREADS:
        assert before[thread] - after[thread] == set(by_thread[thread].checkpoints)
        gone = spaces.get(thread, set()) - namespaces(db.saver).get(thread, set())
        assert gone == set(by_thread[thread].namespaces), thread
    gone_threads = set(before) - set(after)
    assert gone_threads == {d.thread_id for d in dry.descriptions}
    assert size - payload(db.saver) == dry.bytes > 0
    for thread in THREADS:
        assert reads(graph, thread) == seen[thread], thread
    assert ne.prune(graph).checkpoints == 0


def test_all_branches_takes_the_users_fork_too_and_keep_last_keeps_what_is_read(
    db: Database,
) -> None:
    graph = written(db.saver)
    seen = {t: reads(graph, t)[:2] for t in THREADS}
    report = ne.prune(graph, all_branches=True, keep_last=1, apply=True)
    by_thread = {t.thread_id: t for t in report.threads}
    assert len(by_thread["user"].checkpoints) > 0
    for thread in THREADS:
        # State and next nodes read as before (the history before the cut is gone).
        assert reads(graph, thread)[:2] == seen[thread], thread


def test_a_thread_a_running_run_holds_is_skipped(db: Database, runs: Counter[str]) -> None:
    graph = written(db.saver)
    entered, release = threading.Event(), threading.Event()

    def slow(state: State) -> dict[str, Any]:
        entered.set()
        release.wait(30)
        return {"log": ["slow"]}

    builder = linear(runs, names=("a",))
    builder.add_node("slow", slow)
    builder.edges.discard(("a", END))
    builder.add_edge("a", "slow")
    builder.add_edge("slow", END)

    def deploy(version: str) -> Any:
        return ne.compile(builder, checkpointer=db.saver, versions={"a": version})

    release.set()
    ne.run(deploy("v1"), {"log": []}, cfg("busy"))
    ne.run(deploy("v2"), None, cfg("busy"))  # a rewind: v1's branch is abandoned
    release.clear()
    entered.clear()
    worker = threading.Thread(target=ne.run, args=(deploy("v3"), None, cfg("busy")))
    try:
        worker.start()  # the run holds the thread's lock until ``slow`` returns
        assert entered.wait(30)
        report = ne.prune(graph, apply=True)
    finally:
        release.set()
        worker.join(30)
    by_thread = {t.thread_id: t for t in report.threads}
    assert by_thread["busy"].skipped is PruneSkip.BUSY
    assert by_thread["rewound"].checkpoints  # the others were pruned meanwhile
    assert ne.prune(graph).checkpoints > 0  # once free, the abandoned branches are found


def test_another_saver_is_a_clear_error() -> None:
    graph = ne.compile(linear(Counter()), checkpointer=InMemorySaver())
    with pytest.raises(ne.GraphError, match="SQLite or PostgreSQL saver"):
        ne.prune(graph)


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_aprune_on_the_async_saver_does_what_prune_does(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    opened = (
        sqlite_database(tmp_path / "threads.sqlite")
        if kind == "sqlite"
        else postgres_database(request.getfixturevalue("pg_dsn"))
    )
    db = next(opened)
    try:
        graph = written(db.saver)
        dry, before = ne.prune(graph), ids(db.saver)

        async def pruned() -> tuple[ne.types.PruneReport, ne.types.PruneReport]:
            async with async_saver(db.url) as saver:
                target = ne.compile(LAST, checkpointer=saver)
                lite = kind == "sqlite"
                return await ne.aprune(target), await ne.aprune(
                    target, apply=True, vacuum_after=lite
                )

        async_dry, applied = asyncio.run(pruned())
        assert async_dry == dry
        assert dataclasses.replace(applied, applied=False, vacuumed=None) == dry
        if kind == "sqlite":
            assert applied.vacuumed is not None and applied.vacuumed[1] < applied.vacuumed[0]
        after = ids(db.saver)
        for thread in THREADS:
            assert before[thread] - after[thread] == set(applied_ids(applied, thread))
    finally:
        opened.close()


def applied_ids(report: ne.types.PruneReport, thread: str) -> tuple[str, ...]:
    (found,) = [t for t in report.threads if t.thread_id == thread]
    return found.checkpoints


@pytest.mark.parametrize("given", ["its graph", "another graph"])
def test_keep_last_keeps_every_ancestor_a_delta_channel_is_rebuilt_from(
    db: Database, given: str, runs: Counter[str]
) -> None:
    """Three turns on two DeltaChannel threads: ``far`` stores no snapshot, ``near`` one
    at every update. Cutting each lineage to its last turn removes nothing: ``far``'s
    value is rebuilt from every ancestor's writes, and a DeltaChannel accumulates, so
    every turn that appended stays for planning; both read as before. The same when
    prune is given a graph without the channel: the checkpoints' own metadata names
    their DeltaChannels."""
    for state, thread in ((Far, "far"), (Near, "near")):
        graph = ne.compile(fan(state, runs), checkpointer=db.saver)
        for turn in range(3):
            ne.run(graph, {"log": [f"turn {turn}"]}, cfg(thread))
    seen = {t: reads(graph, t)[:2] for t in ("far", "near")}
    before = ids(db.saver)

    unrelated = StateGraph(Unrelated).add_node("x", lambda s: {}).add_edge(START, "x")
    pruning = graph if given == "its graph" else ne.compile(unrelated, checkpointer=db.saver)
    report = ne.prune(pruning, keep_last=1, apply=True)

    by_thread = {t.thread_id: t for t in report.threads}
    assert by_thread["far"].checkpoints == by_thread["near"].checkpoints == ()
    assert ids(db.saver) == before
    for thread in ("far", "near"):
        assert reads(graph, thread)[:2] == seen[thread], thread
    assert graph.get_state(cfg("far")).values["log"][0] == "turn 0"


class Unrelated(TypedDict, total=False):
    """The state of a graph with no DeltaChannel and no reducer."""

    x: int


def test_a_database_written_by_0_1_0_prunes(tmp_path: Path) -> None:
    path = tmp_path / "v0_1_0.sqlite"
    shutil.copyfile(fx.DATABASE, path)
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        graph = fx.graph(SqliteSaver(conn), Counter(), fx.V2)
        # 0.1.0 wrote no forks, and its stamps live in metadata: nothing to prune.
        untouched = ne.prune(graph)
        assert untouched.checkpoints == 0 and untouched.descriptions == ()
        ne.run(graph, None, cfg(fx.DONE))  # a rewind to before ``c``, under 0.3's stamp
        threads = (fx.DONE, fx.CRASHED, fx.TWO_TURNS)
        seen = {t: reads(graph, t) for t in threads}

        report = ne.prune(graph, apply=True)

        by_thread = {t.thread_id: t for t in report.threads}
        assert len(by_thread[fx.DONE].checkpoints) == 2  # c's and d's of the 0.1.0 run
        assert report.checkpoints == 2
        for thread in threads:
            assert reads(graph, thread) == seen[thread], thread
    finally:
        conn.close()


def test_thread_ids_limit_it_to_those_threads(db: Database) -> None:
    graph = written(db.saver)
    everything = ne.prune(graph)
    report = ne.prune(graph, thread_ids=["delta", "missing"], apply=True)
    assert [t.thread_id for t in report.threads] == ["delta"]
    assert report.descriptions == () and everything.descriptions
    (delta,) = [t for t in everything.threads if t.thread_id == "delta"]
    assert report.threads == (delta,)
    assert ne.prune(graph).checkpoints == everything.checkpoints - len(delta.checkpoints)


def test_a_budget_s_ledger_survives_pruning_the_branch_its_rewind_left(
    db: Database, runs: Counter[str]
) -> None:
    budget = ne.budget.Budget(max_model_calls=100)
    config = cfg("budgeted")
    ne.run(ne.compile(budget_pipeline(runs), checkpointer=db.saver, attach=[budget]), {}, config)
    deployed = ne.compile(
        budget_pipeline(runs), checkpointer=db.saver, versions={"review": "v2"}, attach=[budget]
    )
    ne.run(deployed, None, config)  # a rewind: the first run's review and publish are left
    spent = ne.budget.ledger(db.saver, config)
    assert spent is not None and spent.total.model_calls == 7

    report = ne.prune(deployed, apply=True, thread_ids=["budgeted"])
    assert applied_ids(report, "budgeted")  # the abandoned branch went
    assert ne.budget.ledger(db.saver, config) == spent  # the spend it paid did not


def test_pruning_keeps_the_order_that_makes_old_code_leave_new_threads_alone(
    db: Database,
) -> None:
    config = cfg("rolled")
    old = Release(SummaryV1, db.saver, ask=False)
    ne.run(old.serving(), {"doc": "d"}, config)
    new = Release(SummaryV2, db.saver, ask=False)
    ne.run(new.serving(), None, config)  # the new code rewinds and owns the thread

    order = {"configurable": {"thread_id": ORDER_THREAD}}
    places = [tup.checkpoint["id"] for tup in db.saver.list(order)]
    report = ne.prune(new.graph, apply=True)
    assert applied_ids(report, "rolled")  # the old code's abandoned branch went
    assert [tup.checkpoint["id"] for tup in db.saver.list(order)] == places
    assert len(places) == 2
    assert ne.plan(old.serving(), config).kind is ne.PlanKind.SUPERSEDED
    before = sum(old.runs.values())
    with pytest.raises(ne.ThreadSupersededError):
        ne.run(old.serving(), None, config)
    assert sum(old.runs.values()) == before


def test_keep_last_keeps_every_turn_that_appended_an_item_a_deploy_must_judge(
    db: Database, runs: Counter[str]
) -> None:
    """Two turns append an item under the old code, a third under the new one (a plain
    call). The list still holds the old items: pruning to the last turn would leave the
    planner nothing to judge them by, and the thread would plan up to date."""
    old = ne.compile(notes(Counter()), checkpointer=db.saver)
    for text in ("one", "two"):
        ne.run(old, note(text), cfg("chat"))
    policy = ne.ResumePolicy(replay_turns=True)
    new = ne.compile(notes(runs, ItemV2), checkpointer=db.saver, resume=policy)
    new.invoke(note("three"), cfg("chat"))
    planned = ne.plan(new, cfg("chat"))
    assert planned.kind is ne.PlanKind.REWIND and len(planned.replayed) == 2

    before = ids(db.saver)["chat"]
    report = ne.prune(new, keep_last=1, apply=True)
    # Only what precedes turn 1's append goes (its input checkpoint): no rewind needs it.
    assert len(applied_ids(report, "chat")) == 1 and len(before) == 9
    assert ne.plan(new, cfg("chat")) == planned
    runs.clear()
    ne.run(new, None, cfg("chat"))
    assert runs == Counter({"take": 3})  # turn 1 re-ran, turns 2 and 3 replayed
