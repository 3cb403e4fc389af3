"""A fleet's threads grouped by the code that last wrote them: ``Inventory.of`` (pure).

What a person needs to know before retiring old code: per stamp (the code that wrote a
thread's newest checkpoint), how many threads it holds, how many are unfinished (waiting
on a question, or cut short by a crash) and so will be resumed by whichever code serves
them next, and how many the current code would rewind or refuse.

Rules:
- Pure: a fold of ``ThreadCheck``s, no I/O, one pass (it may be handed a stream).
- Stamps are listed the current one first, then by thread count, most first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from neograph_ext._fleet import ThreadCheck
from neograph_ext.decision._decision import PlanKind

__all__ = ["Inventory", "StampThreads"]


@dataclass(frozen=True)
class StampThreads:
    """The threads whose newest checkpoint one stamp wrote."""

    stamp_id: str | None
    """The stamp; None for threads whose newest checkpoint carries none (plain LangGraph,
    or a stamp that cannot be read)."""
    current: bool
    """It is the stamp of the graph checked: the code about to serve them."""
    threads: int
    """How many threads it last wrote."""
    waiting: int
    """Of those, how many wait on a question (an ``interrupt()`` or a breakpoint)."""
    crashed: int
    """How many have nodes left to run without a question: cut short (a crash, a kill)."""
    rewind: int
    """How many the current code would rewind."""
    blocked: int
    """How many the current code would refuse to resume (a plan with a ``blocker``)."""
    superseded: int = 0
    """How many the current code leaves alone because this code, newer, owns them
    (``superseded``: ``run`` raises ``ThreadSupersededError`` until one takes them over)."""

    @property
    def unfinished(self) -> int:
        """Threads with nodes left to run: ``waiting`` plus ``crashed``."""
        return self.waiting + self.crashed

    @property
    def retirable(self) -> bool:
        """Whether the code of this stamp has no thread left that it could resume: none
        unfinished (a complete thread is served by the current code alike), and none it
        owns over the current code (which would leave it alone, however complete)."""
        return not self.current and self.unfinished == 0 and self.superseded == 0


@dataclass(frozen=True)
class Inventory:
    """Every thread checked, grouped by the stamp that last wrote it."""

    stamps: tuple[StampThreads, ...]
    """One entry per stamp, the current one first, then by thread count."""

    @property
    def threads(self) -> int:
        """How many threads were checked."""
        return sum(entry.threads for entry in self.stamps)

    @classmethod
    def of(cls, checks: Iterable[ThreadCheck]) -> Inventory:
        """Group checked threads by the stamp that last wrote them.

        Args:
            checks: What ``check_threads`` yields (read once: a stream will do).

        Returns:
            Per stamp: its threads, the unfinished ones, and those the current code would
            rewind, refuse, or leave to this newer code.
        """
        counts: dict[str | None, list[int]] = {}
        current: set[str | None] = set()
        for check in checks:
            row = counts.setdefault(check.written_by, [0, 0, 0, 0, 0, 0])
            plan = check.plan
            row[0] += 1
            row[1] += check.unfinished and check.paused
            row[2] += check.unfinished and not check.paused
            row[3] += plan.kind is PlanKind.REWIND and plan.blocker is None
            row[4] += plan.blocker is not None
            row[5] += plan.kind is PlanKind.SUPERSEDED
            if check.current:
                current.add(check.written_by)
        entries = [StampThreads(stamp, stamp in current, *row) for stamp, row in counts.items()]
        entries.sort(key=lambda e: (not e.current, -e.threads, e.stamp_id or ""))
        return cls(tuple(entries))
