"""Figure 2: resuming a thread when nothing changed, against LangGraph's own calls.

On loop threads (``_harness.LoopGraph``) of 10 and 10,000 checkpoints, SQLite:

- completed thread: ``neograph_ext.run(graph, input, config)`` (plan ``up_to_date``:
  returns the stored output, executes nothing) against ``graph.get_state(config)``;
- crashed thread (its last step raised): ``run(graph, None, config)`` (plan
  ``continue``) against ``graph.invoke(None, config, durability="sync")``. Resuming
  changes a thread, so every repetition of either side gets its own copy of the
  crashed thread, made outside the timed region, whose thread lock was taken once
  (untimed), as the run that wrote the thread would have: a first lock creates the
  thread's lock file, which a resume then only opens.

LangGraph's side uses the same builder compiled by plain LangGraph, so it pays for
nothing neograph-ext adds (not even the stamp in the metadata it writes).
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

from _harness import (
    Case,
    LoopGraph,
    LoopThreads,
    Probe,
    Result,
    Row,
    compared,
    interleave,
    sqlite_saver,
    verdict,
)

import neograph_ext
from neograph_ext.storage._lock import thread_lock

SIZES = (10, 10_000)
REPS = {10: 101, 10_000: 31}
TARGET = 1.10
RESUME_TARGET = 1.15
"""Row 2b's: a resume reads its head, then again under the thread's lock, so the flow is
written once for every call (0.3); an LLM resume costs seconds, this costs microseconds."""
WORK = 0.010
"""Seconds of work in the resumed step for row 2c, which puts 2b's fixed cost in scale."""


def measure(threads: LoopThreads, sizes: tuple[int, ...] = SIZES) -> list[Result]:
    rows: list[Result] = []
    for size in sizes:
        rows += _complete(threads, size)
        rows += _crashed(threads, size)
    rows += _crashed(threads, min(sizes), work=WORK)
    return rows


def _complete(threads: LoopThreads, size: int) -> list[Result]:
    loop = LoopGraph()
    graph = threads.graph(loop)
    plain = loop.builder().compile(checkpointer=threads.saver)
    thread_id = threads.complete(size)
    steps = LoopThreads.steps(size)
    config = LoopGraph.config(thread_id, steps)
    kind = neograph_ext.plan(graph, config).kind
    assert kind == "up_to_date", kind
    expected = {"i": steps, "limit": steps}

    def check_run(_: Any, result: object) -> None:
        assert result == expected, result
        assert loop.runs == 0, "a node ran"

    def check_state(_: Any, result: Any) -> None:
        assert result.values == expected and not result.next, result

    def run_(_: Any) -> object:
        return neograph_ext.run(graph, {"i": 0, "limit": steps}, config)

    def get_state(_: Any) -> Any:
        return plain.get_state(config)

    timings = interleave(
        [Case("run", run_, check=check_run), Case("get_state", get_state, check=check_state)],
        REPS.get(size, 9),
    )
    ratio = timings.ratio("run", "get_state")
    row = (
        f"2a. No-change resume, completed thread of {size:,} checkpoints: "
        "`run()` (up_to_date) vs `graph.get_state`",
        compared(timings, "run", "get_state"),
        verdict(ratio, TARGET),
    )
    probes = (
        Probe(f"run() on a completed thread of {size:,} checkpoints", run_),
        Probe("graph.get_state(config)", get_state),
    )
    return [Result(row, ratio > TARGET, probes)]


def _crashed(threads: LoopThreads, size: int, work: float = 0.0) -> list[Result]:
    loop = LoopGraph(work)
    graph = threads.graph(loop)
    plain = loop.builder().compile(checkpointer=threads.saver)
    source = threads.crashed(size)
    steps = LoopThreads.steps(size)
    kind = neograph_ext.plan(graph, LoopGraph.config(source, steps)).kind
    assert kind == "continue", kind
    ids = itertools.count()

    def fresh_copy() -> dict[str, Any]:
        target = f"{source}-copy-{next(ids)}"
        threads.copy(source, target)
        # The copy stands for a thread run() wrote: that run made the thread's lock
        # file, so a resume opens an existing one rather than creating it.
        with thread_lock(threads.saver, target):
            pass
        return LoopGraph.config(target, steps)

    def check(_: Any, result: object) -> None:
        assert result == {"i": steps, "limit": steps}, result

    def run_(config: Any) -> object:
        return neograph_ext.run(graph, None, config)

    def invoke(config: Any) -> object:
        return plain.invoke(None, config, durability="sync")

    before = loop.runs
    timings = interleave(
        [Case("run", run_, fresh_copy, check), Case("invoke", invoke, fresh_copy, check)],
        REPS.get(size, 9),
    )
    runs = (loop.runs - before) / (2 * (timings.reps("run") + 1))
    assert runs == 1, f"{runs} node runs per resume, expected 1"
    ratio = timings.ratio("run", "invoke")
    if work:
        extra = 1000 * (timings.median("run") - timings.median("invoke"))
        row = (
            f"2c. Context for 2b: the same resume when the resumed step does "
            f"{work * 1000:.0f} ms of work (a sleep), {size - 1:,} checkpoints",
            compared(timings, "run", "invoke"),
            f"no target; neograph-ext adds {extra:.2f} ms per resume",
        )
        return [Result(row)]
    row = (
        f"2b. No-change resume, crashed thread of {size - 1:,} checkpoints: "
        "`run()` (continue) vs `graph.invoke(None, config)`",
        compared(timings, "run", "invoke"),
        verdict(ratio, RESUME_TARGET),
    )
    probes = (
        Probe(f"run() on a crashed thread of {size - 1:,} checkpoints", run_, fresh_copy),
        Probe('graph.invoke(None, config, durability="sync")', invoke, fresh_copy),
    )
    return [Result(row, ratio > RESUME_TARGET, probes)]


def run() -> list[Row]:
    with sqlite_saver() as saver:
        return [result.row for result in measure(LoopThreads(saver))]


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row), file=sys.stdout)
