"""The decision with stored values that do not read back (``decide(misread=...)``), on
hand-made lineages: no graph, no database."""

from __future__ import annotations

from collections import Counter

from neograph_ext._changes import ChangeReason
from neograph_ext._history import Record
from neograph_ext._introspect import build_stamp
from neograph_ext._plan import Carry, PlanKind, decide
from neograph_ext._stamp import Stamp
from tests.graphs.lineages import record
from tests.graphs.pipelines import linear

CURRENT: Stamp = build_stamp(linear(Counter()))
WHY = "stored value of `draft` does not read back as `Draft`: got `dict`"


def thread(*, verified: str | None = None) -> list[Record]:
    """``a`` wrote ``draft``, ``b`` and ``c`` wrote ``log``; the head waits on ``d``; all
    under the current stamp, so nothing changed."""
    return [
        record(-1, stamp=CURRENT, source="input"),
        record(0, "a", ("draft",), stamp=CURRENT),
        record(1, "b", ("log",), stamp=CURRENT),
        record(2, "c", ("log",), stamp=CURRENT, next_nodes="d", verified=verified),
    ]


def test_without_a_misread_value_nothing_changed() -> None:
    assert decide(thread(), CURRENT, "t").kind is PlanKind.CONTINUE


def test_a_misread_value_rewinds_to_before_its_writer() -> None:
    records = thread()
    plan = decide(records, CURRENT, "t", misread={"draft": WHY})
    assert plan.kind is PlanKind.REWIND and plan.blocker is None
    assert plan.checkpoint_id == records[0].checkpoint_id and plan.invalidated_nodes == {"a"}
    assert plan.rerun == {"a", "b", "c", "d"} and plan.candidates == {"draft"}
    (change,) = plan.changes
    assert change.reason is ChangeReason.STORED_VALUE and change.channel == "draft"
    assert change.describe() == f"node `a`: {WHY}"


def test_a_verified_head_does_not_close_the_books_on_a_misread_value() -> None:
    plan = decide(thread(verified=CURRENT.id), CURRENT, "t", misread={"draft": WHY})
    assert plan.kind is PlanKind.REWIND and plan.invalidated_nodes == {"a"}


def test_a_value_that_validates_is_carried_instead() -> None:
    carry = Carry(compatible=frozenset({"draft"}))
    plan = decide(thread(), CURRENT, "t", carry, misread={"draft": WHY})
    assert plan.kind is PlanKind.MIGRATE and plan.migrated == {"draft"}


def test_a_value_no_record_wrote_is_left_alone() -> None:
    assert decide(thread(), CURRENT, "t", misread={"doc": WHY}).kind is PlanKind.CONTINUE


def test_a_misread_value_of_an_earlier_turn_blocks() -> None:
    records = [
        *thread()[:-1],
        record(2, "c", ("log",), stamp=CURRENT),
        record(3, stamp=CURRENT, source="input"),
        record(4, "b", ("log",), stamp=CURRENT, next_nodes="c"),
    ]
    plan = decide(records, CURRENT, "t", misread={"draft": WHY})
    assert plan.kind is PlanKind.REWIND and plan.blocker is not None
    assert "earlier turn" in plan.blocker and "draft" in plan.blocker
