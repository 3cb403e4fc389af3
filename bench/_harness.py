"""Shared helpers for the benchmark scripts: interleaved timing, savers, test graphs.

Rules:
- A comparison is always two cases timed in the same process, interleaved: each
  repetition times every case once, and the order flips on every other repetition
  (A B, B A, A B, ...) so neither side always runs on a warmer cache.
- Setup (a fresh thread, a copy of one) runs outside the timed region; only the call
  a user would make is timed.
- A figure is the median of the repetitions after the warm-up ones; a ratio is the
  ratio of two such medians.
- The garbage collector runs as it would in an application: a ``gc.collect()``
  before every timed call was tried and dropped, because it leaves the allocator
  and the CPU caches cold and made sub-millisecond calls several times slower.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from _profile import Probe
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

__all__ = [
    "DIR_ENV",
    "PG_DSN_ENV",
    "Case",
    "LoopCrash",
    "LoopGraph",
    "LoopThreads",
    "Probe",
    "Result",
    "Row",
    "Timings",
    "bench_dir",
    "bench_dir_label",
    "chain_builder",
    "compared",
    "copy_pg_thread",
    "copy_sqlite_thread",
    "count_checkpoints",
    "fmt_ms",
    "fmt_ratio",
    "interleave",
    "pg_dsn",
    "pg_saver",
    "sqlite_saver",
    "verdict",
]

PG_DSN_ENV = "NEOGRAPH_EXT_PG_DSN"
"""Environment variable naming the PostgreSQL server to measure; unset: no PG rows."""

Row = tuple[str, str, str]
"""One line of the results table: what was measured, the result, the target and verdict."""


@dataclass(frozen=True)
class Result:
    """A row of the table, and what to profile when it misses its target."""

    row: Row
    """The table line."""
    missed: bool = False
    """Whether the row's target was missed."""
    probes: tuple[Probe, ...] = ()
    """neograph-ext's side first, then LangGraph's: profiled when ``missed``."""


@dataclass(frozen=True)
class Case:
    """One side of a comparison."""

    name: str
    """Key of the case in the returned timings."""
    call: Callable[[Any], object]
    """The timed call; it receives what ``setup`` returned."""
    setup: Callable[[], Any] = lambda: None
    """Untimed preparation for one call (e.g. a fresh copy of a thread)."""
    check: Callable[[Any, object], None] | None = None
    """Untimed check of one call's result, to prove the case did what it claims."""


@dataclass
class Timings:
    """Seconds per repetition, per case, warm-up excluded."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    """Wall-clock seconds."""
    cpu: dict[str, list[float]] = field(default_factory=dict)
    """CPU seconds of the process (all threads): blind to waiting for a core or a disk."""

    def median(self, name: str) -> float:
        return statistics.median(self.samples[name])

    def cpu_median(self, name: str) -> float:
        return statistics.median(self.cpu[name])

    def ratio(self, a: str, b: str) -> float:
        """Median wall time of ``a`` over that of ``b``."""
        return self.median(a) / self.median(b)

    def cpu_ratio(self, a: str, b: str) -> float:
        """Median CPU time of ``a`` over that of ``b``."""
        return self.cpu_median(a) / self.cpu_median(b)

    def reps(self, name: str) -> int:
        return len(self.samples[name])


def interleave(
    cases: Sequence[Case], reps: int, warmup: int = 1, *, gc_paused: bool = False
) -> Timings:
    """Time ``cases`` against each other, interleaved.

    Args:
        cases: The sides of the comparison (usually two).
        reps: Recorded repetitions per case (at least 7 for a reported figure).
        warmup: Repetitions run first and discarded.
        gc_paused: Pause CPython's cyclic garbage collector during each timed call, to
            see an algorithm's own growth apart from the collector's passes over every
            object alive (which grow with the data a call holds).

    Returns:
        The recorded seconds of each case.
    """
    out = Timings({case.name: [] for case in cases}, {case.name: [] for case in cases})
    gc.collect()
    for rep in range(warmup + reps):
        order = list(cases) if rep % 2 == 0 else list(reversed(cases))
        for case in order:
            arg = case.setup()
            if gc_paused:
                gc.disable()
            try:
                cpu_start = time.process_time()
                start = time.perf_counter()
                result = case.call(arg)
                elapsed = time.perf_counter() - start
                cpu = time.process_time() - cpu_start
            finally:
                gc.enable()
            if case.check is not None:
                case.check(arg, result)
            # Released here, untimed: else the next timed call (often the other case's)
            # would pay for freeing this one's result.
            del result
            if rep >= warmup:
                out.samples[case.name].append(elapsed)
                out.cpu[case.name].append(cpu)
    return out


def fmt_ms(seconds: float) -> str:
    """A duration in milliseconds with three significant digits (microseconds below 1 ms)."""
    ms = seconds * 1000
    if ms < 1:
        return f"{ms * 1000:.0f} µs"
    if ms >= 100:
        return f"{ms:.0f} ms"
    if ms >= 10:
        return f"{ms:.1f} ms"
    return f"{ms:.2f} ms"


def fmt_ratio(value: float) -> str:
    return f"{value:.2f}x"


def compared(timings: Timings, a: str, b: str) -> str:
    """``a`` against ``b``: both medians, the wall-time ratio, the CPU-time ratio."""
    return (
        f"{fmt_ms(timings.median(a))} vs {fmt_ms(timings.median(b))}: "
        f"**{fmt_ratio(timings.ratio(a, b))}** "
        f"(CPU {fmt_ratio(timings.cpu_ratio(a, b))}; n={timings.reps(a)})"
    )


def verdict(ratio: float, target: float, op: str = "<=") -> str:
    ok = ratio <= target if op == "<=" else ratio < target
    return f"{op} {target:g}x: {'met' if ok else '**missed**'}"


# -- savers ---------------------------------------------------------------------------


DIR_ENV = "NEOGRAPH_EXT_BENCH_DIR"
"""Environment variable naming the directory for the SQLite database files."""


def bench_dir() -> str | None:
    """Where database files go: ``$NEOGRAPH_EXT_BENCH_DIR``, else a RAM-backed temp
    directory (``/dev/shm``) when there is one, else the system's temp directory.

    On a RAM disk a commit's flush costs nothing, so the figures show what the
    libraries compute, not how busy a shared disk was: on a disk both sides of every
    comparison write the same checkpoints and pay the same flushes on top.
    """
    chosen = os.environ.get(DIR_ENV)
    if chosen:
        return chosen
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return None


def bench_dir_label() -> str:
    chosen = bench_dir()
    if chosen is None:
        return f"the system temp directory ({tempfile.gettempdir()})"
    if chosen == "/dev/shm" and not os.environ.get(DIR_ENV):
        return "a RAM-backed directory (/dev/shm)"
    return chosen


@contextlib.contextmanager
def sqlite_saver() -> Iterator[SqliteSaver]:
    """A SQLite file saver in a fresh database file, as ``SqliteSaver`` sets it up."""
    with tempfile.TemporaryDirectory(prefix="neograph-ext-bench-", dir=bench_dir()) as tmp:
        conn = sqlite3.connect(os.path.join(tmp, "checkpoints.db"), check_same_thread=False)
        try:
            saver = SqliteSaver(conn)
            saver.setup()
            yield saver
        finally:
            conn.close()


def pg_dsn() -> str | None:
    """The PostgreSQL server to measure, or None when none was given."""
    return os.environ.get(PG_DSN_ENV) or None


@contextlib.contextmanager
def pg_saver(dsn: str) -> Iterator[Any]:
    """A PostgreSQL saver on a connection to ``dsn``, its tables emptied first."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        with saver._cursor() as cur:
            cur.execute("TRUNCATE checkpoints, checkpoint_blobs, checkpoint_writes")
        yield saver


def copy_sqlite_thread(saver: SqliteSaver, source: str, target: str) -> None:
    """Copy every checkpoint and pending write of a thread under a new thread id.

    LangGraph copies scalar ``configurable`` values (the thread id among them) into
    checkpoint metadata; the copy's metadata is left as is: nothing reads it back.
    """
    with saver.lock, saver.conn:
        saver.conn.execute("DELETE FROM checkpoints WHERE thread_id = ?", (target,))
        saver.conn.execute("DELETE FROM writes WHERE thread_id = ?", (target,))
        saver.conn.execute(
            "INSERT INTO checkpoints SELECT ?, checkpoint_ns, checkpoint_id, "
            "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
            "WHERE thread_id = ?",
            (target, source),
        )
        saver.conn.execute(
            "INSERT INTO writes SELECT ?, checkpoint_ns, checkpoint_id, task_id, task_path, "
            "idx, channel, type, value FROM writes WHERE thread_id = ?",
            (target, source),
        )
    # Fold the copy into the database file now, so that no timed commit after it pays
    # for checkpointing thousands of copied rows out of the write-ahead log.
    with saver.lock:
        saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def count_checkpoints(saver: Any, thread_id: str) -> int:
    """Root-namespace checkpoints of a thread, as a raw scan sees them."""
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    return sum(1 for _ in saver.list(config))


# -- graphs ---------------------------------------------------------------------------


class ChainState(TypedDict):
    n: int


def _increment(state: ChainState) -> dict[str, int]:
    return {"n": state["n"] + 1}


def chain_builder(nodes: int) -> StateGraph[Any, Any, Any, Any]:
    """``nodes`` trivial nodes in a line, each adding one to ``n``."""
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(ChainState)
    previous = START
    for index in range(nodes):
        name = f"node_{index:02d}"
        builder.add_node(name, _increment)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder


class LoopState(TypedDict):
    i: int
    limit: int


class LoopCrash(RuntimeError):
    """Raised by the loop node on purpose, to leave a crashed thread behind."""


class LoopGraph:
    """A one-node loop: ``step`` adds one to ``i`` until it reaches ``limit``.

    A thread of ``limit`` steps holds about ``limit + 2`` checkpoints (input, one per
    step, and the first one). Setting ``crash`` makes the last step raise, which leaves
    an incomplete thread whose head waits on ``step``.
    """

    def __init__(self, work: float = 0.0) -> None:
        self.crash = False
        self.runs = 0
        self.work = work
        """Seconds each step sleeps, a stand-in for real work (0: none)."""

    def step(self, state: LoopState) -> dict[str, int]:
        self.runs += 1
        if self.crash and state["i"] + 1 >= state["limit"]:
            raise LoopCrash("crash on the last step, on purpose")
        if self.work:
            time.sleep(self.work)
        return {"i": state["i"] + 1}

    @staticmethod
    def route(state: LoopState) -> str:
        return "step" if state["i"] < state["limit"] else END

    def builder(self) -> StateGraph[Any, Any, Any, Any]:
        builder: StateGraph[Any, Any, Any, Any] = StateGraph(LoopState)
        builder.add_node("step", self.step)
        builder.add_edge(START, "step")
        builder.add_conditional_edges("step", self.route, ["step", END])
        return builder

    @staticmethod
    def config(thread_id: str, steps: int) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread_id}, "recursion_limit": steps + 10}


# -- shared threads -------------------------------------------------------------------


class LoopThreads:
    """Loop threads of a given length on one saver, written once and shared by figures.

    ``crashed(n)`` is a thread whose last step raised, so its head waits on ``step``;
    it holds ``n - 1`` checkpoints. ``complete(n)`` is a copy of it resumed to the end
    (the resumed step writes the ``n``-th checkpoint). Both were written by
    ``neograph_ext.run`` with its default ``durability="sync"``.
    """

    def __init__(self, saver: Any) -> None:
        self.saver = saver
        self._crashed: dict[int, str] = {}
        self._complete: dict[int, str] = {}
        self.build_seconds = 0.0

    @staticmethod
    def steps(checkpoints: int) -> int:
        """Loop iterations that leave ``checkpoints`` checkpoints in a complete thread."""
        return checkpoints - 2

    def graph(self, loop: LoopGraph | None = None, **kwargs: Any) -> Any:
        import neograph_ext

        return neograph_ext.compile(
            (loop or LoopGraph()).builder(), checkpointer=self.saver, **kwargs
        )

    def crashed(self, checkpoints: int) -> str:
        if checkpoints not in self._crashed:
            import neograph_ext

            start = time.perf_counter()
            loop = LoopGraph()
            loop.crash = True
            thread_id = f"crashed-{checkpoints}"
            steps = self.steps(checkpoints)
            try:
                neograph_ext.run(
                    self.graph(loop), {"i": 0, "limit": steps}, LoopGraph.config(thread_id, steps)
                )
            except LoopCrash:
                pass
            else:
                raise AssertionError("the loop did not crash")
            self._crashed[checkpoints] = thread_id
            self.build_seconds += time.perf_counter() - start
        return self._crashed[checkpoints]

    def complete(self, checkpoints: int) -> str:
        if checkpoints not in self._complete:
            import neograph_ext

            source = self.crashed(checkpoints)
            start = time.perf_counter()
            thread_id = f"complete-{checkpoints}"
            self.copy(source, thread_id)
            steps = self.steps(checkpoints)
            neograph_ext.run(self.graph(), None, LoopGraph.config(thread_id, steps))
            self._complete[checkpoints] = thread_id
            self.build_seconds += time.perf_counter() - start
            found = count_checkpoints(self.saver, thread_id)
            if found != checkpoints:
                raise AssertionError(f"{thread_id} has {found} checkpoints, not {checkpoints}")
        return self._complete[checkpoints]

    def analyze(self) -> None:
        """Refresh PostgreSQL's planner statistics after bulk writes.

        Right after thousands of inserts the planner still sees near-empty tables and
        picks plans for the saver's ``list`` query that ran 2-7x slower in trial runs at
        1,000 checkpoints; autovacuum fixes that on its own within a minute or so.
        """
        if not isinstance(self.saver, SqliteSaver):
            with self.saver._cursor() as cur:
                cur.execute("ANALYZE checkpoints, checkpoint_blobs, checkpoint_writes")

    def copy(self, source: str, target: str) -> None:
        if isinstance(self.saver, SqliteSaver):
            copy_sqlite_thread(self.saver, source, target)
        else:
            copy_pg_thread(self.saver, source, target)


def copy_pg_thread(saver: Any, source: str, target: str) -> None:
    """``copy_sqlite_thread`` for ``PostgresSaver``'s three tables."""
    with saver._cursor() as cur:
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            cur.execute(f"DELETE FROM {table} WHERE thread_id = %s", (target,))
        cur.execute(
            "INSERT INTO checkpoints SELECT %s, checkpoint_ns, checkpoint_id, "
            "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
            "WHERE thread_id = %s",
            (target, source),
        )
        cur.execute(
            "INSERT INTO checkpoint_blobs SELECT %s, checkpoint_ns, channel, version, type, blob "
            "FROM checkpoint_blobs WHERE thread_id = %s",
            (target, source),
        )
        cur.execute(
            "INSERT INTO checkpoint_writes SELECT %s, checkpoint_ns, checkpoint_id, task_id, "
            "idx, channel, type, blob, task_path FROM checkpoint_writes WHERE thread_id = %s",
            (target, source),
        )
