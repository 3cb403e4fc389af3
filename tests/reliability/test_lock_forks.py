"""Runs from one named checkpoint serialise: concurrent identical forks run the tail once.

A run from a ``checkpoint_id`` is a deliberate fork, and a later run from it forks
again. But runners that wait for the lock while another runs the same fork find,
once they get it, the thread moved on from that checkpoint: they plan from the newest
checkpoint instead, and find nothing left to do.
Concurrent runs are not through ``drive``: threads for the sync twin and tasks of one
loop for the async one are each written out; a lone run is.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from neograph_ext.storage._lock import thread_lock
from tests.drive import Drive
from tests.reliability import worker
from tests.reliability.worker import INPUT

RUNNERS = 8
TAIL = Counter({"c": 1, "d": 1, "e": 1, "f": 1})
"""What one run from the checkpoint before ``c | d`` executes."""


def _graph(saver: BaseCheckpointSaver[Any], log: Path) -> Any:
    code = worker.parse_code(None)
    # Nodes sleep, so that the runners' attempts overlap.
    return worker.compiled(saver, worker.build(log, code, delay=0.05), code)


def _before_c(graph: Any, thread: str) -> dict[str, Any]:
    """The config of the checkpoint that waits to run ``c`` and ``d``."""
    for state in graph.get_state_history({"configurable": {"thread_id": thread}}):
        if set(state.next) == {"c", "d"}:
            return {"configurable": {**state.config["configurable"]}}
    raise AssertionError("no checkpoint before c and d")


def test_concurrent_runs_from_one_checkpoint_run_the_tail_once(
    db: str, thread: str, log: Path
) -> None:
    with worker.open_saver(db) as saver:
        graph = _graph(saver, log)
        ne.run(graph, dict(INPUT), {"configurable": {"thread_id": thread}})
        named = _before_c(graph, thread)
    log.unlink()

    results: list[Any] = []
    errors: list[BaseException] = []
    ready = threading.Barrier(RUNNERS)

    def runner() -> None:
        with worker.open_saver(db) as own:
            graph = _graph(own, log)
            ready.wait()
            try:
                results.append(ne.run(graph, None, named))
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=runner) for _ in range(RUNNERS)]
    # Concurrent means: every runner planned from the named checkpoint before any of
    # them ran. Holding the thread's lock a moment makes that so on a busy machine too
    # (a runner that starts after another finished makes a deliberate fork of its own).
    with worker.open_saver(db) as gatekeeper, thread_lock(gatekeeper, thread):
        for t in threads:
            t.start()
        time.sleep(1.0)
    for t in threads:
        t.join()

    assert errors == []
    assert Counter(worker.executions(log)) == TAIL
    assert len(results) == RUNNERS and all(r == results[0] for r in results)
    assert results[0]["f"]

    # A later run from the same checkpoint is a deliberate fork: it runs the tail again.
    log.unlink()
    with worker.open_saver(db) as saver:
        assert ne.run(_graph(saver, log), None, named) == results[0]
    assert Counter(worker.executions(log)) == TAIL


async def test_concurrent_aruns_from_one_checkpoint_run_the_tail_once(
    db: str, thread: str, log: Path
) -> None:
    async with worker.aopen_saver(db) as saver:
        graph = _graph(saver, log)
        await ne.arun(graph, dict(INPUT), {"configurable": {"thread_id": thread}})
        named: dict[str, Any] = {}
        async for state in graph.aget_state_history({"configurable": {"thread_id": thread}}):
            if set(state.next) == {"c", "d"}:
                named = {"configurable": {**state.config["configurable"]}}
                break
        await asyncio.to_thread(log.unlink)
        results = await asyncio.gather(
            *(ne.arun(graph, None, named) for _ in range(RUNNERS)), return_exceptions=True
        )
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert Counter(await asyncio.to_thread(worker.executions, log)) == TAIL
    assert all(r == results[0] for r in results)


@pytest.mark.parametrize("checkpoint", ["named", "newest"])
def test_a_lone_run_is_unchanged(
    drive: Drive, db: str, thread: str, log: Path, checkpoint: str
) -> None:
    """No waiting, nothing moved: a run from a named checkpoint still forks from it."""
    with drive.opened(lambda: worker.open_saver(db), lambda: worker.aopen_saver(db)) as saver:
        graph = _graph(saver, log)
        first = drive.run(graph, dict(INPUT), {"configurable": {"thread_id": thread}})
        config = _before_c(graph, thread) if checkpoint == "named" else None
        log.unlink()
        again = drive.run(graph, None, config or {"configurable": {"thread_id": thread}})
    assert again == first
    expected = TAIL if checkpoint == "named" else Counter()
    assert Counter(worker.executions(log)) == expected


def test_a_thread_that_moved_along_its_branch_is_still_forked(
    db: str, thread: str, log: Path
) -> None:
    """Only a new branch off the named checkpoint means that fork was made meanwhile."""
    with worker.open_saver(db) as saver, worker.open_saver(db) as other:
        graph = _graph(saver, log)
        first = ne.run(graph, dict(INPUT), {"configurable": {"thread_id": thread}})
        named = _before_c(graph, thread)
        log.unlink()
        outcome: list[Any] = []
        with thread_lock(other, thread):
            forker = threading.Thread(target=lambda: outcome.append(ne.run(graph, None, named)))
            forker.start()
            time.sleep(0.5)  # the forker plans, then waits for the lock
            # Meanwhile the thread moves along its branch: a new turn, run directly.
            newest = {"configurable": {"thread_id": thread}}
            _graph(other, log).invoke({"seed": "s1", "log": []}, newest)
        forker.join()
    assert outcome == [first]
    assert Counter(worker.executions(log)) == Counter(dict.fromkeys("abcdef", 1)) + TAIL
