"""A process running ``run()`` is SIGKILLed inside a node; another process resumes.

The victim signals from inside the node (after logging its execution) and sleeps;
the parent then kills it with SIGKILL, so nothing in the victim gets to clean up.
One way: the worker process runs the sync driver (``test_owed`` kills async workers).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import neograph_ext as ne
from tests.reliability import harness as h
from tests.reliability.worker import NODES, SIBLING, WRITES

pytestmark = pytest.mark.kills

V2 = "c=float"
"""The deploy between runs: node ``c`` now declares another output type."""


@pytest.mark.parametrize("node", NODES)
def test_killed_in_each_node_another_process_resumes(
    db: str, thread: str, log: Path, tmp_path: Path, node: str
) -> None:
    h.kill_at(db, thread, log, node, tmp_path / "signals")
    before = h.counts(log)
    assert before[node] == 1
    assert all(before[n] == 1 for n in NODES if h.STEP[n] < h.STEP[node])

    resumed = h.run_worker(db, thread, log)

    assert resumed.status == "ok", resumed.error
    assert resumed.result == h.reference()
    again = h.since(log, before)
    # The killed node runs again; its parallel sibling at most once more; nothing
    # upstream; everything downstream exactly once over both processes.
    h.assert_each_at_most_once(again)
    assert again[node] == 1
    assert all(again[n] == 0 for n in NODES if h.STEP[n] < h.STEP[node]), again
    after = h.counts(log)
    assert all(after[n] == 1 for n in NODES if h.STEP[n] > h.STEP[node]), after
    if node in SIBLING:
        assert after[SIBLING[node]] in (1, 2)
    assert h.plan_kind(db, thread) is ne.PlanKind.UP_TO_DATE


@pytest.mark.parametrize(
    ("node", "forked"),
    [("c", True), ("e", True), ("f", True), ("c", False)],
    ids=["c", "e", "f", "c-at-once"],
)
def test_killed_during_a_rewind_the_next_run_converges(
    db: str, thread: str, log: Path, tmp_path: Path, node: str, forked: bool
) -> None:
    first = h.run_worker(db, thread, log)
    assert first.status == "ok", first.error
    kept = h.checkpoint_ids(db, thread)
    assert h.plan_kind(db, thread, V2) is ne.PlanKind.REWIND

    # The rewind under the new code forks, then dies inside a re-run node: after the
    # fork checkpoint is stored, or at once (LangGraph stores the fork checkpoint while
    # the first re-run tasks already execute, so it may or may not be there yet).
    def fork_stored() -> bool:
        return h.sources(db, thread)["fork"] >= 1

    h.kill_at(
        db, thread, log, node, tmp_path / "signals", code=V2, once=fork_stored if forked else None
    )
    before = h.counts(log)

    resumed = h.run_worker(db, thread, log, code=V2)

    assert resumed.status == "ok", resumed.error
    assert resumed.result == h.reference(V2)
    again = h.since(log, before)
    h.assert_each_at_most_once(again, allowed={"c", "e", "f"})
    assert again[node] == 1
    total = h.counts(log)
    assert total["a"] == total["b"] == 1, "upstream work was repeated"
    assert total["d"] == 1, "the unchanged parallel sibling d ran again"
    assert kept <= h.checkpoint_ids(db, thread), "checkpoints were lost"
    assert h.plan_kind(db, thread, V2) is ne.PlanKind.UP_TO_DATE


def test_killed_while_saving_the_kept_writes_no_kept_node_runs(
    db: str, thread: str, log: Path, tmp_path: Path
) -> None:
    first = h.run_worker(db, thread, log)
    assert first.status == "ok", first.error
    kept = h.checkpoint_ids(db, thread)

    # The rewind keeps d, c's unchanged sibling: it dies saving d's writes, which go
    # before the fork that holds them, so no fork is stored yet.
    h.kill_at(db, thread, log, WRITES, tmp_path / "signals", code=V2)
    assert h.sources(db, thread)["fork"] == 0
    before = h.counts(log)
    assert sum(before.values()) == len(NODES), "the killed rewind ran a node"

    resumed = h.run_worker(db, thread, log, code=V2)

    assert resumed.status == "ok", resumed.error
    assert resumed.result == h.reference(V2)
    assert h.since(log, before) == Counter("cef")
    assert h.sources(db, thread)["fork"] == 1
    assert kept <= h.checkpoint_ids(db, thread), "checkpoints were lost"
    assert h.plan_kind(db, thread, V2) is ne.PlanKind.UP_TO_DATE
