"""One ``neograph_ext.run`` of the reliability graph, in a process of its own.

Usage::

    python -m tests.reliability.worker DB THREAD LOG [options]

DB is a SQLite file path or a ``postgresql://`` DSN (its tables must exist: the
parent calls ``setup()`` once, so racing workers never race on migrations). Every
node execution appends the node's name to LOG, one line, flushed before the node
does anything else: the log is the ground truth of what ran.

The graph has six nodes and one parallel pair: ``a -> b -> (c | d) -> e -> f``.
Each node writes a value derived from its inputs and from its declared output type,
so the final state shows which code produced it. ``--code c=float`` declares another
output type for ``c``: a schema change neograph-ext must detect.

Options:
    --code NODE=TYPE,...   output types (int, float, str, bytes); default all ``str``
    --block-at NODE        that node touches ``SIGNAL_DIR/NODE`` and sleeps until killed;
                           ``put_writes``: the saver's first ``put_writes`` call does
                           (in a rewind that keeps work: before its fork is stored)
    --signal-dir DIR       where ``--block-at`` signals
    --ready FILE / --go FILE   touch FILE when ready, then wait for the go file: races
    --delay SECONDS        each node sleeps this long, so racing runs overlap
    --on-busy wait|raise   passed to ``run``
    --lock-timeout SECONDS passed to ``run`` as ``lock_timeout``
    --out FILE             write the outcome as JSON (else print it)
    --path NAME            instead of ``run``: the call of ``paths.PATHS[NAME]``; the
                           outcome lists the saver writes it made
    --kill-before N        SIGKILL this process right before the saver's Nth write
                           (``put`` or ``put_writes``, counted together from 1)
    --kill-after N         ... or right after it
    --async                with ``--path``: the path's async call, on an async saver

Exit status: 0 done, 3 ``ThreadBusyError``, 4 ``CheckpointSchemaError``, 1 other.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import operator
import os
import signal
import sqlite3
import sys
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

import neograph_ext as ne

NODES = ("a", "b", "c", "d", "e", "f")
"""Execution order; ``c`` and ``d`` run in the same superstep."""
SIBLING = {"c": "d", "d": "c"}
"""The parallel pair: a kill inside one may or may not leave the other's result stored."""
UPSTREAM: Mapping[str, tuple[str, ...]] = {
    "a": ("seed",),
    "b": ("a",),
    "c": ("b",),
    "d": ("b",),
    "e": ("c", "d"),
    "f": ("e",),
}
TYPES: Mapping[str, type] = {"int": int, "float": float, "str": str, "bytes": bytes}
"""Output types a node can declare; changing one is a schema change."""
INPUT: Mapping[str, Any] = {"seed": "s0", "log": []}
"""The input every run starts a thread with."""

EXIT_OK, EXIT_ERROR, EXIT_BUSY, EXIT_SCHEMA = 0, 1, 3, 4


class State(TypedDict, total=False):
    """A reducer channel (appends) and one plain channel per node."""

    log: Annotated[list[str], operator.add]
    seed: str
    a: str
    b: str
    c: str
    d: str
    e: str
    f: str


def record(log: Path, name: str) -> None:
    """Append one line to the execution log; written before the node may be killed."""
    with log.open("a", encoding="utf-8") as fh:
        fh.write(name + "\n")
        fh.flush()


def executions(log: Path) -> list[str]:
    """Every node execution recorded so far, in order."""
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def parse_code(text: str | None) -> dict[str, str]:
    """``"c=float,e=int"`` -> ``{"c": "float", "e": "int"}``; every other node is ``str``."""
    code = dict.fromkeys(NODES, "str")
    for part in filter(None, (text or "").split(",")):
        node, _, tp = part.partition("=")
        if node not in code or tp not in TYPES:
            raise ValueError(f"bad --code entry {part!r}")
        code[node] = tp
    return code


def value(name: str, state: Mapping[str, Any], code: Mapping[str, str]) -> str:
    """What node ``name`` writes: its inputs and its declared type, nothing random."""
    inputs = ",".join(str(state.get(key)) for key in UPSTREAM[name])
    return f"{name}:{code[name]}({inputs})"


def build(
    log: Path,
    code: Mapping[str, str],
    *,
    block_at: str | None = None,
    signal_dir: Path | None = None,
    crash_at: str | None = None,
    delay: float = 0.0,
    names: Sequence[str] = NODES,
    state: type = State,
    crash_when: Callable[[], None] | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """The six-node graph; ``crash_at`` raises in that node (an in-process crash), once
    ``crash_when()`` returns, if given."""

    def make(name: str) -> Callable[[State], dict[str, Any]]:
        def node(state: State) -> dict[str, Any]:
            record(log, name)
            if name == block_at:
                assert signal_dir is not None
                (signal_dir / name).touch()
                time.sleep(600)  # until the parent kills this process
            if name == crash_at:
                if crash_when is not None:
                    crash_when()
                raise RuntimeError(f"crash in {name}")
            if delay:
                time.sleep(delay)
            return {"log": [name], name: value(name, state, code)}

        node.__name__ = f"node_{name}"
        return node

    builder = StateGraph(state)
    for name in names:
        builder.add_node(name, make(name))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    builder.add_edge("b", "d")
    builder.add_edge(["c", "d"], "e")
    builder.add_edge("e", "f")
    builder.add_edge("f", END)
    return builder


def compiled(
    saver: BaseCheckpointSaver[Any],
    builder: StateGraph[Any, Any, Any, Any],
    code: Mapping[str, str],
) -> Any:
    """Compile with neograph-ext, declaring each node's output type from ``code``."""
    return ne.compile(
        builder, checkpointer=saver, output_types={n: TYPES[t] for n, t in code.items()}
    )


@contextlib.contextmanager
def open_saver(db: str) -> Iterator[BaseCheckpointSaver[Any]]:
    """A sync saver on a SQLite file or a PostgreSQL DSN (tables already set up)."""
    if db.startswith(("postgresql://", "postgres://")):
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(db) as saver:
            yield saver
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(db, check_same_thread=False, timeout=30)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()


@contextlib.asynccontextmanager
async def aopen_saver(db: str) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """Async twin of ``open_saver``, bound to the running loop."""
    if db.startswith(("postgresql://", "postgres://")):
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(db) as saver:
            yield saver
    else:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(db) as lite:
            yield lite


WRITES = "put_writes"
"""``--block-at`` this to block in the saver's first ``put_writes`` instead of a node."""


def _block_writes(saver: BaseCheckpointSaver[Any], signal_dir: Path) -> None:
    """Make the saver's first ``put_writes`` signal and sleep until the process is killed."""

    def put_writes(*args: Any, **kwargs: Any) -> None:
        (signal_dir / WRITES).touch()
        time.sleep(600)

    saver.put_writes = put_writes  # type: ignore[method-assign]


def _killing(
    saver: BaseCheckpointSaver[Any],
    before: int | None,
    after: int | None,
    names: tuple[str, str] = ("put", "put_writes"),
) -> list[str]:
    """Count the saver's writes (``put`` and ``put_writes``, or their async twins, in
    the order made); SIGKILL this process right before the ``before``-th or right after
    the ``after``-th (from 1), if given. Returns the running record of the writes made,
    by method name (``put`` or ``put_writes``)."""
    made: list[str] = []

    def begin(name: str) -> None:
        if len(made) + 1 == before:
            os.kill(os.getpid(), signal.SIGKILL)
        made.append(name.removeprefix("a"))

    def end() -> None:
        if len(made) == after:
            os.kill(os.getpid(), signal.SIGKILL)

    for name in names:
        original = getattr(saver, name)
        if inspect.iscoroutinefunction(original):

            async def acounted(*args: Any, _name: str = name, _original: Any = original) -> Any:
                begin(_name)
                result = await _original(*args)
                end()
                return result

            setattr(saver, name, acounted)
        else:

            def counted(*args: Any, _name: str = name, _original: Any = original) -> Any:
                begin(_name)
                result = _original(*args)
                end()
                return result

            setattr(saver, name, counted)
    return made


def _wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.001)


def main(argv: Sequence[str] | None = None) -> int:
    """Run once; write the outcome; return the exit status (see module docstring)."""
    parser = argparse.ArgumentParser(prog="tests.reliability.worker")
    parser.add_argument("db")
    parser.add_argument("thread")
    parser.add_argument("log", type=Path)
    parser.add_argument("--code")
    parser.add_argument("--block-at")
    parser.add_argument("--signal-dir", type=Path)
    parser.add_argument("--ready", type=Path)
    parser.add_argument("--go", type=Path)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--on-busy", default="wait", choices=("wait", "raise"))
    parser.add_argument("--lock-timeout", type=float, default=60.0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--path")
    parser.add_argument("--kill-before", type=int)
    parser.add_argument("--kill-after", type=int)
    parser.add_argument("--async", dest="asynchronous", action="store_true")
    args = parser.parse_args(argv)
    if args.path:
        return _write_path(args)

    code = parse_code(args.code)
    builder = build(
        args.log, code, block_at=args.block_at, signal_dir=args.signal_dir, delay=args.delay
    )
    status, outcome = EXIT_ERROR, {}
    try:
        with open_saver(args.db) as saver:
            if args.block_at == WRITES:
                _block_writes(saver, args.signal_dir)
            graph = compiled(saver, builder, code)
            if args.ready:
                args.ready.touch()
            if args.go:
                _wait_for(args.go)
            started = time.monotonic()
            result = ne.run(
                graph,
                dict(INPUT),
                {"configurable": {"thread_id": args.thread}},
                lock=ne.LockPolicy(on_busy=args.on_busy, timeout=args.lock_timeout),
            )
            status = EXIT_OK
            outcome = {"status": "ok", "result": result, "seconds": time.monotonic() - started}
    except ne.ThreadBusyError as exc:
        status, outcome = EXIT_BUSY, {"status": "busy", "error": str(exc)}
    except ne.CheckpointSchemaError as exc:
        status, outcome = EXIT_SCHEMA, {"status": "schema", "error": str(exc)}
    except Exception as exc:  # the parent reports it
        outcome = {"status": "error", "error": repr(exc), "traceback": traceback.format_exc()}
    _report(args.out, outcome)
    return status


def _write_path(args: argparse.Namespace) -> int:
    """``--path NAME``: make that call of ``paths.PATHS`` on the thread, counting its
    writes, killed before the ``--kill-before``-th or after the ``--kill-after``-th."""
    from tests.reliability.paths import PATHS

    status, outcome = EXIT_ERROR, {}
    config = {"configurable": {"thread_id": args.thread}}
    try:
        started = time.monotonic()
        if args.asynchronous:
            result, made, started = asyncio.run(_awrite_path(args, config))
        else:
            with open_saver(args.db) as saver:
                made = _killing(saver, args.kill_before, args.kill_after)
                if args.ready:
                    args.ready.touch()
                started = time.monotonic()
                result = PATHS[args.path].call(saver, args.log, config)
        seconds = time.monotonic() - started
        status, outcome = EXIT_OK, {"status": "ok", "result": result, "writes": made}
        outcome["seconds"] = seconds
    except Exception as exc:  # the parent reports it
        outcome = {"status": "error", "error": repr(exc), "traceback": traceback.format_exc()}
    _report(args.out, outcome)
    return status


async def _awrite_path(
    args: argparse.Namespace, config: Mapping[str, Any]
) -> tuple[Any, list[str], float]:
    """``--path NAME --async``: the path's async call, on an async saver."""
    from tests.reliability.paths import PATHS

    async with aopen_saver(args.db) as saver:
        made = _killing(saver, args.kill_before, args.kill_after, ("aput", "aput_writes"))
        if args.ready:
            args.ready.touch()
        started = time.monotonic()
        acall = PATHS[args.path].acall
        assert acall is not None, f"path {args.path!r} has no async call"
        return await acall(saver, args.log, config), made, started


def _report(out: Path | None, outcome: Mapping[str, Any]) -> None:
    text = json.dumps(outcome, default=repr)
    if out:
        tmp = out.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out)  # the parent never reads half a result
    else:
        print(text)


def entry(argv: Sequence[str]) -> None:
    """Target for ``multiprocessing``: the exit status becomes the process's exit code."""
    sys.exit(main(argv))


if __name__ == "__main__":
    sys.exit(main())
