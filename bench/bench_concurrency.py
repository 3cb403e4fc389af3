"""Figure 7: concurrent runs on a small PostgreSQL pool, against plain LangGraph.

A worker serves 8 threads at once (8 Python threads, one LangGraph thread each) from a
``ConnectionPool`` of ``max_size=4``, the pool LangGraph's ``PostgresSaver`` uses. Each
run is a fresh 2-node pipeline whose nodes sleep 200 ms (a stand-in for a model call).
One repetition times all 8 runs together, either:

- ``neograph_ext.run(graph, input, config)``: each run holds its thread's lock; or
- ``plain.invoke(input, config, durability="sync")``: LangGraph alone, with the
  durability ``run`` uses.

Node executions are counted on every repetition; any failed run fails the figure.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypedDict

from _harness import Case, Result, Row, compared, interleave, pg_dsn
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, StateGraph
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

import neograph_ext

RUNS = 8
POOL = 4
SLEEP = 0.200
REPS = 7
SETTINGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


class PipeState(TypedDict, total=False):
    doc: str
    done: int


class Pipeline:
    """Two sleeping nodes; ``counts`` records every node execution, from any thread."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._guard = threading.Lock()

    def node(self, name: str) -> Callable[[PipeState], dict[str, int]]:
        def work(state: PipeState) -> dict[str, int]:
            with self._guard:
                self.counts[name] += 1
            time.sleep(SLEEP)
            return {"done": state.get("done", 0) + 1}

        return work

    def builder(self) -> StateGraph[Any, Any, Any, Any]:
        builder: StateGraph[Any, Any, Any, Any] = StateGraph(PipeState)
        builder.add_node("first", self.node("first"))
        builder.add_node("second", self.node("second"))
        builder.add_edge(START, "first")
        builder.add_edge("first", "second")
        builder.add_edge("second", END)
        return builder


def concurrently(call: Callable[[str], Any], prefix: str) -> list[Any]:
    """``RUNS`` calls at once, on threads of their own; what each returned or raised."""
    outcomes: list[Any] = [None] * RUNS
    start = threading.Barrier(RUNS)

    def one(index: int) -> None:
        start.wait()
        try:
            outcomes[index] = call(f"{prefix}-{index}")
        except Exception as exc:
            outcomes[index] = exc

    workers = [threading.Thread(target=one, args=(i,)) for i in range(RUNS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return outcomes


def measure(dsn: str, reps: int = REPS) -> list[Result]:
    with ConnectionPool(dsn, min_size=POOL, max_size=POOL, kwargs=SETTINGS, timeout=30) as pool:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        saver.setup()
        pipeline = Pipeline()
        plain = pipeline.builder().compile(checkpointer=saver)
        graph = neograph_ext.compile(pipeline.builder(), checkpointer=saver)
        batches = itertools.count()

        def config(thread_id: str) -> Any:
            return {"configurable": {"thread_id": thread_id}}

        def ours(prefix: str) -> list[Any]:
            return concurrently(lambda t: neograph_ext.run(graph, {"doc": "x"}, config(t)), prefix)

        def theirs(prefix: str) -> list[Any]:
            return concurrently(
                lambda t: plain.invoke({"doc": "x"}, config(t), durability="sync"), prefix
            )

        def check(_: str, outcomes: object) -> None:
            assert outcomes == [{"doc": "x", "done": 2}] * RUNS, outcomes

        def fresh() -> str:
            return f"concurrency-{time.time_ns()}-{next(batches)}"

        before = sum(pipeline.counts.values())
        timings = interleave(
            [Case("ours", ours, fresh, check), Case("plain", theirs, fresh, check)], reps
        )
        ran = sum(pipeline.counts.values()) - before
    per_batch = ran / (2 * (reps + 1))
    assert per_batch == 2 * RUNS, per_batch
    ratio = timings.ratio("ours", "plain")
    row = (
        f"7. {RUNS} concurrent runs (one thread each, 2 nodes x {SLEEP * 1000:.0f} ms) on a "
        f"PostgreSQL pool of {POOL}: `run()` vs plain `graph.invoke`",
        f"{compared(timings, 'ours', 'plain')}; failed runs: 0 of {RUNS * (reps + 1)} each",
        f"<= 1.1x: {'met' if ratio <= 1.1 else '**missed**'}",
    )
    return [Result(row)]


def run() -> list[Row]:
    dsn = pg_dsn()
    if not dsn:
        return []
    return [result.row for result in measure(dsn)]


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row), file=sys.stdout)
