"""Processes SIGKILLed in the first milliseconds of a new thread: none is left stuck.

A kill between LangGraph saving the input checkpoint and saving step 0 leaves a head
that waits on ``__start__``; it once planned as ``up_to_date`` and ran nothing, forever.
One way: the subject is what a killed worker process (the sync driver) leaves.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

import neograph_ext as ne
from tests.reliability import harness as h
from tests.reliability import worker

pytestmark = pytest.mark.kills

KILLS = 100
WINDOW = 0.030
"""Kills land between 0 and 30 ms after ``run()`` was told to start."""
NUDGE = 0.001
"""After each kill the aim moves by this much toward the moment the head is the input
checkpoint: later when the victim died before writing anything, earlier when it got
past step 0. So the kills gather where the bug was, whatever the machine's speed."""


def test_kills_in_the_first_milliseconds_leave_no_thread_stuck(
    db: str, log: Path, tmp_path: Path
) -> None:
    rng = random.Random(20261130)
    threads = [f"early-{rng.getrandbits(64):016x}" for _ in range(KILLS)]
    aim = WINDOW / 3
    for i, thread in enumerate(threads):
        ready, go = tmp_path / f"ready-{i}", tmp_path / f"go-{i}"
        victim = h.spawn(db, thread, log, ready=ready, go=go)
        h.wait_for(ready, alive=victim)
        go.touch()
        time.sleep(min(max(aim + rng.uniform(-2 * NUDGE, 2 * NUDGE), 0.0), WINDOW))
        victim.kill()
        head = h.head_sources(db, [thread])
        aim += NUDGE if head["none"] else -NUDGE if head["loop"] else 0.0

    heads = h.head_sources(db, threads)
    assert heads["input"] >= 5, f"too few kills left the input checkpoint as head: {heads}"
    before = h.counts(log)
    stuck = []
    code = worker.parse_code(None)
    with worker.open_saver(db) as saver:
        graph = worker.compiled(saver, worker.build(log, code), code)
        for thread in threads:
            config = {"configurable": {"thread_id": thread}}
            result = ne.run(graph, dict(worker.INPUT), config)
            if h.jsonable(result) != h.reference():
                stuck.append(thread)
            assert ne.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE
    assert stuck == [], f"{len(stuck)} of {KILLS} threads did not finish: {stuck[:5]}"
    # Every thread ran each node at most once after its kill: nothing was repeated
    # beyond the node that was executing when it died.
    again = h.since(log, before)
    assert sum(again.values()) <= KILLS * len(worker.NODES)
