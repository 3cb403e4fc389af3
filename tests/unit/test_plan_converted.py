"""A rewind to before a carrying fork that converted an accumulating channel, on
hand-made lineages: the channel's earlier items are part of the target's value, so the
rewind converts them again, or is blocked naming the channel."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Any

from neograph_ext.decision._history import Record
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._plan import Carry, PlanKind, decide
from neograph_ext.decision._stamp import Stamp
from tests.graphs.entries import EntryV1, EntryV2, entries
from tests.graphs.lineages import record


def stamp(entry: Any, **versions: str) -> Stamp:
    return build_stamp(entries(entry, operator.add, Counter()), versions=versions)


def carried(fork: Stamp) -> list[Record]:
    """``a -> b -> c -> d`` under ``EntryV1``, then a fork under ``fork`` carrying ``log``."""
    old = stamp(EntryV1)
    return [
        record(-1, stamp=old, source="input"),
        *(record(step, node, ("log",), stamp=old) for step, node in enumerate("abcd")),
        record(4, (), ("log",), stamp=fork, source="fork", verified=fork.id)._replace(carried=True),
    ]


def test_the_converted_items_are_converted_again_by_the_rewind() -> None:
    records = carried(stamp(EntryV2))
    plan = decide(records, stamp(EntryV2, d="2"), "t", Carry(frozenset({"log"})))
    assert plan.kind is PlanKind.REWIND and plan.blocker is None
    assert plan.checkpoint_id == records[3].checkpoint_id and plan.rerun == {"d"}
    assert plan.migrated == {"log"} and plan.carried_from == ()
    kept = decide(records, stamp(EntryV2, d="2"), "t", Carry(compatible=frozenset({"log"})))
    assert kept.migrated == {"log"} and kept.blocker is None


def test_without_a_way_to_convert_them_the_rewind_is_blocked() -> None:
    records = carried(stamp(EntryV2))
    plan = decide(records, stamp(EntryV2, d="2"), "t")
    assert plan.candidates == {"log"}  # the policy is asked about it
    assert plan.blocker and "`log`" in plan.blocker and records[5].checkpoint_id in plan.blocker
    assert "migrations=" in plan.blocker and not plan.migrated


def test_a_fork_that_left_the_channels_type_converted_nothing() -> None:
    """A keeping fork or an ``accept`` snapshots a DeltaChannel: it writes the channel
    without changing what its items are."""
    records = carried(stamp(EntryV1, a="2"))
    plan = decide(records, stamp(EntryV1, a="2", d="2"), "t")
    assert plan.kind is PlanKind.REWIND and plan.blocker is None
    assert plan.rerun == {"d"} and not plan.migrated and not plan.candidates


def test_a_rewind_to_before_the_channels_first_write_brings_no_item_back() -> None:
    records = carried(stamp(EntryV2))
    plan = decide(records, stamp(EntryV2, a="2"), "t")
    assert plan.kind is PlanKind.REWIND and plan.blocker is None
    assert plan.checkpoint_id == records[0].checkpoint_id and not plan.migrated


def test_a_rollback_to_the_code_before_the_conversion_wants_the_items_as_they_were() -> None:
    plan = decide(carried(stamp(EntryV2)), stamp(EntryV1), "t")
    assert plan.kind is PlanKind.REWIND and plan.blocker is None
    assert not plan.migrated


def test_an_accept_converted_nothing_though_it_snapshotted_the_channel() -> None:
    """``accept`` stamps the head's values as current, items as they were: a rewind to
    before it brings back what was accepted."""
    records = carried(stamp(EntryV2))
    records[-1] = records[-1]._replace(carried=False)
    plan = decide(records, stamp(EntryV2, d="2"), "t")
    assert plan.kind is PlanKind.REWIND and plan.blocker is None and not plan.migrated
