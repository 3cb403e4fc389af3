"""Figure 7: runs on a small PostgreSQL pool, against plain LangGraph.

A worker serves its runs from a ``ConnectionPool`` of ``max_size=4``, the pool
LangGraph's ``PostgresSaver`` uses; every run holds its thread's lock, which lives on
the pool's one lock connection. Three rows, each timing, interleaved in one process:

- ``neograph_ext.run(graph, input, config)``; against
- ``plain.invoke(input, config, durability="sync")``: LangGraph alone, with the
  durability ``run`` uses.

7. 16 runs at once (16 Python threads, one LangGraph thread each), each a fresh 2-node
   pipeline whose nodes sleep 200 ms (a stand-in for a model call).
7b. One fresh run of a one-node graph whose node does nothing: the lock's fixed cost
   against LangGraph's.
7c. 16 such one-node runs at once: the lock's cost when runs contend for it.
7d. Context for 7b: the thread lock alone (taken and released on a fresh thread)
   against one ``saver.get_tuple`` of a fresh thread (one pool round trip).
7e. Context for 7b and 7c: the statements one such run sends to the server, counted
   (not timed) on a pool of its own: what ``run`` adds is the planning read, the lock,
   the read under the lock (did another worker move the thread meanwhile?) and the
   unlock. Counts do not depend on how busy the machine is, so a change that adds or
   removes a statement shows here first.

Node executions are counted on every repetition; any failed run fails the figure.
Run as a script, it prints the rows as table lines, ready for ``results.md``.
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
from psycopg import Cursor
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

import neograph_ext
from neograph_ext.storage._lock import thread_lock

RUNS = 16
POOL = 4
SLEEP = 0.200
REPS = 7
SINGLE_REPS = 41
"""A one-node run takes milliseconds: more repetitions for a stable median (16 of them
at once too: a noisy machine moved 7c between 1.00x and 1.36x at 7 repetitions)."""
SETTINGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


class PipeState(TypedDict, total=False):
    doc: str
    done: int


class Pipeline:
    """A chain of nodes that sleep ``sleep`` seconds each; ``counts`` records every
    node execution, from any thread."""

    def __init__(self, nodes: tuple[str, ...], sleep: float) -> None:
        self.counts: Counter[str] = Counter()
        self._guard = threading.Lock()
        self.nodes = nodes
        self._sleep = sleep

    def node(self, name: str) -> Callable[[PipeState], dict[str, int]]:
        def work(state: PipeState) -> dict[str, int]:
            with self._guard:
                self.counts[name] += 1
            if self._sleep:
                time.sleep(self._sleep)
            return {"done": state.get("done", 0) + 1}

        return work

    def builder(self) -> StateGraph[Any, Any, Any, Any]:
        builder: StateGraph[Any, Any, Any, Any] = StateGraph(PipeState)
        for name in self.nodes:
            builder.add_node(name, self.node(name))
        for a, b in itertools.pairwise((START, *self.nodes, END)):
            builder.add_edge(a, b)
        return builder


def concurrently(call: Callable[[str], Any], prefix: str, runs: int) -> list[Any]:
    """``runs`` calls at once, on threads of their own (one call: on this thread); what
    each returned or raised."""
    if runs == 1:
        try:
            return [call(f"{prefix}-0")]
        except Exception as exc:
            return [exc]
    outcomes: list[Any] = [None] * runs
    start = threading.Barrier(runs)

    def one(index: int) -> None:
        start.wait()
        try:
            outcomes[index] = call(f"{prefix}-{index}")
        except Exception as exc:
            outcomes[index] = exc

    workers = [threading.Thread(target=one, args=(i,)) for i in range(runs)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return outcomes


def measure(dsn: str, reps: int = REPS, single_reps: int = SINGLE_REPS) -> list[Result]:
    with ConnectionPool(dsn, min_size=POOL, max_size=POOL, kwargs=SETTINGS, timeout=30) as pool:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        saver.setup()
        return [
            _compare(
                saver,
                Pipeline(("first", "second"), SLEEP),
                RUNS,
                reps,
                f"7. {RUNS} concurrent runs (one thread each, 2 nodes x {SLEEP * 1000:.0f} ms) "
                f"on a PostgreSQL pool of {POOL}",
                1.1,
            ),
            _compare(
                saver,
                Pipeline(("only",), 0.0),
                1,
                single_reps,
                f"7b. One fresh one-node run (the node does nothing) on a PostgreSQL pool "
                f"of {POOL}",
                1.15,
            ),
            _compare(
                saver,
                Pipeline(("only",), 0.0),
                RUNS,
                single_reps,
                f"7c. {RUNS} concurrent fresh one-node runs (the node does nothing) on a "
                f"PostgreSQL pool of {POOL}",
                1.1,
            ),
            _lock_alone(saver, single_reps),
            _statements(dsn),
        ]


class CountingCursor(Cursor[Any]):
    """A cursor that counts the statements it sends (``executemany``: one per set of
    parameters), for every connection made with it, the lock's own included (it is
    made with the pool's settings)."""

    sent = 0

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        CountingCursor.sent += 1
        return super().execute(query, params, **kwargs)

    def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> None:
        params_seq = list(params_seq)
        CountingCursor.sent += len(params_seq)
        super().executemany(query, params_seq, **kwargs)


def _statements(dsn: str) -> Result:
    counting = {**SETTINGS, "cursor_factory": CountingCursor}
    with ConnectionPool(dsn, min_size=1, max_size=POOL, kwargs=counting, timeout=30) as pool:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        pipeline = Pipeline(("only",), 0.0)
        plain = pipeline.builder().compile(checkpointer=saver)
        graph = neograph_ext.compile(pipeline.builder(), checkpointer=saver)
        # The first run also stores the stamp's description and opens the lock's
        # connection: count a later one, as 7b times.
        neograph_ext.run(
            graph, {"doc": "x"}, {"configurable": {"thread_id": f"count-{time.time_ns()}"}}
        )

        def sent(call: Callable[[Any], object]) -> int:
            before = CountingCursor.sent
            call({"configurable": {"thread_id": f"count-{time.time_ns()}"}})
            return CountingCursor.sent - before

        ours = sent(lambda config: neograph_ext.run(graph, {"doc": "x"}, config))
        theirs = sent(lambda config: plain.invoke({"doc": "x"}, config, durability="sync"))
        bare = sent(lambda config: _take_and_release(saver, config))
    assert pipeline.counts["only"] == 3, pipeline.counts
    row = (
        "7e. Context for 7b and 7c: statements one fresh one-node run sends, counted on a "
        f"pool of {POOL}",
        f"`run()` {ours} vs plain `graph.invoke` {theirs}: **+{ours - theirs}** (the lock "
        f"alone: {bare}; the rest: the planning read and the read under the lock)",
        "",
    )
    return Result(row)


def _take_and_release(saver: PostgresSaver, config: Any) -> None:
    with thread_lock(saver, config["configurable"]["thread_id"], on_busy="raise"):
        pass


def _lock_alone(saver: PostgresSaver, reps: int) -> Result:
    def fresh() -> str:
        return f"lock-{time.time_ns()}"

    def lock(thread_id: str) -> None:
        with thread_lock(saver, thread_id, on_busy="raise"):
            pass

    def read(thread_id: str) -> object:
        return saver.get_tuple({"configurable": {"thread_id": thread_id}})

    timings = interleave([Case("lock", lock, fresh), Case("read", read, fresh)], reps)
    row = (
        f"7d. Context for 7b: the thread lock alone on a pool of {POOL} (take and release) "
        "vs one `saver.get_tuple` of a fresh thread",
        compared(timings, "lock", "read"),
        "",
    )
    return Result(row)


def _compare(
    saver: PostgresSaver,
    pipeline: Pipeline,
    runs: int,
    reps: int,
    what: str,
    target: float,
) -> Result:
    """``runs`` runs at once through ``run()`` against as many through ``graph.invoke``."""
    plain = pipeline.builder().compile(checkpointer=saver)
    graph = neograph_ext.compile(pipeline.builder(), checkpointer=saver)
    batches = itertools.count()

    def config(thread_id: str) -> Any:
        return {"configurable": {"thread_id": thread_id}}

    def ours(prefix: str) -> list[Any]:
        return concurrently(
            lambda t: neograph_ext.run(graph, {"doc": "x"}, config(t)), prefix, runs
        )

    def theirs(prefix: str) -> list[Any]:
        return concurrently(
            lambda t: plain.invoke({"doc": "x"}, config(t), durability="sync"), prefix, runs
        )

    nodes = len(pipeline.nodes)
    expected = [{"doc": "x", "done": nodes}] * runs

    def check(_: str, outcomes: object) -> None:
        assert outcomes == expected, outcomes

    def fresh() -> str:
        return f"concurrency-{time.time_ns()}-{next(batches)}"

    timings = interleave(
        [Case("ours", ours, fresh, check), Case("plain", theirs, fresh, check)], reps
    )
    per_batch = sum(pipeline.counts.values()) / (2 * (reps + 1))
    assert per_batch == nodes * runs, per_batch
    ratio = timings.ratio("ours", "plain")
    row = (
        f"{what}: `run()` vs plain `graph.invoke`",
        f"{compared(timings, 'ours', 'plain')}; failed runs: 0 of {runs * (reps + 1)} each",
        f"<= {target:g}x: {'met' if ratio <= target else '**missed**'}",
    )
    return Result(row, missed=ratio > target)


def run() -> list[Row]:
    dsn = pg_dsn()
    if not dsn:
        return []
    return [result.row for result in measure(dsn)]


if __name__ == "__main__":
    for row in run():
        print(f"| {' | '.join(row)} |", file=sys.stdout)
