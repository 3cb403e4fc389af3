"""``check``'s pass over the threads: streamed, counted, and the failing ones kept.

Rules:
- Plans are streamed from ``check_threads``; what is kept is bounded: counts per kind,
  the inventory's counts per stamp, the failing threads' ids, and the failing plans
  the table shows (the first ``SHOWN``).
- With ``--json`` each plan is printed as it comes, so the report never holds them all.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import typer
from rich.progress import Progress

from neograph_ext import PlanKind, ResumePlan, ThreadCheck
from neograph_ext.cli._show import to_json

__all__ = ["SHOWN", "Tally", "counted"]

SHOWN = 200
"""Failing threads shown in the table; ``--json`` lists them all."""


@dataclass
class Tally:
    """What ``check`` keeps of the plans it streamed."""

    strict_unverified: bool
    as_json: bool
    kinds: Counter[str] = field(default_factory=Counter)
    failing: list[str] = field(default_factory=list)
    shown: list[ResumePlan] = field(default_factory=list)

    @property
    def checked(self) -> int:
        return sum(self.kinds.values())

    def add(self, plan: ResumePlan) -> None:
        self.kinds["blocked" if plan.blocker else str(plan.kind)] += 1
        unverified = PlanKind.UNVERIFIED if self.strict_unverified else None
        # A thread newer code owns fails as a rewind does: every call of this code on
        # it raises ThreadSupersededError until it is taken over (the offline gate too).
        if plan.blocker or plan.kind in (PlanKind.REWIND, PlanKind.SUPERSEDED, unverified):
            self.failing.append(plan.thread_id)
            if len(self.shown) < SHOWN:
                self.shown.append(plan)
        if self.as_json:
            separator = "," if self.checked > 1 else ""
            typer.echo(separator + to_json(dataclasses.asdict(plan)), nl=False)


def counted(
    checks: Iterable[ThreadCheck], tally: Tally, bar: Progress, total: int | None
) -> Iterator[ThreadCheck]:
    """``checks``, each counted in ``tally`` and on the progress bar as it passes."""
    task = bar.add_task("checking threads", total=total)
    for check in checks:
        tally.add(check.plan)
        bar.advance(task)
        yield check
