"""The ``neograph-ext`` command line: what a resume would do, before it happens.

Rules:
- Read-only: databases are opened read-only where the driver allows it (``_cli_db``),
  no saver ``setup()`` runs, and planning writes nothing. The one exception is ``accept``, asked
  for by name: it opens the database for writing and writes one checkpoint (a fork of
  the thread's head, through ``neograph_ext.accept``) and the stamp's description.
- Built on the public API (``compile``, ``plan``, ``accept``, ``ResumePlan``); ``history``
  also reads the raw lineage (``_history``) and stamps (``_stamp``), exactly as ``plan`` does.
- Exit codes: 0 fine, 1 ``check`` found threads that would not resume cleanly, 2 an
  error the user can fix, reported in one line on stderr (``--debug`` adds the traceback),
  a damaged checkpoint included; nothing else reaches stderr, not even at exit.
- No message echoes a password from ``--db``; text read from the database (thread ids,
  node and class names) is printed with its control characters escaped, never as markup.
- Needs the ``cli`` extra (typer, rich); without it, says so and exits 2.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

try:
    import typer
    from rich.console import Console
    from rich.panel import Panel
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    from rich.table import Table
    from rich.text import Text
except ImportError:  # pragma: no cover - exercised by a subprocess test
    sys.stderr.write("neograph-ext: the command line needs extras: install neograph-ext[cli]\n")
    raise SystemExit(2) from None

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel

from neograph_ext import NeographExtError, PlanKind, ResumePlan, accept, compile, plan
from neograph_ext._cli_db import CliError, one_line, open_database
from neograph_ext._graph import StampedGraph
from neograph_ext._history import Record, lineage, references, resolved
from neograph_ext._stamp import Stamp, StampRef, Unreadable
from neograph_ext._stamp_store import is_store_thread, load, reserved

__all__ = ["app", "main"]

Graph = Pregel[Any, Any, Any, Any]
Saver = BaseCheckpointSaver[Any]

app = typer.Typer(
    name="neograph-ext",
    help="See what resuming LangGraph threads will do after a deploy, before it happens.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals may hold a database password
)

_GRAPH = "module:attribute or path/to/file.py:attribute: a StateGraph builder or a graph made "
GraphArg = Annotated[str, typer.Argument(metavar="GRAPH", help=_GRAPH + "by neograph_ext.compile")]
DbOpt = Annotated[
    str, typer.Option(metavar="URL", help="SQLite path, sqlite:///path or postgresql://...")
]
ThreadOpt = Annotated[str, typer.Option("--thread", metavar="ID", help="The thread id.")]
CheckpointOpt = Annotated[
    str | None, typer.Option(metavar="ID", help="Start from this checkpoint, not the newest.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks and engine logs.")]


@app.command("plan")
def plan_command(
    graph: GraphArg,
    db: DbOpt,
    thread: ThreadOpt,
    checkpoint: CheckpointOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Show what resuming one thread would do: rewind target, changed nodes, diffs."""
    with _boundary(debug):
        target = _load(graph)
        with open_database(db) as saver:
            decision = _plan(_attach(target, saver, graph), thread, checkpoint)
    if as_json:
        typer.echo(_json(dataclasses.asdict(decision)))
    else:
        _console().print(_plan_panel(decision))


@app.command("history")
def history_command(
    db: DbOpt,
    thread: ThreadOpt,
    graph: Annotated[
        str | None, typer.Argument(metavar="[GRAPH]", help="Compare each task with this graph.")
    ] = None,
    checkpoint: CheckpointOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """List a thread's lineage: steps, nodes run, fingerprint status, forks."""
    with _boundary(debug):
        target = _load(graph) if graph else None
        with open_database(db) as saver:
            current = None if target is None else _stamp(_attach(target, saver, graph), graph)
            if is_store_thread(thread):
                raise CliError(reserved(thread))
            with _reading(f"thread {thread!r}"):
                scope = {"thread_id": thread, "checkpoint_ns": ""}
                tuples = list(saver.list({"configurable": scope}))
            if not tuples:
                raise CliError(f"thread {thread!r} has no checkpoints in this database")
            with _reading(f"thread {thread!r}"):
                try:
                    records = lineage(tuples, checkpoint or max(t.checkpoint["id"] for t in tuples))
                except KeyError:
                    raise CliError(f"thread {thread!r} has no checkpoint {checkpoint!r}") from None
                if current is not None:
                    records = resolved(records, load(saver, references(records, current.id)))
    parents = Counter(
        t.parent_config["configurable"].get("checkpoint_id") for t in tuples if t.parent_config
    )
    rows = [_history_row(record, current, parents[record.checkpoint_id]) for record in records]
    if as_json:
        typer.echo(_json(rows))
        return
    status = ["status"] if current else []
    columns = ["step", "checkpoint", "source", "node(s)", *status, "fork"]
    table = Table(
        *columns,
        title=_text(f"thread {thread}"),
        caption=_text(f"{len(rows)} of {len(tuples)} checkpoints"),
    )
    for row in rows:
        tasks: dict[str, str | None] = row["tasks"]
        cells = [_text(row[key]) for key in ("step", "checkpoint_id", "source")]
        cells.append(_text(*tasks) if tasks else Text("-"))
        if current:
            marks = [Text(str(s), style=_STATUS_STYLE.get(str(s), "")) for s in tasks.values()]
            cells.append(Text("\n").join(marks) if marks else Text("-"))
        table.add_row(*cells, Text(row["fork"] or "", style="magenta"))
    _console().print(table)


@app.command("check")
def check_command(
    graph: GraphArg,
    db: DbOpt,
    thread: Annotated[
        list[str] | None,
        typer.Option("--thread", metavar="ID", help="Check only these threads (repeatable)."),
    ] = None,
    strict_unverified: Annotated[
        bool, typer.Option("--strict-unverified", help="Also fail on unstamped threads.")
    ] = False,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Plan every thread (or those named); exit 1 if any would rewind or is blocked."""
    with _boundary(debug):
        target = _load(graph)
        with open_database(db) as saver, _progress() as progress:
            compiled = _attach(target, saver, graph)
            names = list(dict.fromkeys(thread)) if thread else _threads(saver, progress)
            todo = progress.track(names, description="planning")
            plans = [_plan(compiled, name, None) for name in todo]
    unverified = PlanKind.UNVERIFIED if strict_unverified else None
    failing = [p for p in plans if p.blocker or p.kind in (PlanKind.REWIND, unverified)]
    # As in strict mode: a declared type whose values cannot read back fails the check.
    found = compiled.neograph_ext_revival.findings if isinstance(compiled, StampedGraph) else ()
    unreadable = [f.describe() for f in found]
    if as_json:
        ok, failed = not failing and not unreadable, [p.thread_id for p in failing]
        report = {"ok": ok, "failing": failed, "plans": [dataclasses.asdict(p) for p in plans]}
        typer.echo(_json({**report, "types": unreadable}))
    else:
        _print_check(plans, failing, strict_unverified)
        for line in unreadable:
            _console().print(_text(f"failed: {line}"), style="red", soft_wrap=True)
    if failing or unreadable:
        raise typer.Exit(1)


@app.command("accept")
def accept_command(
    graph: GraphArg,
    db: DbOpt,
    thread: ThreadOpt,
    checkpoint: CheckpointOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Record that a thread was handled by hand (say, its data migrated in SQL): WRITES one
    checkpoint, a fork of its head stamped as current, so the next run carries on."""
    with _boundary(debug):
        target = _load(graph)
        with open_database(db, write=True) as saver:
            compiled = _attach(target, saver, graph)
            before = _plan(compiled, thread, checkpoint)
            configurable = {"thread_id": thread}
            if checkpoint:
                configurable["checkpoint_id"] = checkpoint
            with _reading(f"thread {thread!r}"):
                written = accept(compiled, {"configurable": configurable})
    new_id = (written.get("configurable") or {}).get("checkpoint_id")
    _console().print(
        _text(
            f"thread {thread}: accepted as written by this graph (was {before.kind}); "
            f"wrote checkpoint {new_id}, a fork of {before.head_id}"
        )
    )


def main() -> None:
    """Entry point of the ``neograph-ext`` script."""
    app(prog_name="neograph-ext")


def _load(spec: str) -> object:
    """Import ``module:attr`` or ``file.py:attr``. A file inside a package is imported
    under its package path, so class paths (part of every fingerprint) match the app's."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise CliError(f"GRAPH must be module:attribute or path/to/file.py:attribute, not {spec!r}")
    if target.endswith(".py") or "/" in target or os.sep in target:
        path = Path(target).resolve()
        if not path.is_file():
            raise CliError(f"GRAPH file {target!r} does not exist")
        parts, root = [] if path.stem == "__init__" else [path.stem], path.parent
        while (root / "__init__.py").is_file():
            parts, root = [root.name, *parts], root.parent
        name = ".".join(parts)
    else:
        name, root = target, Path.cwd()  # like `python -m`: the working directory first
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        obj: object = importlib.import_module(name)
    except Exception as exc:
        raise CliError(f"cannot import {name!r} for GRAPH {spec!r}: {one_line(exc)}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CliError(f"GRAPH {spec!r}: {name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def _attach(target: object, saver: Saver, spec: str | None) -> Graph:
    """The graph to plan with, reading checkpoints through ``saver``."""
    if isinstance(target, StateGraph):
        return compile(target, checkpointer=saver)
    if isinstance(target, Pregel):
        _stamp(target, spec)  # the stamp lives on the graph's class, which copy() keeps
        return target.copy(update={"checkpointer": saver})
    raise CliError(
        f"GRAPH {spec!r} is of type {type(target).__name__}, not a StateGraph builder "
        "or a graph made by neograph_ext.compile"
    )


def _stamp(graph: Graph, spec: str | None) -> Stamp:
    if not isinstance(graph, StampedGraph):
        raise CliError(
            f"GRAPH {spec!r} was compiled by plain LangGraph and carries no fingerprints: build "
            "it with neograph_ext.compile(builder, ...) or point GRAPH at the builder"
        )
    return graph.neograph_ext_stamp


def _threads(saver: Saver, progress: Progress) -> list[str]:
    """Every thread with a root-namespace checkpoint: one scan of every checkpoint."""
    names: set[str] = set()
    with _reading("the checkpoints in this database"):
        for tup in progress.track(saver.list(None), description="reading checkpoints"):
            configurable = tup.config["configurable"]
            if configurable.get("checkpoint_ns", "") == "" and not is_store_thread(
                configurable["thread_id"]
            ):
                names.add(str(configurable["thread_id"]))
    return sorted(names)


@contextmanager
def _reading(what: str) -> Iterator[None]:
    """A stored checkpoint that LangGraph cannot decode, or that is not the shape it
    writes (metadata that is not a JSON object, nested too deep, not UTF-8), is one
    clear line, whether LangGraph's reader or the engine's walk trips over it."""
    try:
        yield
    except NeographExtError:
        raise
    except (ValueError, TypeError, AttributeError, RecursionError) as exc:
        raise CliError(
            f"cannot read {what}: a stored checkpoint is not what LangGraph writes (damaged, "
            f"or written by other software): {one_line(exc)}; --debug shows where"
        ) from exc


def _plan(graph: Graph, thread: str, checkpoint: str | None) -> ResumePlan:
    configurable = {"thread_id": thread}
    if checkpoint:
        configurable["checkpoint_id"] = checkpoint
    with _reading(f"thread {thread!r}"):
        decision = plan(graph, {"configurable": configurable})
    if decision.kind is PlanKind.FRESH:
        where = f"checkpoint {checkpoint!r}" if checkpoint else "checkpoints in this database"
        raise CliError(f"thread {thread!r} has no {where}")
    return decision


_KIND_STYLE = {PlanKind.REWIND: "red", PlanKind.UNVERIFIED: "yellow"}
_STATUS_STYLE = {"same": "green", "changed": "red", "removed": "red", "unstamped": "yellow"}


def _plan_panel(decision: ResumePlan) -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    style = "red" if decision.blocker else _KIND_STYLE.get(decision.kind, "green")
    grid.add_row("kind", Text(str(decision.kind), style=style))
    grid.add_row("head", _text(decision.head_id or "-"))
    if decision.kind is PlanKind.REWIND:
        target = f"step {decision.step}, checkpoint {decision.checkpoint_id}"
        grid.add_row("rewind to", _text(target if decision.checkpoint_id else "-"))
    for index, change in enumerate(decision.changes):
        grid.add_row("invalidated" if index == 0 else "", _text(*change.describe().split("\n")))
    grid.add_row("re-runs", _text(", ".join(sorted(decision.rerun)) or "-"))
    grid.add_row("kept", _text(", ".join(sorted(decision.kept)) or "-"))
    if decision.step_summary():
        grid.add_row("steps", _text(decision.step_summary()))
    grid.add_row("next", _text(", ".join(sorted(decision.next_nodes)) or "- (run complete)"))
    if decision.blocker:
        grid.add_row("blocked", _text(decision.blocker, style="red"))
    for note in _notes(decision):
        grid.add_row("note", _text(note))
    title = _text(f"thread {decision.thread_id}")
    return Panel(grid, title=title, border_style=style, expand=False)


def _print_check(plans: Sequence[ResumePlan], failing: Sequence[ResumePlan], strict: bool) -> None:
    console = _console()
    counts = Counter("blocked" if p.blocker else str(p.kind) for p in plans)
    summary = f"{len(plans)} thread{'' if len(plans) == 1 else 's'} checked: " + (
        ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "none"
    )
    if not failing:
        hint = counts[PlanKind.UNVERIFIED] and not strict
        tail = " (unverified threads pass; --strict-unverified fails them)" if hint else ""
        console.print(Text(f"ok: {summary}{tail}", style="green"), soft_wrap=True)
        return
    table = Table(title="threads that would not resume cleanly")
    for name in ("thread", "plan", "rewind to step", "invalidated", "why"):
        table.add_column(name)
    for p in failing:
        why = [*([p.blocker] if p.blocker else []), *(c.describe() for c in p.changes)]
        lines = [line for reason in why or _notes(p) for line in reason.split("\n")]
        kind = Text("blocked" if p.blocker else str(p.kind), style="red")
        step = Text("-" if p.step is None else str(p.step))
        nodes = _text(", ".join(sorted(p.invalidated_nodes)) or "-")
        table.add_row(_text(p.thread_id), kind, step, nodes, _text(*lines))
    console.print(table)
    failed = f"failed: {len(failing)} would not resume cleanly; {summary}"
    console.print(Text(failed, style="red"), soft_wrap=True)


def _notes(decision: ResumePlan, most: int = 3) -> list[str]:
    """The engine notes every unstamped checkpoint: a long thread would flood the screen."""
    more = len(decision.notes) - most
    return [*decision.notes[:most], *([f"... and {more} more"] if more > 0 else [])]


def _history_row(record: Record, current: Stamp | None, children: int) -> dict[str, Any]:
    marks = ["fork"] if record.source == "fork" else []
    marks += [f"{children} branches"] if children > 1 else []
    return {
        "checkpoint_id": record.checkpoint_id,
        "parent_id": record.parent_id,
        "step": record.step,
        "source": record.source,
        "tasks": {node: _status(record, node, current) for node in sorted(record.ran)},
        "fork": ", ".join(marks) or None,
    }


def _status(record: Record, node: str, current: Stamp | None) -> str | None:
    """``same``, ``changed``, ``removed``, ``unstamped``, ``unreadable`` or ``unknown`` (its
    description is not stored); None without GRAPH."""
    stamp = record.stamp
    if current is None:
        return None
    if stamp is None:
        return "unstamped"
    if isinstance(stamp, Unreadable):
        return "unreadable"
    if isinstance(stamp, StampRef):
        return "same" if stamp.id == current.id else "unknown"
    old, new = stamp.nodes.get(node), current.nodes.get(node)
    if new is None:
        return "removed"
    channels_moved = any(stamp.channels.get(c) != current.channels.get(c) for c in record.wrote)
    return "changed" if old is None or old.fp != new.fp or channels_moved else "same"


def _json(value: object) -> str:
    """JSON of rows or ``dataclasses.asdict`` plans: sets sorted, str enums by value.

    ASCII only (``json``'s default), so every control character is a ``\\u`` escape.
    """
    return json.dumps(
        value, indent=2, default=lambda o: sorted(o) if isinstance(o, frozenset) else o
    )


def _safe(value: object) -> str:
    """``str(value)`` with each control character (C0, DEL, C1) shown as ``\\xNN``.

    Thread ids, node and class names, notes: text read from the database must not move
    the cursor, retitle the window or clear the screen of whoever runs the CLI.
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", str(value))


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _text(*lines: object, style: str = "") -> Text:
    """Stored text, one item a line, escaped by ``_safe``; a ``Text``, so that rich reads
    no markup (``[red]``) or emoji codes in it."""
    return Text("\n".join(_safe(line) for line in lines), style=style)


def _console(*, stderr: bool = False) -> Console:
    """Rich wraps at 80 columns off a terminal; CI logs and pipes read better unwrapped."""
    wide = (sys.stderr if stderr else sys.stdout).isatty() or "COLUMNS" in os.environ
    return Console(stderr=stderr, width=None if wide else 200, highlight=False)


def _progress() -> Progress:
    """On stderr, and only on a terminal: stdout stays clean for pipes and CI logs."""
    console = _console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    return Progress(*columns, console=console, transient=True, disable=not console.is_terminal)


@contextmanager
def _boundary(debug: bool) -> Iterator[None]:
    """Turn every error into one line on stderr and exit 2; ``--debug`` shows tracebacks."""
    logger, handler = logging.getLogger("neograph_ext"), logging.StreamHandler(sys.stderr)
    level = logger.level
    if debug:
        logger.addHandler(handler)
    # Without --debug, plan notes are in the output already: no log lines on top.
    logger.setLevel(logging.INFO if debug else logging.ERROR)
    try:
        yield
    except typer.Exit:
        raise
    except Exception as exc:  # the outermost boundary: any error is one line
        if debug:
            _console(stderr=True).print_exception(show_locals=False)
        known = isinstance(exc, NeographExtError)
        message = (str(exc).strip().splitlines() or [""])[0] if known else one_line(exc)
        hint = "" if debug or known else " (--debug shows the traceback)"
        typer.echo(_safe(f"error: {message}{hint}"), err=True)
        raise typer.Exit(2) from None
    finally:
        logger.setLevel(level)
        logger.removeHandler(handler)


if __name__ == "__main__":
    main()
