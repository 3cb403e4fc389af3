"""Starting, signalling, killing and judging worker processes.

Workers are real processes started from a fork server that has already imported
LangGraph (``multiprocessing`` ``forkserver`` context, ``worker`` preloaded): each one
starts in milliseconds instead of seconds, opens its own database connections, and
dies of a real SIGKILL. The same worker also runs standalone as
``python -m tests.reliability.worker``.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

import neograph_ext as ne
from tests.reliability import worker

_CTX = multiprocessing.get_context("forkserver")
_CTX.set_forkserver_preload(["tests.reliability.worker"])

STEP = {"a": 0, "b": 1, "c": 2, "d": 2, "e": 3, "f": 4}
"""Superstep of each node in the reliability graph."""


@dataclass
class Outcome:
    """What a finished worker reported."""

    exitcode: int | None
    status: str
    result: Any = None
    error: str = ""
    seconds: float = 0.0
    writes: tuple[str, ...] = ()
    """For a ``--path`` worker: the saver writes it made, in order."""


@dataclass
class Worker:
    """A running worker process."""

    process: BaseProcess
    out: Path

    def wait(self, timeout: float = 120.0) -> Outcome:
        """Join the process and read its outcome; fails loudly if it hangs."""
        self.process.join(timeout)
        if self.process.is_alive():
            self.kill()
            raise AssertionError(f"worker still running after {timeout} s")
        if not self.out.exists():
            return Outcome(self.process.exitcode, "no outcome")
        data = json.loads(self.out.read_text(encoding="utf-8"))
        return Outcome(
            self.process.exitcode,
            data["status"],
            data.get("result"),
            data.get("error", "") + data.get("traceback", ""),
            data.get("seconds", 0.0),
            tuple(data.get("writes", ())),
        )

    def kill(self) -> None:
        """SIGKILL: no exception, no ``finally``, no flush, no goodbye to the database."""
        if self.process.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGKILL)
        self.process.join(30)


_counter = iter(range(1_000_000_000))


def spawn(
    db: str,
    thread: str,
    log: Path,
    *,
    code: str | None = None,
    block_at: str | None = None,
    signal_dir: Path | None = None,
    ready: Path | None = None,
    go: Path | None = None,
    delay: float = 0.0,
    on_busy: str = "wait",
    lock_timeout: float = 60.0,
    path: str | None = None,
    kill_before: int | None = None,
    kill_after: int | None = None,
    asynchronous: bool = False,
) -> Worker:
    """Start one worker process (arguments as in ``worker.main``)."""
    out = log.parent / f"outcome-{os.getpid()}-{next(_counter)}.json"
    argv = [db, thread, str(log), "--out", str(out), "--on-busy", on_busy]
    argv += ["--lock-timeout", str(lock_timeout), "--delay", str(delay)]
    for flag, value in (
        ("--code", code),
        ("--block-at", block_at),
        ("--signal-dir", signal_dir),
        ("--ready", ready),
        ("--go", go),
        ("--path", path),
        ("--kill-before", kill_before),
        ("--kill-after", kill_after),
    ):
        if value is not None:
            argv += [flag, str(value)]
    if asynchronous:
        argv.append("--async")
    process = _CTX.Process(target=worker.entry, args=(argv,), daemon=True)
    process.start()
    return Worker(process, out)


def run_worker(db: str, thread: str, log: Path, **options: Any) -> Outcome:
    """Start a worker and wait for it."""
    return spawn(db, thread, log, **options).wait()


def in_time(call: Callable[[], Any], timeout: float = 20.0) -> Any:
    """``call()`` in a daemon thread; fails if it does not return within ``timeout``
    seconds (a hung call fails its test instead of stalling the suite)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # re-raised below, in the test's thread
            box["error"] = exc

    runner = threading.Thread(target=target, daemon=True)
    runner.start()
    runner.join(timeout)
    assert not runner.is_alive(), f"the call hung for {timeout} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


def wait_for(path: Path, *, alive: Worker | None = None, timeout: float = 60.0) -> None:
    """Wait until ``path`` exists; fail early if the worker meant to create it died."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if alive is not None and not alive.process.is_alive():
            raise AssertionError(f"worker died before {path.name}: {alive.wait()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.002)


def kill_at(
    db: str,
    thread: str,
    log: Path,
    node: str,
    signal_dir: Path,
    *,
    once: Callable[[], bool] | None = None,
    **options: Any,
) -> None:
    """Run a worker until ``node`` is executing (and ``once()`` holds), then SIGKILL it."""
    signal_dir.mkdir(exist_ok=True)
    (signal_dir / node).unlink(missing_ok=True)
    victim = spawn(db, thread, log, block_at=node, signal_dir=signal_dir, **options)
    wait_for(signal_dir / node, alive=victim)
    deadline = time.monotonic() + 30
    while once is not None and not once():
        assert time.monotonic() < deadline, "the awaited condition never held"
        time.sleep(0.02)
    victim.kill()
    assert victim.process.exitcode == -signal.SIGKILL, victim.process.exitcode


def counts(log: Path) -> Counter[str]:
    """Executions per node so far."""
    return Counter(worker.executions(log))


def since(log: Path, before: Counter[str]) -> Counter[str]:
    """Executions per node since ``before`` was taken."""
    now = counts(log)
    now.subtract(before)
    return +now


@cache
def reference(code: str | None = None) -> Any:
    """The final state of an uninterrupted run of ``code``, as a worker reports it."""
    parsed = worker.parse_code(code)
    with contextlib.closing(sqlite3.connect(":memory:", check_same_thread=False)) as conn:
        graph = worker.compiled(SqliteSaver(conn), worker.build(Path(os.devnull), parsed), parsed)
        result = graph.invoke(dict(worker.INPUT), {"configurable": {"thread_id": "reference"}})
    return jsonable(result)


def checkpoint_ids(db: str, thread: str) -> set[str]:
    """Every checkpoint id of a thread, in every namespace and branch."""
    with worker.open_saver(db) as saver:
        return {t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": thread}})}


def sources(db: str, thread: str) -> Counter[str]:
    """How many checkpoints of each ``source`` a thread has."""
    with worker.open_saver(db) as saver:
        return Counter(
            str((t.metadata or {}).get("source"))
            for t in saver.list({"configurable": {"thread_id": thread}})
        )


def head_sources(db: str, threads: Iterable[str]) -> Counter[str]:
    """How many of ``threads`` have a head of each ``source`` (``none``: no checkpoint)."""
    found: Counter[str] = Counter()
    with worker.open_saver(db) as saver:
        for thread in threads:
            head = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
            found[str((head.metadata or {}).get("source")) if head else "none"] += 1
    return found


def jsonable(value: Any) -> Any:
    """``value`` as a worker reports it (through JSON)."""
    return json.loads(json.dumps(value, default=repr))


def plan_kind(db: str, thread: str, code: str | None = None) -> ne.PlanKind:
    """What ``run`` would do now with the thread, for ``code``."""
    parsed = worker.parse_code(code)
    with worker.open_saver(db) as saver:
        graph = worker.compiled(saver, worker.build(Path(os.devnull), parsed), parsed)
        return ne.plan(graph, {"configurable": {"thread_id": thread}}).kind


def assert_each_at_most_once(ran: Mapping[str, int], allowed: Iterable[str] = worker.NODES) -> None:
    """No node ran twice, and only ``allowed`` nodes ran at all."""
    twice = {node: n for node, n in ran.items() if n > 1}
    assert not twice, f"nodes ran more than once: {twice}"
    assert set(ran) <= set(allowed), f"unexpected nodes ran: {set(ran) - set(allowed)}"
