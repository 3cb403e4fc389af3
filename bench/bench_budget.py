"""Budgets: what counting costs a run, and what a long ledger costs the next run.

Rows, on one SQLite file saver, with the pipeline of ``tests.graphs.budget`` (3 nodes,
4 calls of a chat model that answers at once, so the figure is the counting alone; a
real model call takes a second or more):

- a fresh run with ``Budget()`` against the same graph compiled without one;
- a new turn of a thread of ``TURNS`` turns (one ledger record each, the newest
  ``RECENT`` read when a run starts) against the same on a thread as long, unbudgeted.

Runs alone (``python bench/bench_budget.py``) and prints its rows.
"""

from __future__ import annotations

import itertools
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from _harness import Case, Row, compared, interleave, sqlite_saver

import neograph_ext
from neograph_ext.storage._ledger_store import RECENT

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the model and graph of the tests
from tests.graphs.budget import CALLS, pipeline

REPS = 21
TURNS = 100
"""Turns of the long threads: one ledger record each."""


def measure(saver: Any, reps: int = REPS) -> list[Row]:
    budget = neograph_ext.budget.Budget()
    counted = neograph_ext.compile(pipeline(Counter()), checkpointer=saver, attach=[budget])
    plain = neograph_ext.compile(pipeline(Counter()), checkpointer=saver)
    ids = itertools.count()

    def fresh(_: Any = None) -> dict[str, Any]:
        return {"configurable": {"thread_id": f"budget-{next(ids)}"}}

    def check(config: Any, result: object) -> None:
        assert isinstance(result, dict) and result["done"] == "ok", result

    def run_counted(config: Any) -> object:
        return neograph_ext.run(counted, {"topic": "t"}, config)

    def run_plain(config: Any) -> object:
        return neograph_ext.run(plain, {"topic": "t"}, config)

    timings = interleave(
        [Case("counted", run_counted, fresh, check), Case("plain", run_plain, fresh, check)],
        reps,
    )
    rows: list[Row] = [
        (
            f"10. Fresh run, 3 nodes, {CALLS} model calls answering at once, SQLite: "
            "`run()` with `Budget()` vs without",
            compared(timings, "counted", "plain"),
            f"no target; counting adds {_per_call(timings, 'counted', 'plain')} per model call",
        )
    ]

    counted_thread, plain_thread = fresh(), fresh()
    for turn in range(TURNS):
        neograph_ext.run(counted, {"topic": f"turn {turn}"}, counted_thread)
        neograph_ext.run(plain, {"topic": f"turn {turn}"}, plain_thread)
    turns = itertools.count()

    def next_counted(config: Any) -> object:
        return neograph_ext.run(counted, {"topic": f"more {next(turns)}"}, config)

    def next_plain(config: Any) -> object:
        return neograph_ext.run(plain, {"topic": f"more {next(turns)}"}, config)

    timings = interleave(
        [
            Case("counted", next_counted, lambda: counted_thread, check),
            Case("plain", next_plain, lambda: plain_thread, check),
        ],
        reps,
    )
    rows.append(
        (
            f"10b. A new turn of a thread of {TURNS} turns ({TURNS} ledger records, "
            f"{RECENT} read), SQLite: `run()` with `Budget()` vs without",
            compared(timings, "counted", "plain"),
            f"no target; {_extra(timings, 'counted', 'plain')} more per run "
            f"({CALLS} model calls and the ledger read)",
        )
    )
    return rows


def _extra(timings: Any, a: str, b: str) -> str:
    return f"{(timings.median(a) - timings.median(b)) * 1000:.2f} ms"


def _per_call(timings: Any, a: str, b: str) -> str:
    extra = (timings.median(a) - timings.median(b)) / CALLS
    return f"{extra * 1000:.2f} ms"


def run() -> list[Row]:
    with sqlite_saver() as saver:
        return measure(saver)


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row), file=sys.stdout)
