"""``check --cost``: what resuming the threads would spend again, and the CI thresholds.

Rules:
- The estimate is ``DeployCost``'s (a pure fold); this module reads each rewinding
  thread's budget ledger (``budget.ledger``) as the plans stream past, and prints.
- A threshold (``--max-reruns``, ``--max-cost MEASURE=N``) replaces "any rewind fails":
  with one given, ``check`` fails (exit 1) when the estimate passes it, or for what
  fails without a rewind (a blocked or superseded thread, an unreadable type).
- The spend is the recorded threads' alone: the threads without a record are counted,
  never guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from typing import Any

from rich.table import Table

from neograph_ext import PlanKind
from neograph_ext.budget import Ledger, Spend
from neograph_ext.cli._boundary import CliError
from neograph_ext.cli._show import text
from neograph_ext.types import CostLine, DeployCost, ThreadCheck

__all__ = ["MEASURES", "Limits", "cost_json", "cost_table", "costed", "passed"]

MEASURES = tuple(f.name for f in fields(Spend))
"""What ``--max-cost`` may cap: ``supersteps``, ``model_calls``, ``tokens``."""


_DIGITS = 18
"""The most digits ``--max-cost`` takes for N."""
_WHOLE = re.compile(f"[0-9]{{1,{_DIGITS}}}")
_SHOWN = 60
"""The most characters of a refused ``--max-cost`` value its error line repeats."""


@dataclass(frozen=True)
class Limits:
    """The thresholds ``check`` fails on, as given."""

    reruns: int | None = None
    """``--max-reruns``: node runs repeated, over every thread."""
    spend: tuple[tuple[str, int], ...] = ()
    """``--max-cost``: per measure of ``Spend``, the most the estimate may reach."""

    @classmethod
    def parse(cls, reruns: int | None, caps: Iterable[str]) -> Limits:
        """The limits from ``--max-reruns N`` and each ``--max-cost MEASURE=N``."""
        spend = []
        for cap in caps:
            measure, _, value = cap.partition("=")
            # ASCII digits alone: ``str.isdigit`` also takes "²" (which ``int`` refuses)
            # and "٣" (which ``int`` reads as 3); the bound keeps ``int`` from refusing a
            # number past its digits limit, and every count fits 64 bits.
            if measure not in MEASURES or not _WHOLE.fullmatch(value):
                shown = cap if len(cap) <= _SHOWN else cap[: _SHOWN - 3] + "..."
                raise CliError(
                    f"--max-cost {shown!r}: give MEASURE=N, a whole number of at most "
                    f"{_DIGITS} digits 0-9 for one of {', '.join(MEASURES)} (say --max-cost "
                    "model_calls=500)"
                )
            spend.append((measure, int(value)))
        return cls(reruns, tuple(spend))

    def __bool__(self) -> bool:
        return self.reruns is not None or bool(self.spend)


def costed(
    checks: Iterable[ThreadCheck], spent: Callable[[str], Ledger | None], into: list[DeployCost]
) -> Iterator[ThreadCheck]:
    """``checks``, each rewind folded into ``into[0]`` with its thread's ledger
    (``spent``, read for rewinds alone) as it passes."""
    for check in checks:
        plan = check.plan
        if plan.kind is PlanKind.REWIND and not plan.blocker:
            into[0] = into[0].plus(plan, check.written_by, spent(plan.thread_id))
        yield check


def passed(cost: DeployCost, limits: Limits) -> list[str]:
    """Each threshold the estimate passes, as a sentence."""
    over = []
    if limits.reruns is not None and cost.total.runs > limits.reruns:
        over.append(f"{cost.total.runs} node runs repeated, over --max-reruns {limits.reruns}")
    for measure, most in limits.spend:
        value = getattr(cost.total.spend, measure)
        if value > most:
            over.append(f"{value} {measure} estimated, over --max-cost {measure}={most}")
    return over


def cost_table(cost: DeployCost) -> Table:
    """Per code version, then per node: threads, runs, no record, and the spend."""
    unknown = cost.total.unrecorded
    caption = (
        f"{unknown} of {cost.total.threads} threads have no budget record: their spend is "
        "not in the sums"
        if unknown
        else None
    )
    table = Table(title="what resuming would spend again", caption=caption)
    table.add_column("code version / node")
    for name in ("threads", "node runs", "no record", *MEASURES):
        table.add_column(name.replace("_", " "), justify="right")
    for stamp, line in cost.stamps.items():
        table.add_row(text("stamp " + (stamp[:12] if stamp else "(none)")), *_cells(line))
    for node, line in cost.nodes.items():
        table.add_row(text(f"node {node}"), *_cells(line, node=True))
    table.add_row(text("total", style="bold"), *_cells(cost.total))
    return table


def _cells(line: CostLine, node: bool = False) -> list[str]:
    spend = [str(getattr(line.spend, m)) for m in MEASURES]
    if node:
        spend[0] = "-"  # supersteps are a thread's, not a node's
    return [str(line.threads), str(line.runs), str(line.unrecorded), *spend]


def cost_json(cost: DeployCost, over: list[str]) -> dict[str, Any]:
    """The estimate for ``--json``: the total, per stamp and per node, and the limits
    passed."""
    return {
        "total": asdict(cost.total),
        "stamps": [{"stamp": stamp, **asdict(line)} for stamp, line in cost.stamps.items()],
        "nodes": [{"node": node, **asdict(line)} for node, line in cost.nodes.items()],
        "over": over,
    }
