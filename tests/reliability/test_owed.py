"""Every write path of 0.2, SIGKILLed at each of its saver writes, then retried.

A worker makes the path's call (``paths.PATHS``) with a saver that kills the process
right before its Nth ``put`` or ``put_writes`` (``worker --kill-before N``), for every
N from 1 to the number of writes an unkilled call makes, and once right after the last
(``--kill-after``): every boundary between two writes is hit, deterministically. The
same call is then made again, unkilled. Then: the state is the state an unkilled call
leaves; every node an unkilled call runs ran, and no other; at most the node that was
executing when the process died ran once more; ``plan`` returns (within a timeout) and
says what it says after an unkilled call.

The paths that have an async call are killed through the async drivers too, on async
savers. The storm (``-m storm``, not run by default) kills at random moments instead.
"""

from __future__ import annotations

import random
import signal
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import neograph_ext as ne
from tests.drive import Drive
from tests.reliability import harness as h
from tests.reliability import worker
from tests.reliability.paths import PATHS, asking, crashed_in, final, retyped


def _config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def _prepared(db: str, name: str, log: Path) -> str:
    thread = f"owed-{name}-{uuid.uuid4()}"
    with worker.open_saver(db) as saver:
        PATHS[name].setup(saver, log, _config(thread))
    return thread


def _planned(db: str, name: str, thread: str, log: Path) -> ne.PlanKind:
    with worker.open_saver(db) as saver:
        graph = PATHS[name].graph(saver, log)
        return h.in_time(lambda: ne.plan(graph, _config(thread))).kind


@dataclass
class _Reference:
    """What an unkilled call of a path does."""

    outcome: h.Outcome
    ran: Counter[str]
    planned: ne.PlanKind


def _reference(db: str, name: str, tmp_path: Path, asynchronous: bool = False) -> _Reference:
    log = tmp_path / "reference.log"
    thread = _prepared(db, name, log)
    before = h.counts(log)
    outcome = h.run_worker(db, thread, log, path=name, asynchronous=asynchronous)
    assert outcome.status == "ok", outcome.error
    return _Reference(outcome, h.since(log, before), _planned(db, name, thread, log))


def _state(db: str, name: str, thread: str, log: Path) -> Any:
    with worker.open_saver(db) as saver:
        return h.jsonable(final(PATHS[name].graph(saver, log), _config(thread)))


def _retried(
    db: str,
    name: str,
    log: Path,
    thread: str,
    before: Counter[str],
    ref: _Reference,
    where: str,
    asynchronous: bool = False,
) -> list[str]:
    """Retry the call on a thread whose first call was killed; what went wrong."""
    in_flight = worker.executions(log)[sum(before.values()) :][-1:]
    retried = h.run_worker(db, thread, log, path=name, asynchronous=asynchronous)
    if retried.status != "ok":
        return [f"{where}: the retry failed: {retried.error}"]
    failures = []
    total = h.since(log, before)
    if retried.result != ref.outcome.result:
        failures.append(f"{where}: state {retried.result} != {ref.outcome.result}")
    if ref.ran - total or not total - ref.ran <= Counter(in_flight):
        failures.append(f"{where}: ran {dict(total)}, an unkilled call runs {dict(ref.ran)}")
    if (kind := _planned(db, name, thread, log)) is not ref.planned:
        failures.append(f"{where}: plan says {kind}, not {ref.planned}")
    return failures


@pytest.mark.kills
@pytest.mark.parametrize("name", sorted(PATHS))
def test_a_kill_at_any_write_of_the_path_is_finished_by_the_retry(
    db: str, name: str, tmp_path: Path
) -> None:
    _every_boundary(db, name, tmp_path, asynchronous=False)


@pytest.mark.kills
@pytest.mark.parametrize("name", sorted(n for n, path in PATHS.items() if path.acall))
def test_a_kill_at_any_write_of_the_async_twin_is_finished_by_the_retry(
    db: str, name: str, tmp_path: Path
) -> None:
    _every_boundary(db, name, tmp_path, asynchronous=True)


def _every_boundary(db: str, name: str, tmp_path: Path, *, asynchronous: bool) -> None:
    ref = _reference(db, name, tmp_path, asynchronous)
    # Each call finishes its thread, but ``reask``'s, which waits on the question asked again.
    finished = ne.PlanKind.CONTINUE if name == "reask" else ne.PlanKind.UP_TO_DATE
    assert ref.planned is finished, f"an unkilled call left the thread {ref.planned}"
    if name == "append":  # every turn's item is of the new type, not the latest turn's alone
        assert [type(i) for i in ref.outcome.result["values"]["items"]] == [str] * 3
    if name == "convert":  # the earlier entries converted again, d's written once
        expected = [f"Entry(label='{n}', lang='en')" for n in "abcd"]
        assert ref.outcome.result["values"]["log"] == expected
    if name.startswith("inside"):  # the subgraph's inner work upstream of the change is kept
        assert ref.ran["prep"] == ref.ran["research"] == 0 and ref.ran["draft"] == 1, ref.ran
    writes = ref.outcome.writes
    assert writes, "the call made no saver write: nothing would be killed"
    boundaries = [(n, None) for n in range(1, len(writes) + 1)]
    # After the last write the call is done but for returning. A question stored is a
    # question asked: the retried answer then answers it (docs/reliability.md).
    if name != "reask":
        boundaries.append((None, len(writes)))
    failures = []
    for before_nth, after_nth in boundaries:
        log = tmp_path / f"kill-{before_nth}-{after_nth}.log"
        thread = _prepared(db, name, log)
        before = h.counts(log)
        victim = h.spawn(
            db,
            thread,
            log,
            path=name,
            kill_before=before_nth,
            kill_after=after_nth,
            asynchronous=asynchronous,
        )
        victim.process.join(60)
        assert victim.process.exitcode == -signal.SIGKILL, victim.wait()
        nth = before_nth or after_nth or 0
        where = f"killed {'before' if before_nth else 'after'} write {nth} ({writes[nth - 1]})"
        failures += _retried(db, name, log, thread, before, ref, where, asynchronous)
    assert not failures, "\n".join(failures)


@pytest.mark.kills
def test_a_kill_anywhere_in_a_claimed_step_leaves_the_old_code_refused(
    db: str, tmp_path: Path
) -> None:
    """``claim_asked`` killed at each write: from the first write the new code makes on
    the thread (its claim) on, an old worker is refused it; before, the thread is as the
    old code left it, and the old code may resume it."""
    writes = _reference(db, "claim_asked", tmp_path).outcome.writes
    for nth in range(1, len(writes) + 1):
        log = tmp_path / f"claimed-{nth}.log"
        thread = _prepared(db, "claim_asked", log)
        with worker.open_saver(db) as saver:
            left = saver.get_tuple(_config(thread))
        victim = h.spawn(db, thread, log, path="claim_asked", kill_before=nth)
        victim.process.join(60)
        assert victim.process.exitcode == -signal.SIGKILL, victim.wait()
        with worker.open_saver(db) as saver:
            now = saver.get_tuple(_config(thread))
            untouched = (now.checkpoint["id"], len(now.pending_writes)) == (
                left.checkpoint["id"],
                len(left.pending_writes),
            )
            planned = ne.plan(asking(saver, log), _config(thread)).kind
        expected = ne.PlanKind.CONTINUE if untouched else ne.PlanKind.SUPERSEDED
        assert planned is expected, f"killed before write {nth}: {planned}"


STORM_KILLS = 20
"""Kills that must land inside the call, per path and database."""


@pytest.mark.storm
@pytest.mark.parametrize("name", sorted(PATHS))
def test_storm_kills_at_random_moments_are_finished_by_the_retry(
    db: str, name: str, tmp_path: Path
) -> None:
    ref = _reference(db, name, tmp_path)
    rng = random.Random(f"{name}-{db[:8]}")
    landed, rounds, done, failures = 0, 0, 0, []
    deadline = time.monotonic() + 180
    while landed < STORM_KILLS and time.monotonic() < deadline:
        rounds += 1
        log = tmp_path / f"storm-{rounds}.log"
        thread = _prepared(db, name, log)
        before = h.counts(log)
        ready = tmp_path / f"storm-{rounds}.ready"
        victim = h.spawn(db, thread, log, path=name, ready=ready)
        h.wait_for(ready, alive=victim)
        time.sleep(rng.uniform(0, ref.outcome.seconds * 1.1))
        victim.kill()
        if victim.process.exitcode != -signal.SIGKILL:
            continue  # it finished first: no kill landed
        if _state(db, name, thread, log) == ref.outcome.result:
            done += 1  # killed after its last write: nothing was owed
            continue
        landed += 1
        failures += _retried(db, name, log, thread, before, ref, f"storm round {rounds}")
    print(
        f"storm {name}: {landed} kills inside the call in {rounds} rounds ({done} after "
        f"its last write), {len(failures)} failures"
    )
    assert landed >= STORM_KILLS, f"only {landed} kills landed in {rounds} rounds"
    assert not failures, "\n".join(failures)


def test_a_deploy_on_a_thread_that_crashed_after_the_sibling_finished_keeps_it(
    drive: Drive, db: str, thread: str, log: Path
) -> None:
    # c crashed, d finished: a deploy that retypes c's channel leaves d's work valid.
    with worker.open_saver(db) as saver:
        crashed_in(saver, log, _config(thread), "c", frozenset("d"))
    before = h.counts(log)
    with drive.opened(lambda: worker.open_saver(db), lambda: worker.aopen_saver(db)) as saver:
        graph = retyped(saver, log)
        plan = drive.plan(graph, _config(thread))
        assert "d" not in plan.rerun, plan
        drive.run(graph, dict(worker.INPUT), _config(thread))
    assert h.since(log, before) == Counter("cef")
