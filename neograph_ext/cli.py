"""The ``neograph-ext`` command line: what a resume would do, before it happens.

Rules:
- Read-only: databases are opened read-only where the driver allows it, no saver
  ``setup()`` runs, and planning writes nothing. The one exception is ``accept``, asked
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
import gc
import importlib
import json
import logging
import os
import re
import sqlite3
import sys
import traceback
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
from neograph_ext._graph import StampedGraph
from neograph_ext._history import Record, lineage, references, resolved
from neograph_ext._stamp import Stamp, StampRef, Unreadable
from neograph_ext._stamp_store import is_store_thread, load

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


class CliError(NeographExtError):
    """A problem the user can fix; its message is the one line printed."""


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
        with _open(db) as saver:
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
        with _open(db) as saver:
            current = None if target is None else _stamp(_attach(target, saver, graph), graph)
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
        with _open(db) as saver, _progress() as progress:
            compiled = _attach(target, saver, graph)
            names = list(dict.fromkeys(thread)) if thread else _threads(saver, progress)
            todo = progress.track(names, description="planning")
            plans = [_plan(compiled, name, None) for name in todo]
    unverified = PlanKind.UNVERIFIED if strict_unverified else None
    failing = [p for p in plans if p.blocker or p.kind in (PlanKind.REWIND, unverified)]
    if as_json:
        ok, failed = not failing, [p.thread_id for p in failing]
        typer.echo(
            _json({"ok": ok, "failing": failed, "plans": [dataclasses.asdict(p) for p in plans]})
        )
    else:
        _print_check(plans, failing, strict_unverified)
    if failing:
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
        with _open(db, write=True) as saver:
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
        raise CliError(f"cannot import {name!r} for GRAPH {spec!r}: {_line(exc)}") from exc
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


@contextmanager
def _open(db: str, *, write: bool = False) -> Iterator[Saver]:
    """A saver over ``db``, read-only, its schema checked but never created or migrated.

    ``write`` (for ``accept`` only) opens it for writing; the schema is still never
    created or migrated.

    ``db`` may hold a password: no message echoes it (see ``_postgres``), and a string that
    is neither a URL this reads nor an existing file is refused naming its scheme only.
    """
    existing = Path(db).is_file()
    if db.startswith(("postgresql://", "postgres://")):
        opened = _postgres(db, write)
    elif db.startswith("sqlite:///"):
        opened = _sqlite(Path(db.removeprefix("sqlite:///")), write)
    elif (scheme := _SCHEME.match(db)) and not existing:
        raise CliError(
            "--db must be an SQLite path, sqlite:///path, postgresql://... or a libpq "
            f"key/value string (host=... dbname=...); it starts with {scheme.group()!r} "
            "but is none of these (a missing or extra slash?)"
        )
    elif "=" in db and not existing:
        opened = _postgres(db, write)  # a libpq key/value string: host=... password=...
    else:
        opened = _sqlite(Path(db), write)
    with opened as saver:
        try:
            yield saver
        except BaseException as exc:
            _close_listings(exc)
            raise


# Two letters at least, so that a Windows drive (C:\...) is read as a path.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def _close_listings(exc: BaseException) -> None:
    """Finalise the ``saver.list`` generators an error left suspended in its frames.

    Each holds a cursor (and the saver's lock); left to the garbage collector, it is
    closed at interpreter exit, after the connection, and Python prints "Exception
    ignored in: <generator ...>" under the one-line error. Clearing the finished frames
    drops the last references, so the generators close now, while the connection is open.
    """
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:  # and the errors it was raised from
        seen.add(id(error))
        traceback.clear_frames(error.__traceback__)
        error = error.__cause__ or error.__context__
    gc.collect()


@contextmanager
def _sqlite(path: Path, write: bool = False) -> Iterator[Saver]:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        raise CliError("SQLite databases need an extra: install neograph-ext[sqlite]") from None
    if not path.is_file():
        raise CliError(f"no SQLite database at {str(path)!r}")
    wal = Path(f"{path}-wal")
    uri = path.resolve().as_uri() if write else _sqlite_uri(path, wal)
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    try:
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            columns = {row[1] for row in conn.execute("PRAGMA table_info(writes)")}
        except sqlite3.OperationalError as exc:
            if not wal.exists():
                raise CliError(f"cannot read {str(path)!r}: {exc}") from exc
            raise CliError(
                f"cannot read {str(path)!r} read-only ({exc}): it is in WAL mode and "
                f"{wal.name!r} exists, so an app has it open or stopped without a "
                f"checkpoint, and reading it means sharing {path.name + '-shm'!r}, which "
                "needs write access to its folder; run where the folder is writable, or "
                "stop the app so that its last connection removes the -wal file"
            ) from exc
        except sqlite3.DatabaseError as exc:
            raise CliError(f"{str(path)!r} is not an SQLite database: {exc}") from exc
        if not {"checkpoints", "writes"} <= tables:
            raise CliError(f"{str(path)!r} is not a LangGraph checkpoint database")
        saver = SqliteSaver(conn)
        saver.is_setup = True  # setup() writes (journal mode, DDL): the schema is checked above
        saver._has_task_path = "task_path" in columns  # what setup() would have found out
        yield saver
    finally:
        conn.close()


def _sqlite_uri(path: Path, wal: Path) -> str:
    """``mode=ro``, plus ``immutable=1`` for a WAL database that no connection has open.

    ``mode=ro`` alone still creates the -wal and -shm files of a WAL database and writes
    the -shm: side files in the app's folder, and "unable to open database file" where
    the folder is not writable. ``immutable=1`` reads the file alone, creating nothing,
    but ignores other connections: it is safe only when there are none. A WAL database
    keeps its -wal file while any connection is open (SqliteSaver keeps one for the
    app's life), so a missing -wal file means no writer, and no committed data outside
    the main file. An app that opens the database while the CLI reads it may go unseen,
    or make the read fail (one line, exit 2); run again. With a -wal file present, the
    CLI reads through it, as any reader does, and sees everything committed.
    """
    uri = f"{path.resolve().as_uri()}?mode=ro"
    with path.open("rb") as file:
        header = file.read(_SQLITE_HEADER)
    in_wal_mode = header.startswith(b"SQLite format 3\0") and header[18:19] == b"\x02"
    return f"{uri}&immutable=1" if in_wal_mode and not wal.exists() else uri


# The file format's header: byte 18, the write version, is 2 in WAL mode, 1 otherwise.
_SQLITE_HEADER = 20


@contextmanager
def _postgres(dsn: str, write: bool = False) -> Iterator[Saver]:
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.conninfo import conninfo_to_dict
        from psycopg.rows import dict_row
    except ImportError:
        raise CliError("PostgreSQL needs an extra: install neograph-ext[postgres]") from None
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        # From None: libpq's message quotes pieces of the string, the password among them.
        raise CliError(
            f"--db is not a PostgreSQL URL or libpq key/value string: {_unquote(str(exc))}"
        ) from None
    try:
        read_only = "" if write else " -c default_transaction_read_only=on"
        options = f"{params.get('options') or ''}{read_only}".strip()
        conn = psycopg.connect(
            dsn,
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            options=options,  # added to the DSN's own options, which a keyword would replace
            connect_timeout=params.get("connect_timeout", 10),
        )
    except psycopg.Error as exc:
        reason = _line(exc)
        if password := params.get("password"):
            reason = reason.replace(str(password), "***")
        raise CliError(f"cannot connect to PostgreSQL at {_masked(params)}: {reason}") from exc
    with conn:
        try:
            row = conn.execute("SELECT max(v) AS v FROM checkpoint_migrations").fetchone()
        except psycopg.errors.UndefinedTable:
            raise CliError("the database is not a LangGraph checkpoint database") from None
        version, expected = (row or {}).get("v"), len(PostgresSaver.MIGRATIONS) - 1
        if version is None or version < expected:
            raise CliError(
                f"the checkpoint schema is at migration {version}, this version of "
                f"langgraph-checkpoint-postgres reads {expected}: let the app's "
                "PostgresSaver.setup() migrate it first"
            )
        yield PostgresSaver(conn)


def _masked(params: dict[str, Any]) -> str:
    """A parsed DSN as a libpq key/value string, its password (if any) as ``***``."""
    from psycopg.conninfo import make_conninfo

    return make_conninfo(**{k: "***" if k == "password" else v for k, v in params.items()})


def _unquote(message: str) -> str:
    """libpq's parse error, each quoted piece that is not an option name as ``"***"``."""
    from psycopg.pq import Conninfo

    names = {option.keyword.decode() for option in Conninfo.get_defaults()}
    return re.sub(r'"([^"]*)"', lambda m: m.group() if m[1] in names else '"***"', message)


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
            f"or written by other software): {_line(exc)}; --debug shows where"
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
        message = (str(exc).strip().splitlines() or [""])[0] if known else _line(exc)
        hint = "" if debug or known else " (--debug shows the traceback)"
        typer.echo(_safe(f"error: {message}{hint}"), err=True)
        raise typer.Exit(2) from None
    finally:
        logger.setLevel(level)
        logger.removeHandler(handler)


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


if __name__ == "__main__":
    main()
