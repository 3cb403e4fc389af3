"""A ``DeltaChannel`` accumulates as a plain reducer channel does: an earlier turn's item
stays part of the value, so a change of its type is never silently up to date."""

from __future__ import annotations

from collections import Counter

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.graphs.delta import extend
from tests.graphs.notes import ItemV2, note, notes

KINDS = {
    "delta-far": DeltaChannel(extend, snapshot_frequency=1000),
    "delta-near": DeltaChannel(extend, snapshot_frequency=1),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_an_earlier_delta_append_under_old_types_blocks_a_later_plain_turn(
    drive: Drive, saver: Saver, config: RunnableConfig, kind: str, runs: Counter[str]
) -> None:
    reducer = KINDS[kind]
    drive.run(
        ne.compile(notes(Counter(), reducer=reducer), checkpointer=saver), note("one"), config
    )
    graph = ne.compile(notes(runs, ItemV2, reducer=reducer), checkpointer=saver)
    drive.invoke(graph, note("two"), config)
    plan = drive.plan(graph, config)
    assert plan.blocker and "items" in plan.blocker and "replay_turns" in plan.blocker
    with pytest.raises(ne.CheckpointSchemaError):
        drive.run(graph, None, config)
    assert runs == Counter({"take": 1})
    # A new turn: turn 1's item still validates as the new type, and is kept.
    planned = drive.plan(graph, config, input=note("three"))
    assert planned.kind is ne.PlanKind.UP_TO_DATE and "items" in planned.migrated
    drive.run(graph, note("three"), config)
    assert runs == Counter({"take": 2})
    items = drive.get_state(graph, config).values["items"]
    assert [(type(i), i.n) for i in items] == [(ItemV2, n) for n in (0, 1, 2)]


@pytest.mark.parametrize("kind", list(KINDS))
def test_two_delta_appending_turns_then_a_changed_item_replay_both(
    drive: Drive, saver: Saver, config: RunnableConfig, kind: str, runs: Counter[str]
) -> None:
    reducer = KINDS[kind]
    old = ne.compile(notes(Counter(), reducer=reducer), checkpointer=saver)
    drive.run(old, note("one"), config)
    drive.run(old, note("two"), config)
    policy = ne.ResumePolicy(replay_turns=True)
    graph = ne.compile(notes(runs, ItemV2, reducer=reducer), checkpointer=saver, resume=policy)
    assert drive.plan(graph, config).kind is ne.PlanKind.REWIND
    drive.run(graph, None, config)
    assert runs == Counter({"take": 2})
    items = drive.get_state(graph, config).values["items"]
    assert [type(item) for item in items] == [ItemV2, ItemV2]
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE
