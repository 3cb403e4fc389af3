"""The ``prune`` command: what rewinds left behind, and (``--apply``) removing it.

A dry run unless ``--apply``; the database is opened for writing only then, and, by the
rule every writing command shares (``_confirm``), the dry run's summary is asked about
first.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Annotated

import typer
from rich.table import Table

from neograph_ext import prune
from neograph_ext.cli._boundary import DebugOpt, boundary, reading
from neograph_ext.cli._confirm import YesOpt, confirm
from neograph_ext.cli._database import DbOpt, open_database
from neograph_ext.cli._graphs import attach, load
from neograph_ext.cli._serde import reader
from neograph_ext.cli._show import JsonOpt, console, text, to_json
from neograph_ext.types import PruneReport

__all__ = ["prune_command"]


def prune_command(
    graph: Annotated[
        str,
        typer.Argument(
            metavar="GRAPH",
            help="module:attribute or path/to/file.py:attribute: the graph whose threads "
            "these are (its stamp's description always stays)",
        ),
    ],
    db: DbOpt,
    apply: Annotated[bool, typer.Option("--apply", help="Delete (default: a dry run).")] = False,
    all_branches: Annotated[
        bool,
        typer.Option("--all-branches", help="Also every branch off each head's lineage."),
    ] = False,
    keep_last: Annotated[
        int | None,
        typer.Option(
            "--keep-last",
            metavar="N",
            min=1,
            help="Also each head's lineage older than N checkpoints (what planning or a "
            "DeltaChannel still reads stays).",
        ),
    ] = None,
    vacuum: Annotated[
        bool, typer.Option("--vacuum", help="With --apply on SQLite: VACUUM the file after.")
    ] = False,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Show what forks left behind (abandoned branches, unused stamp descriptions) and the
    bytes; with --apply, DELETE it, one transaction per thread. Busy threads are skipped."""
    with boundary(debug):
        target = load(graph)
        with open_database(db, write=apply, serde=reader(target)) as saver:
            compiled = attach(target, saver, graph)
            with reading("the checkpoints in this database"):
                pruned = partial(prune, compiled, all_branches=all_branches, keep_last=keep_last)
                if apply and not yes:  # what --apply would delete, said before asking
                    confirm(
                        "prune --apply deletes from", lambda: _summary(pruned()), yes, "no --apply"
                    )
                report = pruned(apply=apply, vacuum_after=vacuum)
    if as_json:
        totals = {"checkpoints": report.checkpoints, "writes": report.writes, "bytes": report.bytes}
        typer.echo(to_json({**dataclasses.asdict(report), "total": totals}))
        return
    console().print(_table(report))
    again = "" if report.applied else "; run again with --apply to delete"
    console().print(text(_summary(report) + again), soft_wrap=True)


def _table(report: PruneReport) -> Table:
    table = Table(title="pruned" if report.applied else "would prune (dry run)")
    for column in ("thread", "checkpoints", "writes", "bytes", "note"):
        table.add_column(
            column, justify="right" if column in ("checkpoints", "writes", "bytes") else "left"
        )
    for thread in report.threads:
        note = f"skipped: {thread.skipped}" if thread.skipped else ""
        table.add_row(
            text(thread.thread_id),
            str(len(thread.checkpoints)),
            str(thread.writes),
            str(thread.bytes),
            note,
        )
    for description in report.descriptions:
        table.add_row(text(description.thread_id), "1", "0", str(description.bytes), "description")
    return table


def _summary(report: PruneReport) -> str:
    verb = "removed" if report.applied else "would remove"
    line = (
        f"{verb} {report.checkpoints} checkpoints, {report.writes} writes and "
        f"{len(report.descriptions)} descriptions: {report.bytes} bytes"
    )
    if report.skipped:
        line += f"; skipped {len(report.skipped)} threads"
    if report.vacuumed is not None:
        before, after = report.vacuumed
        line += f"; VACUUM: {before} -> {after} bytes on disk"
    return line
