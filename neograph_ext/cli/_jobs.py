"""``check --jobs N`` and ``upgrade --jobs N``: the threads split by a stable hash of
their ids into N processes, each with its own connection, and what each made of its
threads (a check, an upgrade) merged back in the threads' order.

Rules:
- A thread's process is ``crc32(id) % N``: the same on every run and machine (Python's
  ``hash`` of a string is salted per process).
- Each process loads the graph and opens the database itself (a connection is never
  shared across a fork; for writing only when the work writes), runs the work on its
  threads in the order given, and sends its results back a batch at a time, each with
  the classes the serializer declined to revive while it was planned; the parent
  re-emits those as the serializer's own events, so the report hears them as it does
  in one process.
- The parent yields the results in the order of the threads it split: the same plans,
  counts and report as one process makes, in that order.
- A process's error is raised in the parent; the others are stopped.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar, cast

from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext
from neograph_ext.cli._boundary import CliError
from neograph_ext.cli._database import open_database
from neograph_ext.cli._graphs import Graph, attach, load
from neograph_ext.cli._serde import declined, emit_declined, reader

__all__ = ["SHARE", "Work", "cores", "jobs_for", "made", "sharded"]

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
"""Results a process sends back together."""


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


def shard_of(thread_id: str, jobs: int) -> int:
    """The process a thread is given to."""
    return zlib.crc32(thread_id.encode()) % jobs


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
    shards: list[list[str]] = [[] for _ in range(jobs)]
    for name in names:
        shards[shard_of(name, jobs)].append(name)
    context = multiprocessing.get_context("spawn")
    queues = [context.Queue() for _ in shards]
    workers = [
        context.Process(target=_job, args=(spec, db, shard, queue, work, write), daemon=True)
        for shard, queue in zip(shards, queues, strict=True)
    ]
    for worker in workers:
        worker.start()
    received: list[deque[tuple[T, list[str]]]] = [deque() for _ in shards]
    try:
        for name in names:
            k = shard_of(name, jobs)
            if not received[k]:
                received[k].extend(_received(queues[k].get()))
            result, classes = received[k].popleft()
            emit_declined(classes)
            yield result
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
            worker.join()


def _received(sent: Any) -> list[tuple[Any, list[str]]]:
    if isinstance(sent, BaseException):
        raise sent
    return sent  # type: ignore[no-any-return]


def _job(spec: str, db: str, names: list[str], queue: Any, work: Work[Any], write: bool) -> None:
    """One process: ``work`` on ``names``, sending the results back ``_SENT`` at a time."""
    try:
        target = load(spec)
        with open_database(db, write=write, serde=reader(target)) as saver, declined() as heard:
            compiled = attach(target, saver, spec)
            batch: list[tuple[Any, list[str]]] = []
            for result in work(compiled, names):
                batch.append((result, sorted(heard)))
                heard.clear()
                if len(batch) == _SENT:
                    queue.put(batch)
                    batch = []
            queue.put(batch)
    except BaseException as exc:  # raised in the parent, which stops the others
        queue.put(_picklable(exc))


def _picklable(exc: BaseException) -> BaseException:
    """``exc``, or, when it cannot cross to the parent as itself, its type and message
    as a ``RuntimeError``."""
    import pickle

    try:
        return pickle.loads(pickle.dumps(exc))  # type: ignore[no-any-return]
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
