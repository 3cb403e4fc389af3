"""One ``neograph_ext.run`` of an ``@entrypoint`` (``t1 -> t2 -> t3``), in a process of
its own: the Functional API's counterpart of ``worker``.

Usage::

    python -m tests.reliability.functional_worker DB THREAD LOG OUT [--block-at TASK]
        [--signal-dir DIR] [--version TASK=VERSION]

Every task execution appends the task's name to LOG before anything else; ``--block-at``
makes that task touch ``DIR/TASK`` and sleep until the parent kills the process;
``--version`` compiles with ``versions={TASK: VERSION}``: the deploy of a changed task.
The outcome (the result, or the error) is written to OUT as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langgraph.func import entrypoint, task
from langgraph.pregel import Pregel

import neograph_ext as ne
from tests.reliability.worker import open_saver, record

TASKS = ("t1", "t2", "t3")


def build(log: Path, block_at: str | None, signal_dir: Path | None) -> Pregel[Any, Any, Any, Any]:
    """``t1(x) -> t2 -> t3``, each task recording itself, ``block_at`` waiting to be killed."""

    def step(name: str, x: str) -> str:
        record(log, name)
        if name == block_at and signal_dir is not None:
            (signal_dir / name).touch()
            time.sleep(600)
        return f"{name}({x})"

    @task
    def t1(x: str) -> str:
        return step("t1", x)

    @task
    def t2(x: str) -> str:
        return step("t2", x)

    @task
    def t3(x: str) -> str:
        return step("t3", x)

    @entrypoint()
    def workflow(x: str) -> str:
        return t3(t2(t1(x).result()).result()).result()

    return workflow


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="tests.reliability.functional_worker")
    parser.add_argument("db")
    parser.add_argument("thread")
    parser.add_argument("log", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--block-at")
    parser.add_argument("--signal-dir", type=Path)
    parser.add_argument("--version")
    args = parser.parse_args(argv)
    versions = dict([args.version.split("=", 1)]) if args.version else None
    try:
        with open_saver(args.db) as saver:
            workflow = build(args.log, args.block_at, args.signal_dir)
            graph = ne.compile(workflow, checkpointer=saver, versions=versions)
            result = ne.run(graph, "s0", {"configurable": {"thread_id": args.thread}})
        outcome: dict[str, Any] = {"status": "ok", "result": result}
    except Exception as exc:  # the parent reports it
        outcome = {"status": "error", "error": repr(exc), "traceback": traceback.format_exc()}
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(outcome), encoding="utf-8")
    os.replace(tmp, args.out)
    return 0 if outcome["status"] == "ok" else 1


def entry(argv: Sequence[str]) -> None:
    """Target for ``multiprocessing``: the exit status becomes the process's exit code."""
    sys.exit(main(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
