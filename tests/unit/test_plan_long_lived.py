"""The decision order for long-lived threads, on hand-made lineages: no graph, no database.

Each step with changes is settled by the first case of ``_plan.SETTLEMENTS`` that
applies: dead -> carried (migrated or compatible) -> rewind within the latest turn ->
replay -> blocked.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import neograph_ext.decision._settlements as settlements_module
from neograph_ext.decision._history import Record
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._plan import SETTLEMENTS, Carry, PlanKind, decide
from neograph_ext.decision._stamp import Stamp
from tests.graphs.chat import ProfileV1, ProfileV2, ProfileV3, SummaryV1, SummaryV2, chat
from tests.graphs.lineages import record


def stamp(profile: Any = ProfileV1, summary: Any = SummaryV1, **versions: str) -> Stamp:
    return build_stamp(chat(Counter(), profile, summary), versions=versions)


def two_turns(old: Stamp, second: Stamp | None = None) -> list[Record]:
    """Turn 1: extract (profile), reply (messages, summary); turn 2: reply again."""
    second = second or old
    return [
        record(-1, stamp=old, source="input"),
        record(0, wrote=("messages",), stamp=old),
        record(1, ("extract",), ("profile",), stamp=old),
        record(2, ("reply",), ("messages", "summary"), stamp=old),
        record(3, stamp=second, source="input"),
        record(4, wrote=("messages",), stamp=second),
        record(5, ("reply",), ("messages", "summary"), stamp=second),
    ]


def test_each_case_wins_over_the_cases_after_it() -> None:
    live = two_turns(stamp())  # turn 1's profile is live, and its type changed
    carry = Carry(migrated=frozenset({"profile"}))
    changed = stamp(ProfileV2)
    assert decide(live, changed, "t", carry, replay_turns=True).kind is PlanKind.MIGRATE
    replayed = decide(live, changed, "t", replay_turns=True)
    assert replayed.kind is PlanKind.REWIND and replayed.replayed and not replayed.blocker
    assert decide(live, changed, "t").blocker
    # Turn 1's summary is dead (turn 2 wrote it again): only the latest turn rewinds.
    dead = decide(live, stamp(summary=SummaryV2), "t", replay_turns=True)
    assert dead.kind is PlanKind.REWIND and not dead.replayed and not dead.blocker


def test_the_settlement_order_is_the_tuple_decide_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    live, changed = two_turns(stamp()), stamp(ProfileV2)
    without = tuple(case for case in SETTLEMENTS if case.__name__ != "_replayed")
    monkeypatch.setattr(settlements_module, "SETTLEMENTS", without)
    assert decide(live, changed, "t", replay_turns=True).blocker


def test_a_dead_value_of_an_earlier_turn_rewinds_only_the_latest_turn() -> None:
    records = two_turns(stamp())
    plan = decide(records, stamp(summary=SummaryV2), "t")
    assert plan.kind is PlanKind.REWIND and plan.blocker is None
    assert plan.checkpoint_id == records[5].checkpoint_id and plan.rerun == {"reply"}


def test_a_dead_value_rewritten_under_the_new_types_changes_nothing() -> None:
    new = stamp(summary=SummaryV2)
    plan = decide(two_turns(stamp(), second=new), new, "t")
    assert plan.kind is PlanKind.UP_TO_DATE and not plan.changes


def test_a_live_value_of_an_earlier_turn_blocks_naming_the_channel_and_ways_out() -> None:
    plan = decide(two_turns(stamp()), stamp(ProfileV2), "t")
    assert plan.blocker and "channels profile" in plan.blocker
    for way in ("keep_compatible", "migrations", "accept", "new thread_id"):
        assert way in plan.blocker
    assert plan.candidates == {"profile"}


def test_a_migration_or_a_compatible_value_carries_it() -> None:
    for carry in (Carry(migrated=frozenset({"profile"})), Carry(compatible=frozenset({"profile"}))):
        plan = decide(two_turns(stamp()), stamp(ProfileV2), "t", carry)
        assert plan.kind is PlanKind.MIGRATE and plan.blocker is None
        assert plan.migrated == {"profile"} and not plan.rerun
        assert plan.invalidated_nodes == {"extract"}


def test_a_carry_of_another_channel_does_not_help() -> None:
    plan = decide(two_turns(stamp()), stamp(ProfileV2), "t", Carry(frozenset({"summary"})))
    assert plan.blocker and not plan.migrated


def test_a_version_change_is_never_carried() -> None:
    carry = Carry(migrated=frozenset({"profile"}))
    plan = decide(two_turns(stamp()), stamp(extract="prompt-v2"), "t", carry)
    assert plan.blocker and not plan.migrated


def test_carried_values_and_a_latest_turn_rewind_combine() -> None:
    records = two_turns(stamp())
    carry = Carry(compatible=frozenset({"profile"}))
    plan = decide(records, stamp(ProfileV2, SummaryV2), "t", carry)
    assert plan.kind is PlanKind.REWIND and plan.blocker is None
    assert plan.migrated == {"profile"} and plan.rerun == {"reply"}
    assert plan.checkpoint_id == records[5].checkpoint_id


def test_a_checkpoint_verified_against_the_current_stamp_settles_what_came_before() -> None:
    new = stamp(ProfileV2)
    accepted = record(6, stamp=new, source="fork", verified=new.id)
    assert decide([*two_turns(stamp()), accepted], new, "t").kind is PlanKind.UP_TO_DATE


def test_a_carried_value_changed_again_plans_as_on_a_thread_the_earlier_code_wrote() -> None:
    middle = stamp(ProfileV2)
    carried = record(6, (), ("profile",), stamp=middle, source="fork", verified=middle.id)
    plan = decide([*two_turns(stamp()), carried], middle, "t")
    assert plan.kind is PlanKind.UP_TO_DATE  # nothing about profile changed
    plan = decide([*two_turns(stamp()), carried], stamp(ProfileV3), "t")
    direct = decide(two_turns(middle), stamp(ProfileV3), "t")
    assert plan.blocker and "earlier turn" in plan.blocker and plan.blocker == direct.blocker
    assert plan.changes == direct.changes  # judged by the types it holds now: V2 -> V3
    assert any("Profile.tone: removed" in line for c in plan.changes for line in c.diff)
    plan = decide(
        [*two_turns(stamp()), carried], stamp(ProfileV3), "t", Carry(frozenset({"profile"}))
    )
    assert plan.kind is PlanKind.MIGRATE and plan.migrated == {"profile"}


def test_replay_turns_rewinds_into_the_earlier_turn_and_names_the_later_inputs() -> None:
    records = two_turns(stamp())
    plan = decide(records, stamp(ProfileV2), "t", replay_turns=True)
    assert plan.kind is PlanKind.REWIND and plan.blocker is None
    assert plan.checkpoint_id == records[1].checkpoint_id  # before extract, in turn 1
    assert plan.replayed == (records[4].checkpoint_id,)
    assert plan.rerun == {"extract", "reply"}


def test_a_carried_value_comes_before_replay() -> None:
    carry = Carry(compatible=frozenset({"profile"}))
    plan = decide(two_turns(stamp()), stamp(ProfileV2), "t", carry, replay_turns=True)
    assert plan.kind is PlanKind.MIGRATE and not plan.replayed
