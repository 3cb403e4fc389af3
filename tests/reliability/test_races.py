"""Several processes call ``run()`` on one thread at the same moment.

Racers start, open their own connections, compile the graph, say they are ready,
then wait for a shared go file, so their ``run()`` calls start within a millisecond
or two of each other. Nodes sleep a little so the runs would overlap without the lock.

These tests need ``run(..., on_busy=..., lock_timeout=...)``: the thread lock wired
into ``run``. One way: each racer is a process running the sync driver.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import neograph_ext as ne
from tests.reliability import harness as h
from tests.reliability.worker import NODES

pytestmark = pytest.mark.slow

V2 = "c=float"
RACERS = 3
DELAY = 0.05


def race(
    db: str, thread: str, log: Path, tmp_path: Path, *, racers: int = RACERS, **options: Any
) -> list[h.Outcome]:
    go = tmp_path / "go"
    go.unlink(missing_ok=True)
    started = []
    for i in range(racers):
        ready = tmp_path / f"ready-{i}"
        ready.unlink(missing_ok=True)
        started.append(
            (h.spawn(db, thread, log, ready=ready, go=go, delay=DELAY, **options), ready)
        )
    for racer, ready in started:
        h.wait_for(ready, alive=racer)
    go.touch()
    return [racer.wait() for racer, _ in started]


def assert_same_final_state(outcomes: list[h.Outcome], code: str | None = None) -> None:
    errors = [o for o in outcomes if o.status != "ok"]
    assert not errors, errors
    assert all(o.result == h.reference(code) for o in outcomes)


@pytest.mark.parametrize("round_", range(2))
def test_racing_on_a_new_thread_runs_each_node_once(
    db: str, thread: str, log: Path, tmp_path: Path, round_: int
) -> None:
    outcomes = race(db, thread, log, tmp_path)

    assert_same_final_state(outcomes)
    assert h.counts(log) == Counter(NODES), "a node ran twice"


@pytest.mark.parametrize("node", ["b", "d"])
def test_racing_to_resume_a_killed_run_runs_each_node_once(
    db: str, thread: str, log: Path, tmp_path: Path, node: str
) -> None:
    h.kill_at(db, thread, log, node, tmp_path / "signals")
    before = h.counts(log)

    outcomes = race(db, thread, log, tmp_path)

    assert_same_final_state(outcomes)
    again = h.since(log, before)
    h.assert_each_at_most_once(again)
    assert again[node] == 1


def test_racing_to_rewind_after_a_deploy_rewinds_once(
    db: str, thread: str, log: Path, tmp_path: Path
) -> None:
    assert h.run_worker(db, thread, log).status == "ok"
    before = h.counts(log)

    outcomes = race(db, thread, log, tmp_path, code=V2)

    assert_same_final_state(outcomes, V2)
    # d, c's parallel sibling, is unchanged: its finished work is kept.
    assert h.since(log, before) == Counter("cef"), "the rewind ran more than once"
    assert h.sources(db, thread)["fork"] == 1


def test_racing_with_on_busy_raise_one_runs_the_others_refuse(
    db: str, thread: str, log: Path, tmp_path: Path
) -> None:
    outcomes = race(db, thread, log, tmp_path, on_busy="raise")

    statuses = Counter(o.status for o in outcomes)
    assert set(statuses) <= {"ok", "busy"}, outcomes
    assert statuses["ok"] >= 1
    assert all(o.result == h.reference() for o in outcomes if o.status == "ok")
    assert all(thread in o.error for o in outcomes if o.status == "busy")
    assert h.counts(log) == Counter(NODES), "a node ran twice"


def test_a_killed_lock_holder_does_not_leave_the_thread_stuck(
    db: str, thread: str, log: Path, tmp_path: Path
) -> None:
    signals = tmp_path / "signals"
    signals.mkdir()
    holder = h.spawn(db, thread, log, block_at="c", signal_dir=signals)
    h.wait_for(signals / "c", alive=holder)
    # ``d`` runs beside the blocked ``c``: count from once it has run, or its own
    # execution would be taken for the refused runs'.
    deadline = time.monotonic() + 30
    while h.counts(log)["d"] < 1:
        assert time.monotonic() < deadline, "the holder never ran d"
        time.sleep(0.01)
    before = h.counts(log)

    refused = h.run_worker(db, thread, log, on_busy="raise")
    timed_out = h.run_worker(db, thread, log, lock_timeout=0.5)

    assert refused.status == "busy", refused
    assert timed_out.status == "busy", timed_out
    assert thread in timed_out.error and "0.5 s" in timed_out.error
    assert h.since(log, before) == Counter(), "a refused run executed a node"

    holder.kill()
    # SQLite: the OS dropped the flock with the process. PostgreSQL: the server
    # ends the session when its socket closes; allow it a moment to notice.
    resumed = h.run_worker(db, thread, log, lock_timeout=10)

    assert resumed.status == "ok", resumed.error
    assert resumed.result == h.reference()
    assert h.since(log, before) == Counter("cdef") or h.since(log, before) == Counter("cef")
    assert h.plan_kind(db, thread) is ne.PlanKind.UP_TO_DATE
