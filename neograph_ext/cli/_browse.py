"""The commands that browse a database: ``threads``, ``show`` and ``diff``.

Rules:
- Read-only, like every command but ``accept``. The reserved threads holding stamp
  descriptions (``neograph-ext-stamp:*``, ``neograph_ext.is_reserved_thread``) are no
  user's threads: ``threads`` leaves them out, ``show`` and ``diff`` refuse them.
- Values are LangGraph's own reconstruction (``graph.get_state``: DeltaChannel values
  rebuilt from their ancestors, as the app reads them), which is why ``show`` and
  ``diff`` need GRAPH; ``threads`` prints no stored value and needs none.
- Values are printed as ``repr`` does (strings quoted and escaped), wrapped by rich;
  ``--json`` gives them as pydantic makes any value JSON (models as objects, other
  objects as their ``repr``).
- ``show`` marks each value the current code would not take as declared
  (``neograph_ext.stale_values``: read back as plain data, or not valid under the type
  declared now), with the reason: under the value in text, in ``stale`` in JSON.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot
from pydantic_core import to_jsonable_python
from rich.pretty import pretty_repr
from rich.table import Table

from neograph_ext import is_reserved_thread, stale_values
from neograph_ext.cli._app import CheckpointOpt, ThreadOpt, app
from neograph_ext.cli._boundary import CliError, DebugOpt, boundary, reading
from neograph_ext.cli._database import DbOpt, Saver, open_database
from neograph_ext.cli._graphs import Graph, GraphArg, attach, load
from neograph_ext.cli._help import Command
from neograph_ext.cli._serde import reader
from neograph_ext.cli._show import JsonOpt, console, safe, text, to_json

__all__ = ["Change", "ThreadRow", "changes", "diff_command", "show_command", "threads_command"]


@dataclass(frozen=True)
class ThreadRow:
    """One user thread of a database, as ``threads`` lists it."""

    thread_id: str
    """The thread."""
    checkpoints: int
    """Its root-namespace checkpoints, on every branch."""
    head_id: str
    """Its newest checkpoint: what ``run`` resumes from."""
    step: int | None
    """The head's step."""
    source: str | None
    """The head's source (``input``, ``loop``, ``update``, ``fork``)."""
    updated_at: str
    """When the head was written (LangGraph's ``ts``)."""


@app.command("threads", cls=Command)
def threads_command(
    db: DbOpt,
    graph: Annotated[
        str | None,
        typer.Argument(metavar="[GRAPH]", help="Revive the classes this graph declares."),
    ] = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """List the database's threads: checkpoints, head, step, last write. Reserved
    neograph-ext-stamp:* threads are left out."""
    with boundary(debug):
        target = load(graph) if graph else None
        where = reading("the checkpoints in this database")
        with open_database(db, serde=reader(target)) as saver, where:
            rows = list(_thread_rows(saver))
    if as_json:
        typer.echo(to_json([row.__dict__ for row in rows]))
        return
    table = Table("thread", "checkpoints", "step", "head", "source", "updated")
    for row in rows:
        cells = (row.checkpoints, row.step, row.head_id, row.source, row.updated_at)
        table.add_row(text(row.thread_id), *(text("-" if c is None else c) for c in cells))
    table.caption = f"{len(rows)} thread{'' if len(rows) == 1 else 's'}"
    console().print(table)


def _thread_rows(saver: Saver) -> Iterator[ThreadRow]:
    """One scan of every checkpoint (LangGraph's savers list newest first): the first
    checkpoint seen of a thread is its head."""
    heads: dict[str, ThreadRow] = {}
    for found in saver.list(None):
        configurable = found.config.get("configurable") or {}
        thread, ns = str(configurable.get("thread_id")), configurable.get("checkpoint_ns", "")
        if ns or is_reserved_thread(thread):
            continue
        row = heads.get(thread)
        if row is None:
            metadata: Mapping[str, Any] = found.metadata or {}
            step = metadata.get("step")
            heads[thread] = ThreadRow(
                thread,
                1,
                str(configurable.get("checkpoint_id")),
                step if isinstance(step, int) else None,
                str(metadata["source"]) if "source" in metadata else None,
                str(found.checkpoint.get("ts", "")),
            )
        else:
            heads[thread] = ThreadRow(**{**row.__dict__, "checkpoints": row.checkpoints + 1})
    yield from (heads[name] for name in sorted(heads))


@app.command("show", cls=Command)
def show_command(
    graph: GraphArg,
    db: DbOpt,
    thread: ThreadOpt,
    checkpoint: CheckpointOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Show a checkpoint's values (the newest, or --checkpoint), as the graph reads them,
    and what it waits on: next nodes, the questions its interrupts ask."""
    with boundary(debug):
        target = load(graph)
        with open_database(db, serde=reader(target)) as saver:
            compiled = attach(target, saver, graph)
            snapshot = _snapshot(compiled, thread, checkpoint)
    values = snapshot.values if isinstance(snapshot.values, Mapping) else {}
    stale = stale_values(compiled, values)
    described = {**_described(snapshot), "stale": stale}
    if as_json:
        typer.echo(to_json(described))
        return
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for key in ("checkpoint_id", "parent_id", "step", "source", "created_at"):
        table.add_row(key.replace("_id", "").replace("_", " "), text(described[key] or "-"))
    table.add_row("next", text(", ".join(snapshot.next) or "- (run complete)"))
    for index, asked in enumerate(described["interrupts"]):
        table.add_row("" if index else "asks", text(_readable(asked)))
    table.add_row("values", "" if snapshot.values else "-")
    for name, value in snapshot.values.items():
        table.add_row(text(f"  {name}"), text(_readable(value)))
        if name in stale:
            table.add_row("", text(f"stale: {stale[name]}", style="yellow"))
    console().print(table)


@app.command("diff", cls=Command)
def diff_command(
    graph: GraphArg,
    db: DbOpt,
    thread: ThreadOpt,
    old: Annotated[
        str | None,
        typer.Option("--from", metavar="ID", help="The older checkpoint (default: --to's parent)."),
    ] = None,
    new: Annotated[
        str | None,
        typer.Option("--to", metavar="ID", help="The newer checkpoint (default: the newest)."),
    ] = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Show what differs between two checkpoints' values, key by key and field by field."""
    with boundary(debug):
        target = load(graph)
        with open_database(db, serde=reader(target)) as saver:
            compiled = attach(target, saver, graph)
            after = _snapshot(compiled, thread, new)
            parent = (after.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            if old is None and parent is None:
                raise CliError(f"checkpoint {_id(after)} is the thread's first: pass --from")
            before = _snapshot(compiled, thread, old or parent)
    found = changes(_plain(before.values), _plain(after.values))
    if as_json:
        report = {"thread_id": thread, "from": _id(before), "to": _id(after)}
        typer.echo(to_json({**report, "changes": [c.__dict__ for c in found]}))
        return
    table = Table("key", "change", "from", "to", title=text(f"{_id(before)} -> {_id(after)}"))
    for change in found:
        cells = [
            "-" if (change.change, side) in (("added", 0), ("removed", 1)) else _readable(v)
            for side, v in enumerate((change.old, change.new))
        ]
        table.add_row(text(change.path), text(change.change), text(cells[0]), text(cells[1]))
    table.caption = f"{len(found)} change{'' if len(found) == 1 else 's'}"
    console().print(table)


@dataclass(frozen=True)
class Change:
    """One difference between two checkpoints' values."""

    path: str
    """The key, then the field or index within it: ``summary.word_count``, ``log[2]``."""
    change: str
    """``added``, ``removed`` or ``changed``."""
    old: Any
    """The older value (JSON-able); None when added."""
    new: Any
    """The newer value (JSON-able); None when removed."""


def changes(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[Change]:
    """Key by key, and field by field inside objects and lists of the same length."""
    found: list[Change] = []
    for key in [*old, *(k for k in new if k not in old)]:
        path = f"{prefix}.{key}" if prefix else str(key)
        if key not in new:
            found.append(Change(path, "removed", old[key], None))
        elif key not in old:
            found.append(Change(path, "added", None, new[key]))
        else:
            found += _changed(path, old[key], new[key])
    return found


def _changed(path: str, old: Any, new: Any) -> list[Change]:
    if isinstance(old, dict) and isinstance(new, dict):
        return changes(old, new, path)
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        pairs = enumerate(zip(old, new, strict=True))
        return [c for i, (a, b) in pairs for c in _changed(f"{path}[{i}]", a, b)]
    return [] if old == new else [Change(path, "changed", old, new)]


def _snapshot(graph: Graph, thread: str, checkpoint: str | None) -> StateSnapshot:
    if is_reserved_thread(thread):
        raise CliError(f"thread id {thread!r} is reserved for neograph-ext's stamp descriptions")
    configurable = {"thread_id": thread, **({"checkpoint_id": checkpoint} if checkpoint else {})}
    config: RunnableConfig = {"configurable": configurable}
    with reading(f"thread {thread!r}"):
        snapshot = graph.get_state(config)
    if snapshot.metadata is None:  # LangGraph's snapshot of no checkpoint
        where = f"checkpoint {checkpoint!r}" if checkpoint else "checkpoints in this database"
        raise CliError(f"thread {thread!r} has no {where}")
    return snapshot


def _id(snapshot: StateSnapshot) -> str:
    return str(snapshot.config.get("configurable", {}).get("checkpoint_id"))


def _described(snapshot: StateSnapshot) -> dict[str, Any]:
    metadata: Mapping[str, Any] = snapshot.metadata or {}
    parent = (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    return {
        "checkpoint_id": _id(snapshot),
        "parent_id": parent,
        "step": metadata.get("step"),
        "source": metadata.get("source"),
        "created_at": snapshot.created_at,
        "next": list(snapshot.next),
        "interrupts": _plain([asked.value for asked in snapshot.interrupts]),
        "values": _plain(snapshot.values),
    }


def _plain(values: Any) -> Any:
    """Any value as JSON-able data: models and dataclasses as objects, the rest by repr."""
    return to_jsonable_python(values, fallback=repr)


def _readable(value: Any) -> str:
    """A value as ``repr`` shows it, wrapped; control characters escaped all the same."""
    return safe(pretty_repr(value, max_width=88))
