"""The commands: ``plan``, ``history``, ``check``, ``accept``, ``export`` (``_export``),
``prune`` (``_prune``) and ``upgrade`` (``_upgrade``).

Each command loads GRAPH, opens ``--db`` and calls the public API; what it prints is
``_show``'s, and every error becomes one line through ``_boundary``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Annotated, Any

import typer
from langchain_core.runnables import RunnableConfig

import neograph_ext
from neograph_ext import (
    PlanKind,
    ResumePlan,
    ResumePolicy,
    accept,
    check_threads,
    history,
    plan,
    unrevivable_types,
)
from neograph_ext.budget import Ledger, ledger
from neograph_ext.cli._accept import preview, report, would
from neograph_ext.cli._boundary import CliError, DebugOpt, boundary, reading
from neograph_ext.cli._check import Tally, counted, declined_note
from neograph_ext.cli._confirm import ASKS, YesOpt, confirm
from neograph_ext.cli._cost import Limits, cost_json, cost_table, costed, passed
from neograph_ext.cli._database import DB_ENV, DbOpt, OptionalDbOpt, open_database
from neograph_ext.cli._export import export_command, fixture_check
from neograph_ext.cli._graphs import Graph, GraphArg, attach, load
from neograph_ext.cli._help import Command, Group
from neograph_ext.cli._jobs import made
from neograph_ext.cli._ledger import ledger_table
from neograph_ext.cli._prune import prune_command
from neograph_ext.cli._serde import reader
from neograph_ext.cli._show import (
    JsonOpt,
    console,
    history_rows,
    history_table,
    inventory_table,
    plan_panel,
    print_check,
    progress,
    safe,
    text,
    to_json,
)
from neograph_ext.cli._upgrade import upgrade_command
from neograph_ext.types import DeployCost, Inventory, ThreadCheck

__all__ = ["app", "main"]

app = typer.Typer(
    name="neograph-ext",
    help="See what resuming LangGraph threads will do after a deploy, before it happens.",
    no_args_is_help=True,
    add_completion=False,
    cls=Group,
    pretty_exceptions_show_locals=False,  # locals may hold a database password
)

ThreadOpt = Annotated[str, typer.Option("--thread", metavar="ID", help="The thread id.")]
CheckpointOpt = Annotated[
    str | None, typer.Option(metavar="ID", help="Start from this checkpoint, not the newest.")
]


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"neograph-ext {neograph_ext.__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """See what resuming LangGraph threads will do after a deploy, before it happens."""


@app.command("plan", cls=Command)
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
    mermaid: Annotated[
        bool, typer.Option("--mermaid", help="Print the graph as Mermaid, each node marked.")
    ] = False,
    debug: DebugOpt = False,
) -> None:
    """Show what resuming one thread would do: rewind target, changed nodes, diffs."""
    with boundary(debug):
        if as_json and mermaid:
            raise CliError("--json and --mermaid are two outputs: pass one")
        target = load(graph)
        with open_database(db, serde=reader(target)) as saver:
            compiled = attach(target, saver, graph)
            resume = ResumePolicy(take_over=True) if take_over else None
            decision = _plan(compiled, thread, checkpoint, resume)
        drawn = decision.draw_mermaid(compiled) if mermaid else None
    if drawn is not None:  # escaped as any stored text is, its line breaks and tabs kept
        typer.echo(
            "\n".join("\t".join(map(safe, ln.split("\t"))) for ln in drawn.split("\n")), nl=False
        )
    elif as_json:
        typer.echo(to_json(dataclasses.asdict(decision)))
    else:
        console().print(plan_panel(decision))


@app.command("history", cls=Command)
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
        with open_database(db, serde=reader(target)) as saver:
            source = saver if target is None else attach(target, saver, graph)
            with reading(f"thread {thread!r}"):
                found = history(source, _config(thread, checkpoint))
                spent = ledger(saver, _config(thread, None))
        if not found.checkpoints:
            raise CliError(f"thread {thread!r} has no checkpoints in this database")
        if not found:
            raise CliError(f"thread {thread!r} has no checkpoint {checkpoint!r}")
    rows = history_rows(found, compared=target is not None)
    if as_json:
        typer.echo(to_json(rows))
    else:
        console().print(history_table(found, rows, compared=target is not None))
        if spent is not None:
            console().print(ledger_table(thread, spent))


_FixturesOpt = Annotated[
    str | None,
    typer.Option(
        metavar="DIR", help="Plan against threads exported by `export`, offline (no --db)."
    ),
]
_AllowOpt = Annotated[
    list[str] | None,
    typer.Option(metavar="OUTCOME", help="With --fixtures: accept rewinds (--allow rewind)."),
]


_ThreadsOpt = Annotated[
    list[str] | None,
    typer.Option("--thread", metavar="ID", help="Check only these threads (repeatable)."),
]
_StrictUnverifiedOpt = Annotated[
    bool, typer.Option("--strict-unverified", help="Also fail on unstamped threads.")
]
_InventoryOpt = Annotated[
    bool, typer.Option("--inventory", help="Also count threads by the code that last wrote them.")
]
_CostOpt = Annotated[
    bool,
    typer.Option(
        "--cost", help="Also what the rewinds would spend again, from the budget ledgers."
    ),
]
_MaxRerunsOpt = Annotated[
    int | None,
    typer.Option(
        metavar="N", min=0, help="Fail (exit 1) past N node runs repeated; implies --cost."
    ),
]
_MaxCostOpt = Annotated[
    list[str] | None,
    typer.Option(
        metavar="MEASURE=N",
        help="Fail (exit 1) when the estimate passes N model_calls, tokens or "
        "supersteps (repeatable); implies --cost.",
    ),
]
_JobsOpt = Annotated[
    int | None,
    typer.Option(
        metavar="N",
        help="Check in N processes, each with its own connection (default: the cores "
        "available, one per 5,000 threads at most).",
    ),
]


def _database_options(
    ctx: typer.Context, thread: list[str] | None, strict_unverified: bool
) -> list[str]:
    """The options of a database check given to ``check --fixtures``, which refuses them.
    NEOGRAPH_EXT_DB set for the other commands is no --db given here. (By name: typer
    bundles its own click, whose ParameterSource is not public.)"""
    source = ctx.get_parameter_source("db")
    given = {
        "--db": source is not None and source.name == "COMMANDLINE",
        "--thread": bool(thread),
        "--strict-unverified": strict_unverified,
    }
    return [k for k, v in given.items() if v]


@app.command("check", cls=Command)
def check_command(
    graph: GraphArg,
    ctx: typer.Context,
    db: OptionalDbOpt = None,
    thread: _ThreadsOpt = None,
    strict_unverified: _StrictUnverifiedOpt = False,
    by_stamp: _InventoryOpt = False,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
    fixtures: _FixturesOpt = None,
    allow: _AllowOpt = None,
    cost: _CostOpt = False,
    max_reruns: _MaxRerunsOpt = None,
    max_cost: _MaxCostOpt = None,
    jobs: _JobsOpt = None,
) -> None:
    """Plan every thread (or those named), or with --fixtures the exported threads, offline;
    exit 1 if any would rewind or is blocked (with --max-reruns or --max-cost: if the
    rewinds pass those, or any is blocked)."""
    if fixtures is not None:
        options = _database_options(ctx, thread, strict_unverified)
        costs = (cost, max_reruns, max_cost or [])
        fixture_check(graph, fixtures, options, allow or [], as_json, debug, costs)
        return
    with boundary(debug):
        limits = Limits.parse(max_reruns, max_cost or ())
        tally = Tally(strict_unverified, as_json, rewinds_fail=not limits)
        spent = [DeployCost()] if cost or limits else None
        if db is None:
            raise CliError(
                f"check needs --db URL (or {DB_ENV}), or --fixtures DIR to plan exported threads"
            )
        if allow:
            raise CliError("--allow applies to --fixtures; with --db, every rewind fails")
        target = load(graph)
        with open_database(db, serde=reader(target)) as saver, progress() as bar:
            compiled = attach(target, saver, graph)
            names = list(dict.fromkeys(thread)) if thread else None
            if as_json:
                tally.listed.open()
            with reading("the checkpoints in this database"):
                planned = made(graph, db, compiled, saver, names, jobs, check_threads)
                checks = counted(planned, tally, bar, _count(names))
                if spent is not None:
                    checks = costed(checks, partial(_ledger, saver), spent)
                found = Inventory.of(_known(checks))
        # As in strict mode: a declared type whose values cannot read back fails the check.
        unreadable = unrevivable_types(compiled)
    over = passed(spent[0], limits) if spent is not None else []
    _checked(
        tally, found, unreadable, by_stamp=by_stamp, cost=spent[0] if spent else None, over=over
    )
    if tally.failing or unreadable or over:
        raise typer.Exit(1)


def _ledger(saver: Any, thread: str) -> Ledger | None:
    return ledger(saver, _config(thread, None))


def _checked(
    tally: Tally,
    found: Inventory,
    unreadable: tuple[str, ...],
    *,
    by_stamp: bool,
    cost: DeployCost | None,
    over: list[str],
) -> None:
    """What ``check`` found, printed: the rest of the JSON document, or the tables."""
    if tally.as_json:
        ok = not tally.failing and not unreadable and not over
        report: dict[str, Any] = {"ok": ok, "failing": tally.failing, "types": list(unreadable)}
        report["declined"] = [{"class": c, "threads": t} for c, t in tally.declined.items()]
        rows = [{**dataclasses.asdict(row), "unfinished": row.unfinished} for row in found.stamps]
        report["inventory"] = rows
        if cost is not None:
            report["cost"] = cost_json(cost, over)
        tally.listed.close(report)
        return
    if by_stamp:
        console().print(inventory_table(found))
    if cost is not None:
        console().print(cost_table(cost))
    print_check(tally.kinds, tally.shown, len(tally.failing), tally.strict_unverified, over)
    for line in unreadable:
        console().print(text(f"failed: {line}"), style="red", soft_wrap=True)
    for name, threads in tally.declined.items():
        console().print(text(declined_note(name, threads)), soft_wrap=True)


def _count(names: list[str] | None) -> int | None:
    return None if names is None else len(names)


def _known(checks: Iterable[ThreadCheck]) -> Iterator[ThreadCheck]:
    """``checks``, refusing a thread named that has no checkpoint."""
    for check in checks:
        if check.plan.kind is PlanKind.FRESH:
            raise CliError(f"thread {check.plan.thread_id!r} has no checkpoints in this database")
        yield check


@app.command("accept", cls=Command, epilog=ASKS)
def accept_command(
    graph: GraphArg,
    db: DbOpt,
    thread: ThreadOpt,
    checkpoint: CheckpointOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what it would write; write nothing.")
    ] = False,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Record that a thread was handled by hand (say, its data migrated in SQL): WRITES one
    checkpoint, a fork of its head stamped as current, so the next run carries on."""
    with boundary(debug):
        target = load(graph)
        with open_database(db, write=not dry_run, serde=reader(target)) as saver:
            compiled = attach(target, saver, graph)
            config = _config(thread, checkpoint)
            found = preview(compiled, config, _plan(compiled, thread, checkpoint))
            written = None
            if not dry_run:
                if not found.current:
                    confirm("accept writes to", lambda: would(found), yes, "--dry-run")
                with reading(f"thread {thread!r}"):
                    written = accept(compiled, config)
    report(found, written, as_json)


app.command("export", cls=Command)(export_command)
app.command("prune", cls=Command, epilog=ASKS)(prune_command)
app.command("upgrade", cls=Command, epilog=ASKS)(upgrade_command)


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
