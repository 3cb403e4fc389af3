"""An ``@entrypoint`` run is SIGKILLed between tasks; after a deploy that changed a task,
another process resumes: the cached results before the change are never recomputed.

The victim blocks inside a task once the results of the tasks before it are stored,
and the parent kills it with SIGKILL. One way: the worker runs the sync driver.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import neograph_ext as ne
from tests.reliability import functional_worker
from tests.reliability.harness import _CTX, Worker, wait_for
from tests.reliability.worker import executions, open_saver

pytestmark = pytest.mark.kills

REFERENCE = "t3(t2(t1(s0)))"


def _spawn(db: str, thread: str, log: Path, *options: str) -> Worker:
    out = log.parent / f"outcome-{time.monotonic_ns()}.json"
    argv = [db, thread, str(log), str(out), *options]
    process = _CTX.Process(target=functional_worker.entry, args=(argv,), daemon=True)
    process.start()
    return Worker(process, out)


def _returns(db: str, thread: str) -> int:
    """How many task results the thread's newest checkpoint holds."""
    with open_saver(db) as saver:
        head = saver.get_tuple({"configurable": {"thread_id": thread}})
    if head is None:
        return 0
    return sum(1 for _, channel, _ in (head.pending_writes or ()) if channel == "__return__")


def _kill_in(
    db: str, thread: str, log: Path, at: str, stored: Callable[[], bool], *options: str
) -> None:
    signals = log.parent / "signals"
    signals.mkdir(exist_ok=True)
    (signals / at).unlink(missing_ok=True)
    victim = _spawn(db, thread, log, "--block-at", at, "--signal-dir", str(signals), *options)
    wait_for(signals / at, alive=victim)
    deadline = time.monotonic() + 30
    while not stored():
        assert time.monotonic() < deadline, "the earlier results were never stored"
        time.sleep(0.02)
    victim.kill()
    assert victim.process.exitcode == -signal.SIGKILL


def _plan(db: str, thread: str, version: str | None = None) -> ne.ResumePlan:
    versions = dict([version.split("=", 1)]) if version else None
    with open_saver(db) as saver:
        workflow = functional_worker.build(Path("/dev/null"), None, None)
        graph = ne.compile(workflow, checkpointer=saver, versions=versions)
        return ne.plan(graph, {"configurable": {"thread_id": thread}})


def test_killed_between_tasks_a_changed_task_reruns_and_the_earlier_one_is_kept(
    db: str, thread: str, log: Path
) -> None:
    _kill_in(db, thread, log, "t3", lambda: _returns(db, thread) >= 2)
    assert executions(log) == ["t1", "t2", "t3"]
    plan = _plan(db, thread, "t2=v2")
    assert (plan.kind, plan.kept, plan.rerun) == ("rewind", {"t1"}, {"t2", "workflow"})

    resumed = _spawn(db, thread, log, "--version", "t2=v2").wait()

    assert resumed.status == "ok", resumed.error
    assert resumed.result == REFERENCE
    assert Counter(executions(log)) == Counter(t1=1, t2=2, t3=2)
    assert _plan(db, thread, "t2=v2").kind == "up_to_date"


def test_killed_inside_the_rerun_of_a_changed_task_the_next_run_converges(
    db: str, thread: str, log: Path
) -> None:
    _kill_in(db, thread, log, "t3", lambda: _returns(db, thread) >= 2)
    # The resume under the new code forks, keeps t1, and dies inside t2's re-run.
    _kill_in(db, thread, log, "t2", lambda: True, "--version", "t2=v2")
    assert Counter(executions(log)) == Counter(t1=1, t2=2, t3=1)

    resumed = _spawn(db, thread, log, "--version", "t2=v2").wait()

    assert resumed.status == "ok", resumed.error
    assert resumed.result == REFERENCE
    assert Counter(executions(log)) == Counter(t1=1, t2=3, t3=2)
