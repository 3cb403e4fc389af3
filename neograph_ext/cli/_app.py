"""The commands: ``plan``, ``history``, ``check`` and ``accept``.

Each command loads GRAPH, opens ``--db`` and calls the public API; what it prints is
``_show``'s, and every error becomes one line through ``_boundary``.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer
from langchain_core.runnables import RunnableConfig

from neograph_ext import (
    PlanKind,
    ResumePlan,
    ResumePolicy,
    accept,
    history,
    list_threads,
    plan,
    unrevivable_types,
)
from neograph_ext.cli._boundary import CliError, boundary, reading
from neograph_ext.cli._database import open_database
from neograph_ext.cli._graphs import Graph, attach, load
from neograph_ext.cli._show import (
    console,
    history_rows,
    history_table,
    plan_panel,
    print_check,
    progress,
    text,
    to_json,
)

__all__ = ["app", "main"]

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
    take_over: Annotated[
        bool,
        typer.Option(
            "--take-over",
            help="Plan as a take-over: what this graph would do to a thread newer code "
            "owns, were it rolled back to (run with ResumePolicy(take_over=True)).",
        ),
    ] = False,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Show what resuming one thread would do: rewind target, changed nodes, diffs."""
    with boundary(debug):
        target = load(graph)
        with open_database(db) as saver:
            resume = ResumePolicy(take_over=True) if take_over else None
            decision = _plan(attach(target, saver, graph), thread, checkpoint, resume)
    if as_json:
        typer.echo(to_json(dataclasses.asdict(decision)))
    else:
        console().print(plan_panel(decision))


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
    with boundary(debug):
        target = load(graph) if graph else None
        with open_database(db) as saver:
            source = saver if target is None else attach(target, saver, graph)
            with reading(f"thread {thread!r}"):
                found = history(source, _config(thread, checkpoint))
        if not found.checkpoints:
            raise CliError(f"thread {thread!r} has no checkpoints in this database")
        if not found:
            raise CliError(f"thread {thread!r} has no checkpoint {checkpoint!r}")
    rows = history_rows(found, compared=target is not None)
    if as_json:
        typer.echo(to_json(rows))
    else:
        console().print(history_table(found, rows, compared=target is not None))


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
    with boundary(debug):
        target = load(graph)
        with open_database(db) as saver, progress() as bar:
            compiled = attach(target, saver, graph)
            if thread:
                names = list(dict.fromkeys(thread))
            else:
                # One scan of every checkpoint, with no total to show: the bar only says so.
                scan = bar.add_task("reading checkpoints", total=None)
                with reading("the checkpoints in this database"):
                    names = list(list_threads(saver))
                bar.remove_task(scan)
            plans = [
                _plan(compiled, name, None) for name in bar.track(names, description="planning")
            ]
        # As in strict mode: a declared type whose values cannot read back fails the check.
        unreadable = unrevivable_types(compiled)
    unverified = PlanKind.UNVERIFIED if strict_unverified else None
    failing = [p for p in plans if p.blocker or p.kind in (PlanKind.REWIND, unverified)]
    if as_json:
        ok, failed = not failing and not unreadable, [p.thread_id for p in failing]
        report = {"ok": ok, "failing": failed, "plans": [dataclasses.asdict(p) for p in plans]}
        typer.echo(to_json({**report, "types": list(unreadable)}))
    else:
        print_check(plans, failing, strict_unverified)
        for line in unreadable:
            console().print(text(f"failed: {line}"), style="red", soft_wrap=True)
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
    with boundary(debug):
        target = load(graph)
        with open_database(db, write=True) as saver:
            compiled = attach(target, saver, graph)
            before = _plan(compiled, thread, checkpoint)
            with reading(f"thread {thread!r}"):
                written = accept(compiled, _config(thread, checkpoint))
    new_id = (written.get("configurable") or {}).get("checkpoint_id")
    took = f"; taken over from newer code (stamp {before.owner[:16]})" if before.owner else ""
    console().print(
        text(
            f"thread {thread}: accepted as written by this graph (was {before.kind}); "
            f"wrote checkpoint {new_id}, a fork of {before.head_id}{took}"
        )
    )


def main() -> None:
    """Entry point of the ``neograph-ext`` script."""
    app(prog_name="neograph-ext")


def _config(thread: str, checkpoint: str | None) -> RunnableConfig:
    configurable = {"thread_id": thread}
    if checkpoint:
        configurable["checkpoint_id"] = checkpoint
    return {"configurable": configurable}


def _plan(
    graph: Graph, thread: str, checkpoint: str | None, resume: ResumePolicy | None = None
) -> ResumePlan:
    with reading(f"thread {thread!r}"):
        decision = plan(graph, _config(thread, checkpoint), resume=resume)
    if decision.kind is PlanKind.FRESH:
        where = f"checkpoint {checkpoint!r}" if checkpoint else "checkpoints in this database"
        raise CliError(f"thread {thread!r} has no {where}")
    return decision
