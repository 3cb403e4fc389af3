"""``check --jobs N`` and ``upgrade --jobs N``: the threads shared out, a chunk at a time,
to a pool of N processes (the standard library's ``ProcessPoolExecutor``), each opening
the database itself, and what each made of its threads (a check, an upgrade) merged back
in the threads' order.

Rules:
- The threads are cut, in their order, into chunks of at most ``_SENT`` (fewer, when
  that is needed to give every process some); a free process takes the next chunk. At
  most two chunks a process are out at once, so the parent holds that many results
  whatever the database size.
- Each chunk loads the graph and opens the database in its process (a connection is
  never shared across processes; for writing only when the work writes), runs the work
  on its threads in their order, and returns the results, each with the classes the
  serializer declined to revive while it was planned; the parent re-emits those as the
  serializer's own events, so the report hears them as it does in one process.
- The parent yields the results in the order of the threads it was given: the same
  plans, counts and report as one process makes.
- A process's error is raised in the parent; the others are stopped. A process that
  dies (killed, out of memory) breaks the pool, which says so at once: the command ends
  with one line naming the process and how it ended. What the others finished before is
  reported; what they finished after is found done by the same command run again (each
  write is kill-safe, as in one process).
"""

from __future__ import annotations

import os
import signal
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import islice
from multiprocessing.context import SpawnContext, SpawnProcess
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar, cast

from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext
from neograph_ext.cli._boundary import CliError
from neograph_ext.cli._database import open_database
from neograph_ext.cli._graphs import Graph, attach, load
from neograph_ext.cli._serde import declined, emit_declined, reader

__all__ = ["SHARE", "Work", "chunk_size", "cores", "jobs_for", "made", "sharded"]

T = TypeVar("T")

Work = Callable[[Any, list[str] | None], Iterable[T]]
"""What is made of threads: ``work(graph, names)`` (``check_threads``, a ``partial`` of
``upgrade_threads``), picklable, so that a process spawned gets it."""

SHARE = 5_000
"""Threads below which a process of its own costs more (its start, the graph's and
LangGraph's imports: about a second of CPU each) than it saves: the default number of
jobs gives each at least this many. Measured: at 2,000 threads, ``--jobs 2`` took 1.9x
the CPU of ``--jobs 1``."""

_SENT = 200
"""Threads a process is given at a time, at most. Each chunk loads the graph and opens the
database again: measured on SQLite in a warm process, 6 ms, against 0.8 ms a thread
planned (about 4% of a chunk of 200)."""


def made(
    spec: str,
    db: str,
    graph: Graph,
    saver: BaseCheckpointSaver[Any],
    names: list[str] | None,
    jobs: int | None,
    work: Work[T],
    *,
    write: bool = False,
) -> Iterable[T]:
    """What ``work`` makes of the threads named (else of every thread of ``saver``), in
    this process or in ``jobs`` (``jobs_for``); ``write``: it writes."""
    if jobs is not None and jobs < 1:
        raise CliError(f"--jobs must be at least 1, got {jobs}")
    if jobs == 1:
        return work(graph, names)
    listed = names if names is not None else _thread_ids(saver)
    count = jobs_for(jobs, len(listed))
    if count == 1:
        return work(graph, names)
    return sharded(spec, db, listed, count, work, write=write)


def _thread_ids(saver: BaseCheckpointSaver[Any]) -> list[str]:
    """Every thread id of ``saver``'s database, sorted (one indexed query a page):
    through 0.3's survey, the one public listing of ids."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        survey = cast("Callable[[Any], Iterable[str]]", neograph_ext.list_threads)
    return list(survey(saver))


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def jobs_for(jobs: int | None, threads: int) -> int:
    """How many processes share ``threads`` threads: ``jobs`` as given (at most one a
    thread), else the cores available, each given at least ``SHARE`` threads."""
    if jobs is None:
        jobs = min(cores(), threads // SHARE)
    return max(1, min(jobs, threads))


def chunk_size(threads: int, jobs: int) -> int:
    """How many threads a process is given at a time: ``_SENT``, or fewer, so that each
    of ``jobs`` processes gets some."""
    return max(1, min(_SENT, -(-threads // jobs)))


def sharded(
    spec: str,
    db: str,
    names: Sequence[str],
    jobs: int,
    work: Work[T],
    *,
    write: bool = False,
) -> Iterator[T]:
    """What ``work`` makes of ``names`` in ``jobs`` processes, in the order of ``names``."""
    size = chunk_size(len(names), jobs)
    chunks = (list(names[at : at + size]) for at in range(0, len(names), size))
    context = _Watched()
    pool = ProcessPoolExecutor(jobs, mp_context=context)
    out: deque[Future[list[tuple[T, list[str]]]]] = deque()
    finished = False
    try:
        for chunk in islice(chunks, 2 * jobs):
            out.append(pool.submit(_job, spec, db, chunk, work, write))
        while out:
            try:
                results = out.popleft().result()
            except BrokenProcessPool:
                pool.shutdown(wait=True)  # the pool has reaped the dead: its exit is known
                raise CliError(_died(context.started)) from None
            # The next chunk goes out before these results are yielded: no process idles.
            for chunk in islice(chunks, 1):
                out.append(pool.submit(_job, spec, db, chunk, work, write))
            for result, classes in results:
                emit_declined(classes)
                yield result
        finished = True
    finally:
        if not finished:  # an error, or the caller stopped early: the chunks out are dropped
            pool.shutdown(wait=False, cancel_futures=True)
            for process in context.started:
                if process.is_alive():
                    process.terminate()
        pool.shutdown(wait=True)


class _Watched(SpawnContext):
    """The spawn context (a connection is never inherited), keeping the processes the
    pool starts: the one that died is named by its pid and how it ended."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list[BaseProcess] = []

    # The pool starts its processes through ``Process``, multiprocessing's name.
    def Process(self, *args: Any, **kwargs: Any) -> BaseProcess:  # type: ignore[override]
        process = SpawnProcess(*args, **kwargs)
        self.started.append(process)
        return process


def _died(started: Sequence[BaseProcess]) -> str:
    """The line for a pool a dead process broke: which process, how it ended, what next."""
    ended = [p for p in started if p.exitcode not in (None, 0)]
    # The pool ends the others with SIGTERM once it sees one die: the one that died first
    # ended otherwise (unless it was itself sent SIGTERM).
    dead = [p for p in ended if p.exitcode != -signal.SIGTERM] or ended
    if dead:
        code = cast("int", dead[0].exitcode)
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        which = (
            f"process {dead[0].pid} ({how}{', out of memory?' if code == -signal.SIGKILL else ''})"
        )
    else:
        which = "a process"
    return (
        f"--jobs: {which} died before it finished its threads; the others were stopped. "
        "Run the same command again: what was written is found done (--jobs 1 uses one process)"
    )


def _job(
    spec: str, db: str, names: list[str], work: Work[Any], write: bool
) -> list[tuple[Any, list[str]]]:
    """One chunk, in a process of the pool: ``work`` on ``names``, each result with the
    classes the serializer declined while it was made."""
    try:
        target = load(spec)
        with open_database(db, write=write, serde=reader(target)) as saver, declined() as heard:
            compiled = attach(target, saver, spec)
            done: list[tuple[Any, list[str]]] = []
            for result in work(compiled, names):
                done.append((result, sorted(heard)))
                heard.clear()
            return done
    except Exception as exc:  # raised in the parent, which stops the others
        raise _picklable(exc) from None


def _picklable(exc: BaseException) -> BaseException:
    """``exc``, or, when it cannot cross to the parent as itself, its type and message
    as a ``RuntimeError``."""
    import pickle

    try:
        return pickle.loads(pickle.dumps(exc))  # type: ignore[no-any-return]
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
