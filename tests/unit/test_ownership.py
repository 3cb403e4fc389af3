"""Who owns a thread during a rolling deploy, on hand-made lineages: no graph, no database.

Two releases of ``linear``: ``OLD`` (``c`` returns V1) and ``NEW`` (V2); the database
stored ``OLD``'s stamp first unless a test says otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from neograph_ext.decision._decision import HeadFacts, PlanKind
from neograph_ext.decision._history import Record
from neograph_ext.decision._ownership import outranks, owned, owner, superseded_message
from neograph_ext.decision._plan import decide
from neograph_ext.decision._stamp import Stamp
from tests.graphs.lineages import LOG, V1, V2, record, stamp

OLD, NEW = stamp(c=V1), stamp(c=V2)
STORED = (OLD.id, NEW.id)
"""The order the database first stored them: the old release's first."""


def thread(*writers: Stamp, took_from: dict[int, str] | None = None) -> list[Record]:
    """``a``, ``b``, ``c``, ``d`` in turn, the step of each node written by the next of
    ``writers`` (the last one writes the rest); ``took_from``: per step, the stamp its
    run took the thread over from."""
    took = took_from or {}
    first = writers[0]
    records = [record(-1, stamp=first, source="input"), record(0, stamp=first)]
    for index, name in enumerate("abcd"):
        by = writers[min(index, len(writers) - 1)]
        records.append(record(index + 1, name, LOG, stamp=by, took_from=took.get(index + 1)))
    return records


def head(records: list[Record], order: tuple[str, ...] = STORED) -> HeadFacts:
    return HeadFacts(records[-1].checkpoint_id, frozenset(), stamp_order=order)


def planned(records: list[Record], current: Stamp, **options: Any) -> Any:
    return decide(
        records, current, "t", head=head(records, options.pop("order", STORED)), **options
    )


def test_the_owner_is_the_code_that_wrote_the_lineage_last() -> None:
    assert owner(thread(OLD, OLD, NEW)) == NEW.id
    assert owner([record(-1, stamp=None, source="input")]) is None


def test_old_code_leaves_a_thread_the_new_code_wrote_alone() -> None:
    records = thread(OLD, OLD, NEW)  # the new code rewound ``c`` and ran on
    assert decide(records, OLD, "t").kind is PlanKind.REWIND  # what it did before
    plan = planned(records, OLD)
    assert plan.kind is PlanKind.SUPERSEDED
    assert plan.owner == NEW.id
    assert plan.invalidated_nodes == {"c"}
    assert plan.checkpoint_id is None and not plan.rerun
    assert "take_over=True" in superseded_message(plan) and NEW.id[:16] in str(plan)


def test_new_code_undoes_old_code_work_as_before() -> None:
    plan = planned(thread(OLD, OLD, OLD), NEW)
    assert plan.kind is PlanKind.REWIND and plan.owner is None and plan.taken_from is None


def test_a_thread_the_new_code_started_is_the_new_codes_too() -> None:
    """Not the first rewind decides (a lineage has none here): the database's order."""
    assert planned(thread(NEW), OLD).kind is PlanKind.SUPERSEDED


@pytest.mark.parametrize(
    ("order", "kind"),
    [
        ((OLD.id,), PlanKind.REWIND),  # the new code's stamp was never stored: older code
        ((NEW.id,), PlanKind.REWIND),  # the current code's never was: about to deploy
        ((), PlanKind.REWIND),
        ((NEW.id, OLD.id), PlanKind.REWIND),  # stored the other way round: a newer deploy
    ],
)
def test_a_stamp_the_order_does_not_list(order: tuple[str, ...], kind: PlanKind) -> None:
    assert planned(thread(OLD, OLD, NEW), OLD, order=order).kind is kind


def test_take_over_plans_as_if_the_owner_were_older() -> None:
    records = thread(OLD, OLD, NEW)
    plan = planned(records, OLD, take_over=True)
    assert plan.kind is PlanKind.REWIND
    assert plan.taken_from == NEW.id
    assert plan.rerun >= {"c"}
    assert any("takes it over" in note for note in plan.notes)
    assert planned(thread(OLD, OLD, OLD), NEW, take_over=True).taken_from is None


def test_after_a_take_over_the_new_code_must_take_the_thread_over_in_turn() -> None:
    took = NEW.id[:16]
    rolled_back = thread(OLD, OLD, OLD, OLD, took_from={3: took, 4: took})  # ``c`` re-ran
    assert outranks(OLD.id, NEW.id, rolled_back, STORED)
    plan = planned(rolled_back, NEW)
    assert plan.kind is PlanKind.SUPERSEDED and plan.owner == OLD.id
    assert planned(rolled_back, OLD).kind is PlanKind.UP_TO_DATE
    assert planned(rolled_back, NEW, take_over=True).taken_from == OLD.id


@pytest.mark.parametrize("latest", ["old", "new"])
def test_the_latest_take_over_between_two_codes_wins(latest: str) -> None:
    first, then = (NEW, OLD) if latest == "old" else (OLD, NEW)
    records = thread(OLD, OLD, first, then, took_from={3: then.id[:16], 4: first.id[:16]})
    assert outranks(then.id, first.id, records, STORED)
    assert not outranks(first.id, then.id, records, STORED)
    assert planned(records, first).kind is PlanKind.SUPERSEDED


def test_a_take_over_ranks_its_code_above_the_code_it_took_from_only() -> None:
    later = stamp(c=V1, d=V2)
    took = NEW.id[:16]
    rolled_back = thread(OLD, OLD, OLD, OLD, took_from={3: took, 4: took})
    order = (*STORED, later.id)
    assert not outranks(OLD.id, later.id, rolled_back, order)
    assert planned(rolled_back, later, order=order).kind is PlanKind.REWIND


def test_a_newer_codes_thread_is_pinned_even_where_nothing_would_re_run() -> None:
    """Old code does not add old work to the new code's thread either."""
    continued = thread(OLD, OLD, OLD, NEW)  # the new code ran ``d``, unchanged in it
    assert decide(continued, OLD, "t").kind is PlanKind.UP_TO_DATE
    assert planned(continued, OLD).kind is PlanKind.SUPERSEDED


def test_owned_leaves_a_fresh_thread_and_another_graphs_alone() -> None:
    fresh = decide([], OLD, "t")
    assert owned(fresh, [], OLD, STORED) is fresh
