"""The decision with stored values that do not read back (``decide(misread=...)``), on
hand-made lineages: no graph, no database."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from neograph_ext.decision._changes import ChangeReason, NodeChange
from neograph_ext.decision._history import Record
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._plan import ASKED_AGAIN, Carry, HeadFacts, PlanKind, decide
from neograph_ext.decision._stamp import Stamp
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


def paused(unrevivable: frozenset[str] = frozenset()) -> HeadFacts:
    """The head of ``thread()``, waiting on a question in ``d``, its ``draft`` misread."""
    return HeadFacts(
        "cp003", frozenset({"d"}), paused=True, misread={"draft": WHY}, unrevivable=unrevivable
    )


def test_a_paused_thread_rewinds_a_misread_value_of_a_class_that_revives() -> None:
    plan = decide(thread(), CURRENT, "t", head=paused())
    assert plan.kind is PlanKind.REWIND and plan.blocker is None
    assert plan.invalidated_nodes == {"a"} and ASKED_AGAIN in plan.notes


def test_a_paused_thread_blocks_on_a_misread_value_no_rewind_can_revive() -> None:
    # The rewind would ask again, and the answer would resume from a checkpoint: the
    # value would come back as data once more, for every answer.
    plan = decide(thread(), CURRENT, "t", head=paused(unrevivable=frozenset({"draft"})))
    assert plan.kind is PlanKind.REWIND and plan.invalidated_nodes == {"a"}
    assert plan.blocker is not None and ASKED_AGAIN not in plan.notes
    assert "waits on a question" in plan.blocker and "`draft`" in plan.blocker
    assert "top level of an importable module" in plan.blocker


def test_a_crashed_thread_rewinds_a_misread_value_no_checkpoint_can_revive() -> None:
    # No pause between the re-run writer and its readers: the value is handed on in memory.
    head = replace(paused(unrevivable=frozenset({"draft"})), paused=False)
    plan = decide(thread(), CURRENT, "t", head=head)
    assert plan.kind is PlanKind.REWIND and plan.blocker is None


def test_a_misread_value_inside_a_waiting_subgraph_forks_the_head() -> None:
    # Forked from the head, the subgraph's task gets a new id: it starts afresh.
    records = thread()
    change = NodeChange("d", ChangeReason.STORED_VALUE, None, None, (f"inside: {WHY}",))
    head = HeadFacts("cp003", frozenset({"d"}), inner=(change,))
    plan = decide(records, CURRENT, "t", head=head)
    assert plan.kind is PlanKind.REWIND and plan.checkpoint_id == records[-1].checkpoint_id
    assert plan.invalidated_nodes == {"d"} and plan.kept == {"a", "b", "c"}
    paused_head = replace(head, paused=True, unrevivable=frozenset({"d"}))
    assert "waits on a question" in (decide(records, CURRENT, "t", head=paused_head).blocker or "")


def test_a_misread_value_of_the_checkpoint_a_rewind_forks_from_blames_its_writer_there() -> None:
    # `c` replaced `draft` since: the head's value reads back, the fork's does not.
    records = [
        *thread()[:-1],
        record(2, "c", ("draft",), stamp=CURRENT, next_nodes="d"),
    ]
    fork = {records[2].checkpoint_id: {"draft": WHY}}
    head = HeadFacts(records[-1].checkpoint_id, frozenset({"d"}), fork_misread=fork)
    plan = decide(records, CURRENT, "t", head=head)
    assert plan.kind is PlanKind.REWIND and plan.invalidated_nodes == {"a"}
    assert plan.checkpoint_id == records[0].checkpoint_id
