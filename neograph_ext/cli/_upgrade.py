"""The ``upgrade`` command: bring a fleet's threads forward after a deploy, in bulk.

A dry run unless ``--apply``; the database is opened for writing only then and, by the
rule every writing command shares (``_confirm``), the dry run's totals are asked about
first. ``--rewind`` also runs the rewinds (node runs), bounded by ``--max-cost``.
``--jobs N`` shares the threads out as ``check --jobs`` does (``_jobs``), each process
upgrading its own.

Rules:
- Streams ``upgrade_threads``: what is kept is the totals per action and the first
  ``SHOWN`` threads with something to do (``--json`` prints every thread as it comes).
- Progress: a bar on a terminal (stderr); off a terminal, one plain line on stderr per
  batch of ``BATCH`` threads, so a job's log shows it moving while stdout stays the
  report alone.
- ``--max-cost`` caps the rewinds' running total in the threads' order, which one
  process alone keeps: with it, one process (``--jobs`` above 1 is refused).
- A thread named (``--thread``) that has no checkpoint is refused (exit 2) before
  any thread is planned or written, as ``check`` refuses it.
- Exit 1 when, with ``--apply``, a thread was skipped (busy, blocked, a rewind not run
  past ``--max-cost``): a later call picks it up; 0 otherwise, a canary included.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Annotated, Any

import typer
from langgraph.checkpoint.base import BaseCheckpointSaver
from rich.table import Table

from neograph_ext import upgrade_threads
from neograph_ext.budget import Budget
from neograph_ext.cli._boundary import CliError, DebugOpt, boundary, reading
from neograph_ext.cli._check import SHOWN
from neograph_ext.cli._confirm import YesOpt, confirm
from neograph_ext.cli._cost import Limits
from neograph_ext.cli._database import DbOpt, open_database
from neograph_ext.cli._graphs import attach, load
from neograph_ext.cli._jobs import made
from neograph_ext.cli._serde import reader
from neograph_ext.cli._show import JsonList, JsonOpt, console, progress, text
from neograph_ext.types import ThreadUpgrade, UpgradeAction

__all__ = ["BATCH", "upgrade_command"]

BATCH = 200
"""Threads per plain progress line (off a terminal)."""

_QUIET = (UpgradeAction.NOTHING, UpgradeAction.LATER)
"""Actions the table leaves out: counted in the totals only."""


_GraphArg = Annotated[
    str,
    typer.Argument(
        metavar="GRAPH",
        help="module:attribute or path/to/file.py:attribute: the code deployed",
    ),
]
_ThreadOpt = Annotated[
    list[str] | None,
    typer.Option("--thread", metavar="ID", help="Only these threads (repeatable)."),
]
_ApplyOpt = Annotated[bool, typer.Option("--apply", help="Write (default: a dry run).")]
_DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Say what it would do; write nothing (default).")
]
_RewindOpt = Annotated[
    bool,
    typer.Option("--rewind", help="With --apply: also run the rewinds (node runs)."),
]
_MaxCostOpt = Annotated[
    list[str] | None,
    typer.Option(
        metavar="MEASURE=N",
        help="With --rewind: the most the rewinds may cost together, in model_calls, "
        "tokens or supersteps, by their budget ledgers (repeatable).",
    ),
]
_CanaryOpt = Annotated[
    float | None,
    typer.Option(
        metavar="P",
        min=0.01,
        max=100,
        help="Only a stable P percent of the threads (by a hash of their ids); call "
        "again without it to continue.",
    ),
]
_JobsOpt = Annotated[
    int | None,
    typer.Option(
        metavar="N",
        help="Upgrade in N processes, each with its own connection (default: the "
        "cores available, one per 5,000 threads at most; one with --max-cost).",
    ),
]


def upgrade_command(
    graph: _GraphArg,
    db: DbOpt,
    thread: _ThreadOpt = None,
    apply: _ApplyOpt = False,
    dry_run: _DryRunOpt = False,
    rewind: _RewindOpt = False,
    max_cost: _MaxCostOpt = None,
    canary: _CanaryOpt = None,
    jobs: _JobsOpt = None,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Bring threads of older code forward as a resume would: with --apply, WRITES the
    carries that need no node run; lists rewinds (--rewind runs them). Busy threads skip.

    Threads newer code owns are left alone. A re-run skips what is done, so a killed or
    canary (--canary P) call is finished by calling again."""
    with boundary(debug):
        if dry_run and apply:
            raise CliError("--dry-run and --apply: pass one")
        if rewind and not apply:
            raise CliError("--rewind runs nodes: it needs --apply")
        limits = Limits.parse(None, max_cost or ())
        if limits and jobs not in (None, 1):
            raise CliError("--max-cost caps the rewinds' running total in one process: no --jobs")
        caps = dict(limits.spend)
        cap = Budget(caps.get("supersteps"), caps.get("model_calls"), caps.get("tokens"))
        target = load(graph)
        names = list(dict.fromkeys(thread)) if thread else None
        with open_database(db, write=apply, serde=reader(target)) as saver:
            compiled = attach(target, saver, graph)
            with reading("the checkpoints in this database"):
                _existing(saver, names or ())
            upgrades = partial(made, graph, db, compiled, saver, names, 1 if limits else jobs)
            dry = partial(upgrade_threads, canary=canary)
            with reading("the checkpoints in this database"):
                if apply:
                    confirm(
                        "upgrade --apply writes to",
                        lambda: _summary(_tally(upgrades(dry), listed=None, shown=[]), False),
                        yes,
                        "no --apply",
                    )
                writes = partial(dry, apply=apply, rewind=rewind, max_cost=cap if limits else None)
                found = upgrades(writes, write=apply)
                shown: list[ThreadUpgrade] = []
                listed = JsonList("threads") if as_json else None
                with progress() as bar:
                    counts = _tally(_progressed(found, bar, len(names) if names else None),
                                    listed=listed, shown=shown)  # fmt: skip
    _report(counts, shown, apply=apply, canary=canary, listed=listed)
    if apply and (counts["busy"] or counts["blocked"] or counts["rewind not run"]):
        raise typer.Exit(1)


def _existing(saver: BaseCheckpointSaver[Any], names: Iterable[str]) -> None:
    """Refuse a thread named that has no checkpoint, as ``check --thread`` does, before
    anything is written (a typo must not pass as a thread with nothing to do)."""
    for name in names:
        if saver.get_tuple({"configurable": {"thread_id": name, "checkpoint_ns": ""}}) is None:
            raise CliError(f"thread {name!r} has no checkpoints in this database")


def _progressed(
    found: Iterable[ThreadUpgrade], bar: Any, total: int | None
) -> Iterator[ThreadUpgrade]:
    """``found``, counted on the bar (a terminal) or in a plain line per batch."""
    task = bar.add_task("upgrading threads", total=total)
    done = Counter[str]()
    for index, upgrade in enumerate(found, start=1):
        bar.advance(task)
        done[_label(upgrade)] += 1
        if bar.disable and index % BATCH == 0:
            line = ", ".join(f"{n} {label}" for label, n in sorted(done.items()))
            sys.stderr.write(f"upgrade: {index} threads so far: {line}\n")
        yield upgrade


def _label(upgrade: ThreadUpgrade) -> str:
    """The action as the totals count it: a rewind listed or run, a carry written or
    not."""
    if upgrade.action is UpgradeAction.REWIND:
        return "rewound" if upgrade.done else ("rewind not run" if upgrade.note else "rewind")
    if upgrade.action is UpgradeAction.CARRY:
        return "carried" if upgrade.done else "carry"
    return str(upgrade.action)


def _tally(
    found: Iterable[ThreadUpgrade], *, listed: JsonList | None, shown: list[ThreadUpgrade]
) -> Counter[str]:
    counts = Counter[str]()
    if listed is not None:
        listed.open()
    for upgrade in found:
        counts[_label(upgrade)] += 1
        if listed is not None:
            listed.add(_record(upgrade))
        elif upgrade.action not in _QUIET and len(shown) < SHOWN:
            shown.append(upgrade)
    return counts


def _record(upgrade: ThreadUpgrade) -> dict[str, Any]:
    after = upgrade.after
    return {
        "thread_id": upgrade.thread_id,
        "action": _label(upgrade),
        "plan": str(upgrade.plan.kind),
        "reruns": upgrade.plan.in_order(upgrade.plan.rerun),
        "written_by": upgrade.written_by,
        "after": None if after is None else str(after.kind),
        "cost": None if upgrade.cost is None else dataclasses.asdict(upgrade.cost),
        "note": upgrade.note,
    }


def _report(
    counts: Counter[str],
    shown: list[ThreadUpgrade],
    *,
    apply: bool,
    canary: float | None,
    listed: JsonList | None,
) -> None:
    if listed is not None:
        listed.close({"applied": apply, "totals": dict(sorted(counts.items()))})
        return
    if shown:
        acted = counts.total() - counts["nothing"] - counts["later"]
        console().print(_table(shown, apply, acted))
    console().print(text(_summary(counts, apply)), soft_wrap=True)
    if canary is not None:
        console().print(
            text(
                f"canary: {canary:g}% of the threads; {counts['later']} left for the next "
                "call (the same command without --canary continues)"
            ),
            soft_wrap=True,
        )


def _table(shown: list[ThreadUpgrade], apply: bool, acted: int) -> Table:
    more = acted - len(shown)
    caption = f"and {more} more (--json lists them all)" if more > 0 else None
    table = Table(title="upgraded" if apply else "would upgrade (dry run)", caption=caption)
    for column in ("thread", "action", "re-runs", "next resume", "note"):
        table.add_column(column)
    for upgrade in shown:
        reruns = ", ".join(upgrade.plan.in_order(upgrade.plan.rerun)) or "-"
        after = "-" if upgrade.after is None else str(upgrade.after.kind)
        table.add_row(
            text(upgrade.thread_id), _label(upgrade), text(reruns), after, text(upgrade.note or "")
        )
    return table


def _summary(counts: Counter[str], apply: bool) -> str:
    head = "upgraded" if apply else "would upgrade (dry run)"
    parts = ", ".join(f"{n} {label}" for label, n in sorted(counts.items())) or "no threads"
    again = "" if apply else "; run again with --apply to write"
    return f"{head}: {counts.total()} threads: {parts}{again}"
