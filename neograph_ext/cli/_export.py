"""The CI gate on the command line: ``export`` writes threads as fixtures, and
``check --fixtures`` plans the current code against them, offline.

Rules:
- ``export`` reads the database read-only, as every command but ``accept`` does; it
  writes only the fixture files.
- ``check --fixtures`` opens no database at all: ``--db`` with it is refused.
- Both call the public API (``export_threads``, ``neograph_ext.testing``); the report
  printed is the one ``assert_resumable`` raises with, so CI and pytest read alike.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer

from neograph_ext import export_threads
from neograph_ext.cli._boundary import CliError, boundary, reading
from neograph_ext.cli._cost import Limits, cost_json, cost_table, passed
from neograph_ext.cli._database import DbOpt, open_database
from neograph_ext.cli._graphs import GraphArg, attach, load
from neograph_ext.cli._serde import reader
from neograph_ext.cli._show import console, text, to_json
from neograph_ext.testing import GateReport, check_fixtures
from neograph_ext.types import DeployCost

__all__ = ["export_command", "fixture_check"]


def export_command(
    graph: GraphArg,
    db: DbOpt,
    out: Annotated[str, typer.Option("--out", metavar="DIR", help="Write the fixtures here.")],
    threads: Annotated[
        list[str] | None,
        typer.Option(
            "--threads", "--thread", metavar="ID", help="Export only these threads (repeatable)."
        ),
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option(metavar="N", min=1, help="Export N of the threads, chosen at random."),
    ] = None,
    unfinished: Annotated[
        bool,
        typer.Option(
            "--unfinished", help="Only threads with work left: nodes to run or a question."
        ),
    ] = False,
    with_values: Annotated[
        bool,
        typer.Option(
            "--with-values",
            help="Include state values (needed to judge keep_compatible and migrations); "
            "left out by default, since they may be private.",
        ),
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
) -> None:
    """Export threads as fixtures for an offline CI gate (check --fixtures): lineages,
    stamps and planning facts, without state values unless --with-values."""
    with boundary(debug):
        target = load(graph)
        with open_database(db, serde=reader(target)) as saver:
            compiled = attach(target, saver, graph)
            with reading("the threads to export"):
                written = export_threads(
                    compiled,
                    out,
                    threads=threads,
                    sample=sample,
                    unfinished=unfinished,
                    with_values=with_values,
                )
    what = "with values" if with_values else "without state values"
    lines = [f"exported {len(written)} thread(s) to {out} ({what})", *map(str, written)]
    console().print(text(*lines), soft_wrap=True)


def fixture_check(
    graph: str,
    fixtures: str,
    database_options: list[str],
    allow: list[str],
    as_json: bool,
    debug: bool,
    cost: tuple[bool, int | None, list[str]] = (False, None, []),
) -> None:
    """``check GRAPH --fixtures DIR``: plan GRAPH against the fixtures, offline; exit 1
    when a thread would rewind (unless ``--allow rewind`` or a threshold), refuse or
    raise. ``database_options``: the options given that only a check of a database
    takes; ``cost``: ``--cost``, ``--max-reruns`` and ``--max-cost``, as given."""
    with boundary(debug):
        if database_options:
            raise CliError(
                f"--fixtures plans offline, from every file of DIR: drop "
                f"{', '.join(database_options)}"
            )
        limits = Limits.parse(cost[1], cost[2])
        report = check_fixtures(load(graph), fixtures, allow=[*allow, *(["rewind"] * bool(limits))])
    spent = None
    if cost[0] or limits:
        found = report.verdicts
        spent = DeployCost.of((v.plan, v.written_by, v.ledger) for v in found if v.plan)
    over = passed(spent, limits) if spent is not None else []
    if as_json:
        document = _report_json(report)
        if spent is not None:
            document = {**document, "ok": report.ok and not over, "cost": cost_json(spent, over)}
        typer.echo(to_json(document))
    else:
        out = console()
        for verdict in report.verdicts:
            style = "" if verdict.passed else "red"
            out.print(text(*verdict.describe().splitlines(), style=style), soft_wrap=True)
        if spent is not None:
            out.print(cost_table(spent))
        summary = "; ".join([str(report).splitlines()[0], *over])
        out.print(text(summary, style="green" if report.ok and not over else "red"), soft_wrap=True)
    if not report.ok or over:
        raise typer.Exit(1)


def _report_json(report: GateReport) -> dict[str, Any]:
    return {
        "ok": report.ok,
        "failing": [v.thread_id for v in report.failing],
        "allowed": sorted(report.allowed),
        "threads": [
            {
                "thread_id": v.thread_id,
                "fixture": v.source,
                "outcome": v.outcome,
                "passed": v.passed,
                "error": v.error,
                "notes": list(v.notes),
                "plan": dataclasses.asdict(v.plan) if v.plan is not None else None,
            }
            for v in report.verdicts
        ],
    }
