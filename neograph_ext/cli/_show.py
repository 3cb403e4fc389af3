"""What the command line prints: panels, tables, JSON, and text from the database escaped.

Rules:
- stdout holds the result alone; progress bars go to stderr, and only on a terminal.
- Text read from the database (thread ids, node and class names, notes) is printed
  with its control characters escaped (``safe``) and never read as rich markup
  (``text``); JSON is ASCII, so every control character is a ``\\u`` escape.
- Off a terminal (CI logs, pipes) output is not wrapped at 80 columns.
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from neograph_ext import PlanKind, ResumePlan
from neograph_ext.types import ChangeReason, History, HistoryEntry, Inventory

__all__ = [
    "JsonList",
    "JsonOpt",
    "console",
    "history_rows",
    "history_table",
    "inventory_table",
    "notes",
    "plan_panel",
    "print_check",
    "progress",
    "safe",
    "text",
    "to_json",
]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
"""Every command's ``--json``, which ``to_json`` prints."""

_KIND_STYLE = {
    PlanKind.REWIND: "red",
    PlanKind.UNVERIFIED: "yellow",
    PlanKind.SUPERSEDED: "yellow",
}
_STATUS_STYLE = {"same": "green", "changed": "red", "removed": "red", "unstamped": "yellow"}


def plan_panel(decision: ResumePlan) -> Panel:
    """One thread's plan: kind, head, rewind target, changes, re-runs, kept, next, notes."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    style = "red" if decision.blocker else _KIND_STYLE.get(decision.kind, "green")
    grid.add_row("kind", Text(str(decision.kind), style=style))
    grid.add_row("head", text(decision.head_id or "-"))
    if decision.owner:
        grid.add_row("owned by", text(f"newer code, stamp {decision.owner[:16]}"))
    if decision.taken_from:
        grid.add_row("taken over", text(f"from newer code, stamp {decision.taken_from[:16]}"))
    if decision.kind is PlanKind.REWIND and decision.inside:
        # The parent is not forked: only the subgraphs' own checkpoints are (``inside``).
        target = f"step {decision.step}, checkpoint {decision.checkpoint_id}, not forked"
        grid.add_row("resume from", text(target))
    elif decision.kind is PlanKind.REWIND:
        target = f"step {decision.step}, checkpoint {decision.checkpoint_id}"
        grid.add_row("rewind to", text(target if decision.checkpoint_id else "-"))
    for index, change in enumerate(decision.changes):
        grid.add_row("invalidated" if index == 0 else "", text(*change.describe().split("\n")))
    for inner in decision.inside:
        grid.add_row("subgraph", text(inner.describe()))
    grid.add_row("re-runs", text(", ".join(decision.rerun) or "-"))
    grid.add_row("kept", text(_kept(decision)))
    if decision.step_summary():
        grid.add_row("steps", text(decision.step_summary()))
    if decision.estimated_cost is not None:
        grid.add_row("estimated cost", text(str(decision.estimated_cost)))
    waits = ", ".join(decision.in_order(decision.next_nodes))
    grid.add_row("next", text(waits or "- (run complete)"))
    if decision.blocker:
        grid.add_row("blocked", text(decision.blocker, style="red"))
    for note in notes(decision):
        grid.add_row("note", text(note))
    title = text(f"thread {decision.thread_id}")
    return Panel(grid, title=title, border_style=style, expand=False)


def _kept(decision: ResumePlan) -> str:
    """The nodes kept whole, then the kept steps of nodes that also re-run (an agent's
    model call before a changed tool's step): never "-" beside a kept step."""
    partly: dict[str, list[int]] = {}
    for step in decision.steps:
        if step.kept and step.node not in decision.kept:
            partly.setdefault(step.node, []).append(step.step)
    shown = [*decision.kept]
    shown += [
        f"{node} (step{'s' * (len(at) > 1)} {', '.join(map(str, at))})"
        for node, at in partly.items()
    ]
    return ", ".join(shown) or "-"


def print_check(
    counts: Mapping[str, int],
    shown: Sequence[ResumePlan],
    failing: int,
    strict: bool,
    over: Sequence[str] = (),
) -> None:
    """The summary line, after a table of the failing threads (the first of them
    ``shown``) if there are any; ``over``: the thresholds passed (``check --cost``)."""
    out = console()
    checked = sum(counts.values())
    summary = f"{checked} thread{'' if checked == 1 else 's'} checked: " + (
        ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "none"
    )
    if over and not failing:
        out.print(Text(f"failed: {'; '.join(over)}; {summary}", style="red"), soft_wrap=True)
        return
    if not failing:
        hint = counts.get(PlanKind.UNVERIFIED) and not strict
        tail = " (unverified threads pass; --strict-unverified fails them)" if hint else ""
        out.print(Text(f"ok: {summary}{tail}", style="green"), soft_wrap=True)
        return
    more = failing - len(shown)
    caption = f"and {more} more (--json lists them all)" if more > 0 else None
    table = Table(title="threads that would not resume cleanly", caption=caption)
    for name in ("thread", "plan", "rewind to step", "invalidated", "why"):
        table.add_column(name)
    for p in shown:
        why = [
            *([p.blocker] if p.blocker else []),
            *([_owned(p.owner)] if p.owner else []),
            *(c.describe() for c in p.changes),
        ]
        lines = [line for reason in why or notes(p) for line in reason.split("\n")]
        kind = Text("blocked" if p.blocker else str(p.kind), style="red")
        step = Text("-" if p.step is None else str(p.step))
        nodes = text(", ".join(p.in_order(p.invalidated_nodes)) or "-")
        table.add_row(text(p.thread_id), kind, step, nodes, text(*lines))
    out.print(table)
    failed = "; ".join(["failed: " + f"{failing} would not resume cleanly", *over, summary])
    out.print(Text(failed, style="red"), soft_wrap=True)


def _owned(owner: str) -> str:
    return (
        f"owned by newer code, stamp {owner[:16]}: run raises ThreadSupersededError; "
        "plan --take-over shows what a rollback re-runs"
    )


def inventory_table(found: Inventory) -> Table:
    """Threads per stamp that last wrote them: what old code still holds."""
    table = Table(title="threads by the code that last wrote them")
    columns = ("stamp", "threads", "waiting", "crashed", "would rewind", "refused", "retire")
    for name in columns:
        table.add_column(name, justify="left" if name == "stamp" else "right")
    for row in found.stamps:
        name = (row.stamp_id or "(unstamped)")[:12] + (" (current)" if row.current else "")
        # Both raise from run: a blocked plan, and a thread this newer code owns.
        refused = row.blocked + row.superseded
        counts = (row.threads, row.waiting, row.crashed, row.rewind, refused)
        retire = "-" if row.current else ("yes" if row.retirable else "not yet")
        table.add_row(text(name), *(Text(str(n)) for n in counts), Text(retire))
    return table


def notes(decision: ResumePlan, most: int = 3) -> list[str]:
    """The engine notes every unstamped checkpoint: a long thread would flood the screen."""
    more = len(decision.notes) - most
    return [*decision.notes[:most], *([f"... and {more} more"] if more > 0 else [])]


def history_rows(found: History, compared: bool) -> list[dict[str, Any]]:
    """One row per checkpoint of the lineage; ``compared``: each task gets a status."""
    return [_history_row(entry, compared) for entry in found]


def history_table(found: History, rows: Sequence[dict[str, Any]], compared: bool) -> Table:
    status = ["status"] if compared else []
    columns = ["step", "checkpoint", "source", "node(s)", *status, "fork"]
    table = Table(
        *columns,
        title=text(f"thread {found.thread_id}"),
        caption=text(f"{len(rows)} of {found.checkpoints} checkpoints"),
    )
    for row in rows:
        tasks: dict[str, str | None] = row["tasks"]
        cells = [text(row[key]) for key in ("step", "checkpoint_id", "source")]
        cells.append(text(*tasks) if tasks else Text("-"))
        if compared:
            marks = [Text(str(s), style=_STATUS_STYLE.get(str(s), "")) for s in tasks.values()]
            cells.append(Text("\n").join(marks) if marks else Text("-"))
        table.add_row(*cells, Text(row["fork"] or "", style="magenta"))
    return table


def _history_row(entry: HistoryEntry, compared: bool) -> dict[str, Any]:
    marks = ["fork"] if entry.source == "fork" else []
    marks += [f"{entry.children} branches"] if entry.children > 1 else []
    return {
        "checkpoint_id": entry.checkpoint_id,
        "parent_id": entry.parent_id,
        "step": entry.step,
        "source": entry.source,
        "tasks": {node: _status(entry, node) if compared else None for node in sorted(entry.ran)},
        "fork": ", ".join(marks) or None,
    }


def _status(entry: HistoryEntry, node: str) -> str:
    """``same``, ``changed``, ``removed``, ``unstamped``, ``unreadable`` or ``unknown``
    (the stamp's description is not stored): the entry's changes, named for a table."""
    if entry.changes is None:
        return str(entry.stamp)  # unstamped or unreadable: nothing to compare
    reasons = {change.reason for change in entry.changes if change.node == node}
    if not reasons:
        return "same"
    if ChangeReason.REMOVED in reasons:
        return "removed"
    return "unknown" if ChangeReason.UNKNOWN in reasons else "changed"


class JsonList:
    """A JSON document ``{"<key>": [items], **rest}`` printed an item at a time as the
    items come (``check`` and ``upgrade`` stream theirs, so nothing holds them all), laid
    out exactly as ``to_json`` lays out the whole document."""

    def __init__(self, key: str) -> None:
        self._key = key
        self._count = 0

    def open(self) -> None:
        """Print the document's start, up to the list's opening bracket."""
        typer.echo("{\n  " + json.dumps(self._key) + ": [", nl=False)

    def add(self, item: object) -> None:
        """Print one item of the list."""
        self._count += 1
        separator = ",\n" if self._count > 1 else "\n"
        typer.echo(separator + textwrap.indent(to_json(item), "    "), nl=False)

    def close(self, rest: Mapping[str, object]) -> None:
        """Print the list's end, then the document's other keys."""
        end = "\n  ]" if self._count else "]"
        typer.echo(end + ("," + to_json(dict(rest))[1:] if rest else "\n}"))


def to_json(value: object) -> str:
    """JSON of rows or ``dataclasses.asdict`` plans: sets sorted, but a plan's node names in
    the order they run; str enums by value.

    ASCII only (``json``'s default), so every control character is a ``\\u`` escape.
    """
    return json.dumps(value, indent=2, default=_listed)


def _listed(value: object) -> object:
    """A plan's node names in the order they run (their own order: a subclass of
    ``frozenset``), any other set sorted."""
    if not isinstance(value, frozenset):
        return value
    return sorted(value) if type(value) is frozenset else list(value)


def safe(value: object) -> str:
    """``str(value)`` with each control character (C0, DEL, C1) shown as ``\\xNN``.

    Thread ids, node and class names, notes: text read from the database must not move
    the cursor, retitle the window or clear the screen of whoever runs the CLI.
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", str(value))


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def text(*lines: object, style: str = "") -> Text:
    """Stored text, one item a line, escaped by ``safe``; a ``Text``, so that rich reads
    no markup (``[red]``) or emoji codes in it."""
    return Text("\n".join(safe(line) for line in lines), style=style)


def console(*, stderr: bool = False) -> Console:
    """Rich wraps at 80 columns off a terminal; CI logs and pipes read better unwrapped."""
    wide = (sys.stderr if stderr else sys.stdout).isatty() or "COLUMNS" in os.environ
    return Console(stderr=stderr, width=None if wide else 200, highlight=False)


def progress() -> Progress:
    """On stderr, and only on a terminal: stdout stays clean for pipes and CI logs."""
    err = console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    return Progress(*columns, console=err, transient=True, disable=not err.is_terminal)
