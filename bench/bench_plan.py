"""Figure 3: planning a rewind on long threads, against a raw scan of the thread.

Completed loop threads (``_harness.LoopGraph``) of 100, 1,000 and 10,000 checkpoints
are planned by a graph whose loop node was bumped with ``versions={"step": "v2"}``:
the head is then not verified, so ``plan()`` reads and walks the whole lineage and
decides ``rewind``. The floor is what any planner must do at least: one
``saver.list()`` of the thread's root namespace, every tuple taken and let go (freeing
them is part of either side's timed call).

Growth is the least-squares slope of log(time) against log(checkpoints) over the
three sizes: 1.0 is linear; below 1, fixed costs still weigh at the small size. It
is measured twice: as is, and with CPython's cyclic garbage collector paused during
the call. The collector's passes walk every container object alive (the process's
own, plus 8 per checkpoint tuple a scan holds), so the more a call holds the more
each pass costs, and with it on even the raw scan grows faster than linearly;
paused, what is left is the code's own growth, which the verdict judges.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

from _harness import (
    Case,
    LoopGraph,
    LoopThreads,
    Probe,
    Result,
    Row,
    Timings,
    compared,
    fmt_ratio,
    interleave,
    pg_dsn,
    pg_saver,
    sqlite_saver,
    verdict,
)

import neograph_ext

SIZES = (100, 1_000, 10_000)
REPS = {100: 21, 1_000: 21, 10_000: 9}
TARGETS = {100: 1.3, 1_000: 0.5, 10_000: 0.5}
"""Per size: a long thread's plan reads no state values (issue 24: at most half a scan)."""
GROWTH_LIMIT = 1.1
"""Exponent above which growth counts as worse than linear (1.0 plus timing noise)."""
PAUSED_REPS = 7


@dataclass(frozen=True)
class Point:
    """One size on one saver, for the scaling plot."""

    saver: str
    checkpoints: int
    plan: float
    """Median seconds of ``plan()``."""
    scan: float
    """Median seconds of the raw scan."""
    plan_paused: float
    """``plan`` with the cyclic garbage collector paused during the call."""
    scan_paused: float
    """``scan`` with the cyclic garbage collector paused during the call."""


def measure(
    threads: LoopThreads, label: str, sizes: tuple[int, ...] = SIZES
) -> tuple[list[Result], list[Point]]:
    graph = threads.graph(versions={"step": "v2"})
    saver = threads.saver
    rows: list[Result] = []
    points: list[Point] = []
    for size in sizes:
        thread_id = threads.complete(size)
        threads.analyze()
        steps = LoopThreads.steps(size)
        config = LoopGraph.config(thread_id, steps)
        root = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}

        def check_plan(_: Any, result: Any) -> None:
            assert result.kind == "rewind", result.kind

        def check_scan(_: Any, result: Any, size: int = size) -> None:
            assert result == size, result

        def plan(_: Any, config: Any = config) -> Any:
            return neograph_ext.plan(graph, config)

        def scan(_: Any, root: Any = root) -> Any:
            # Taken and let go, as a planner does: freeing them is part of the floor.
            return len(list(saver.list(root)))

        cases = [Case("plan", plan, check=check_plan), Case("scan", scan, check=check_scan)]
        timings: Timings = interleave(cases, REPS.get(size, 7))
        paused = interleave(cases, PAUSED_REPS, gc_paused=True)
        points.append(
            Point(
                label,
                size,
                timings.median("plan"),
                timings.median("scan"),
                paused.median("plan"),
                paused.median("scan"),
            )
        )
        ratio = timings.ratio("plan", "scan")
        row = (
            f"3. Rewind planning, {label}, {size:,} checkpoints: "
            "`plan()` vs raw `saver.list()` scan",
            f"{compared(timings, 'plan', 'scan')}; garbage collector paused: "
            f"{fmt_ratio(paused.ratio('plan', 'scan'))}",
            verdict(ratio, TARGETS.get(size, 1.3)),
        )
        probes = (
            Probe(f"plan() on {size:,} checkpoints, {label}", plan),
            Probe(f"list(saver.list(thread)) on {size:,} checkpoints, {label}", scan),
        )
        rows.append(Result(row, ratio > TARGETS.get(size, 1.3), probes))
    rows.append(_growth(label, points))
    return rows, points


def slope(points: list[Point], attr: str) -> float:
    """Least-squares slope of log(time) against log(checkpoints) over all sizes."""
    xs = [math.log(p.checkpoints) for p in points]
    ys = [math.log(getattr(p, attr)) for p in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def _growth(label: str, points: list[Point]) -> Result:
    if len(points) < 2:
        return Result((f"3. Rewind planning, {label}: growth", "needs two sizes", ""))
    span = f"{points[0].checkpoints:,}-{points[-1].checkpoints:,}"
    paused = slope(points, "plan_paused")
    row = (
        f"3. Rewind planning, {label}: growth with thread length, {span} checkpoints "
        "(least-squares exponent, 1.00 = linear)",
        f"`plan()` {slope(points, 'plan'):.2f}, raw scan {slope(points, 'scan'):.2f}; "
        f"garbage collector paused: `plan()` {paused:.2f}, raw scan "
        f"{slope(points, 'scan_paused'):.2f}",
        f"linear or better (<= {GROWTH_LIMIT} with the collector paused): "
        f"{'met' if paused <= GROWTH_LIMIT else '**missed**'}",
    )
    return Result(row, paused > GROWTH_LIMIT)


def run() -> list[Row]:
    results: list[Result] = []
    with sqlite_saver() as saver:
        results += measure(LoopThreads(saver), "SQLite")[0]
    dsn = pg_dsn()
    if dsn:
        with pg_saver(dsn) as saver:
            results += measure(LoopThreads(saver), "PostgreSQL")[0]
    return [result.row for result in results]


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row), file=sys.stdout)
