"""Every write path of 0.2, SIGKILLed right before each of its saver writes, then retried.

A worker makes the path's call (``paths.PATHS``) with a saver that kills the process
right before its Nth ``put`` or ``put_writes`` (``worker --kill-before N``), for every
N from 1 to the number of writes an unkilled call makes: every boundary between two
writes is hit, deterministically. The same call is then made again, unkilled. Then:
the state is the state an unkilled call leaves; every node that an unkilled call runs
ran, and no other; at most the node that was executing when the process died ran once
more; ``plan`` returns (within a timeout) and says what it says after an unkilled call.
"""

from __future__ import annotations

import signal
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import neograph_ext as ne
from tests.reliability import harness as h
from tests.reliability import worker
from tests.reliability.paths import PATHS, crashed_in, retyped


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


@pytest.mark.parametrize("name", ["accept", "keep", "migrate", "reask", "replay"])
def test_a_kill_before_any_write_of_the_path_is_finished_by_the_retry(
    db: str, name: str, tmp_path: Path
) -> None:
    ref_log = tmp_path / "reference.log"
    ref_thread = _prepared(db, name, ref_log)
    before = h.counts(ref_log)
    reference = h.run_worker(db, ref_thread, ref_log, path=name)
    assert reference.status == "ok", reference.error
    ran = h.since(ref_log, before)
    planned = _planned(db, name, ref_thread, ref_log)

    failures = []
    for nth in range(1, len(reference.writes) + 1):
        log = tmp_path / f"kill-{nth}.log"
        thread = _prepared(db, name, log)
        before = h.counts(log)
        victim = h.spawn(db, thread, log, path=name, kill_before=nth)
        victim.process.join(60)
        assert victim.process.exitcode == -signal.SIGKILL, victim.wait()
        in_flight = worker.executions(log)[len(list(before.elements())) :][-1:]
        retried = h.run_worker(db, thread, log, path=name)
        where = f"killed before write {nth} ({reference.writes[nth - 1]})"
        if retried.status != "ok":
            failures.append(f"{where}: the retry failed: {retried.error}")
            continue
        total = h.since(log, before)
        extra, missing = total - ran, ran - total
        if retried.result != reference.result:
            failures.append(f"{where}: state {retried.result} != {reference.result}")
        if missing or not extra <= Counter(in_flight):
            failures.append(f"{where}: ran {dict(total)}, an unkilled call runs {dict(ran)}")
        if (kind := _planned(db, name, thread, log)) is not planned:
            failures.append(f"{where}: plan says {kind}, not {planned}")
    assert not failures, "\n".join(failures)


def test_a_deploy_on_a_thread_that_crashed_after_the_sibling_finished_keeps_it(
    db: str, thread: str, log: Path
) -> None:
    # c crashed, d finished: a deploy that retypes c's channel leaves d's work valid.
    with worker.open_saver(db) as saver:
        crashed_in(saver, log, _config(thread), "c", frozenset("d"))
        before = h.counts(log)
        graph = retyped(saver, log)
        plan = ne.plan(graph, _config(thread))
        assert "d" not in plan.rerun, plan
        ne.run(graph, dict(worker.INPUT), _config(thread))
    assert h.since(log, before) == Counter("cef")
