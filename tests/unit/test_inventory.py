"""``Inventory.of``: checked threads grouped by the stamp that last wrote them (pure)."""

from __future__ import annotations

from neograph_ext import PlanKind, ResumePlan
from neograph_ext.types import Inventory, ThreadCheck


def _check(
    stamp: str | None, kind: PlanKind, *, waits: str = "", paused: bool = False, **extra: object
) -> ThreadCheck:
    plan = ResumePlan(kind, "t", next_nodes=frozenset(waits), **extra)  # type: ignore[arg-type]
    return ThreadCheck(plan, stamp, paused, current=stamp == "new")


def test_threads_are_counted_per_stamp_the_current_one_first() -> None:
    found = Inventory.of(
        iter(
            [
                _check("old", PlanKind.REWIND, waits="c", paused=True),
                _check("old", PlanKind.REWIND, waits="c"),
                _check("old", PlanKind.REWIND, blocker="an earlier turn changed"),
                _check("older", PlanKind.UP_TO_DATE),
                _check("new", PlanKind.UP_TO_DATE),
                _check(None, PlanKind.UNVERIFIED, waits="b"),
            ]
        )
    )

    assert [(e.stamp_id, e.threads) for e in found.stamps] == [
        ("new", 1),
        ("old", 3),
        (None, 1),
        ("older", 1),
    ]
    old = found.stamps[1]
    assert (old.waiting, old.crashed, old.rewind, old.blocked) == (1, 1, 2, 1)
    assert old.unfinished == 2 and not old.retirable
    assert found.stamps[3].retirable and not found.stamps[0].retirable  # current: never
    assert found.stamps[2].crashed == 1 and found.threads == 6


def test_code_that_owns_threads_over_the_current_code_is_not_retired() -> None:
    found = Inventory.of(
        [
            _check("newer", PlanKind.SUPERSEDED, owner="newer"),
            _check("newer", PlanKind.SUPERSEDED, owner="newer", waits="c", paused=True),
            _check("done", PlanKind.UP_TO_DATE),
        ]
    )
    newer, done = found.stamps
    assert (newer.superseded, newer.blocked, newer.rewind) == (2, 0, 0)
    assert not newer.retirable  # its complete thread too: the current code leaves it alone
    assert done.superseded == 0 and done.retirable


def test_an_empty_fleet() -> None:
    assert Inventory.of([]).stamps == () and Inventory.of([]).threads == 0
