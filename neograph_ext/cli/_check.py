"""``check``'s pass over the threads: streamed, counted, and the failing ones kept.

Rules:
- Plans are streamed from ``check_threads``; what is kept is bounded: counts per kind,
  the inventory's counts per stamp, the failing threads' ids, and the failing plans
  the table shows (the first ``SHOWN``).
- With ``--json`` each plan is printed as it comes, so the report never holds them all.
- A class the serializer declined to revive while a thread was planned (``_serde``) is
  kept with the threads it was heard in (the first ``SHOWN``), for the report.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from rich.progress import Progress

from neograph_ext import PlanKind, ResumePlan
from neograph_ext.cli._serde import declined
from neograph_ext.cli._show import JsonList
from neograph_ext.types import ThreadCheck

__all__ = ["SHOWN", "Tally", "counted", "declined_note"]

SHOWN = 200
"""Failing threads shown in the table; ``--json`` lists them all."""


@dataclass
class Tally:
    """What ``check`` keeps of the plans it streamed."""

    strict_unverified: bool
    as_json: bool
    rewinds_fail: bool = True
    """False when thresholds judge the rewinds instead (``check --max-reruns``)."""
    kinds: Counter[str] = field(default_factory=Counter)
    failing: list[str] = field(default_factory=list)
    shown: list[ResumePlan] = field(default_factory=list)
    declined: dict[str, list[str]] = field(default_factory=dict)
    """Per class the serializer declined to revive, the threads it was heard in."""
    listed: JsonList = field(default_factory=lambda: JsonList("plans"))
    """With ``--json``: the document the plans are printed into as they come."""

    @property
    def checked(self) -> int:
        return sum(self.kinds.values())

    def add(self, plan: ResumePlan, classes: Iterable[str] = ()) -> None:
        for name in sorted(classes):
            threads = self.declined.setdefault(name, [])
            if len(threads) < SHOWN:
                threads.append(plan.thread_id)
        self.kinds["blocked" if plan.blocker else str(plan.kind)] += 1
        unverified = PlanKind.UNVERIFIED if self.strict_unverified else None
        # A thread newer code owns fails as a rewind does: every call of this code on
        # it raises ThreadSupersededError until it is taken over (the offline gate too).
        rewind = PlanKind.REWIND if self.rewinds_fail else None
        if plan.blocker or plan.kind in (rewind, PlanKind.SUPERSEDED, unverified):
            self.failing.append(plan.thread_id)
            if len(self.shown) < SHOWN:
                self.shown.append(plan)
        if self.as_json:
            self.listed.add(dataclasses.asdict(plan))


def counted(
    checks: Iterable[ThreadCheck], tally: Tally, bar: Progress, total: int | None
) -> Iterator[ThreadCheck]:
    """``checks``, each counted in ``tally`` and on the progress bar as it passes."""
    task = bar.add_task("checking threads", total=total)
    with declined() as heard:
        for check in checks:
            tally.add(check.plan, heard)
            heard.clear()
            bar.advance(task)
            yield check


def declined_note(name: str, threads: list[str]) -> str:
    """One line for a class GRAPH does not declare, read back as its fields alone."""
    many = "" if len(threads) < SHOWN else f" (the first {SHOWN})"
    return (
        f"note: {name} is stored in threads {', '.join(threads)}{many}, and GRAPH does not "
        "declare it (a class moved or renamed?): its values read back as plain data"
    )
