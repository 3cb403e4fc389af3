"""An earlier turn's write to an accumulating channel stays live, on hand-made lineages:
a later append keeps it in the value, where a later write of a plain channel replaces it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from neograph_ext.decision._history import Record
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._plan import Carry, PlanKind, decide
from neograph_ext.decision._stamp import Stamp
from tests.graphs.lineages import record
from tests.graphs.notes import ItemV1, ItemV2, LatestV1, LatestV2, notes


def stamp(item: Any = ItemV1, latest: Any = LatestV1) -> Stamp:
    return build_stamp(notes(Counter(), item, latest))


def two_turns(old: Stamp) -> list[Record]:
    """Each turn: ``take`` appends to ``items`` and sets ``latest``."""
    return [
        record(-1, stamp=old, source="input"),
        record(0, ("take",), ("items", "latest"), stamp=old),
        record(1, stamp=old, source="input"),
        record(2, ("take",), ("items", "latest"), stamp=old),
    ]


def test_the_stamp_names_the_accumulating_channels() -> None:
    assert stamp().accumulates == ("items",)


def test_an_earlier_append_of_a_changed_type_stays_live_and_blocks() -> None:
    plan = decide(two_turns(stamp()), stamp(item=ItemV2), "t")
    assert plan.blocker and "channels items" in plan.blocker
    assert plan.candidates == {"items"}
    replayed = decide(two_turns(stamp()), stamp(item=ItemV2), "t", replay_turns=True)
    assert replayed.kind is PlanKind.REWIND and replayed.replayed and not replayed.blocker
    assert replayed.checkpoint_id == "cp000"
    kept = Carry(compatible=frozenset({"items"}))
    assert decide(two_turns(stamp()), stamp(item=ItemV2), "t", kept).kind is PlanKind.MIGRATE


def test_an_earlier_write_of_a_plain_channel_is_dead() -> None:
    records = two_turns(stamp())
    plan = decide(records, stamp(latest=LatestV2), "t")
    assert plan.kind is PlanKind.REWIND and plan.blocker is None and not plan.replayed
    assert plan.checkpoint_id == records[2].checkpoint_id and plan.rerun == {"take"}
