"""An earlier turn's item in an accumulating list is still part of the thread's value: a
change of its type is not silently up to date, and ``run`` does what ``plan`` says."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.notes import ItemV2, note, notes


def test_an_earlier_append_under_old_types_blocks_a_later_plain_turn(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.run(ne.compile(notes(Counter()), checkpointer=saver), note("one"), config)
    graph = ne.compile(notes(runs, ItemV2), checkpointer=saver)
    # A later turn under the new code, not through run(): its append is of the new type,
    # turn 1's is still in the list.
    drive.invoke(graph, note("two"), config)
    plan = drive.plan(graph, config)  # as run(graph, None, config): no new turn
    assert plan.kind is not ne.PlanKind.UP_TO_DATE
    assert plan.blocker and "items" in plan.blocker and "replay_turns" in plan.blocker
    with pytest.raises(ne.CheckpointSchemaError):
        drive.run(graph, None, config)
    assert runs == Counter({"take": 1})  # the plain turn's alone
    # A new turn: turn 1's item still validates as the new type, and is kept.
    planned = drive.plan(graph, config, input=note("three"))
    assert planned.kind is ne.PlanKind.UP_TO_DATE and "items" in planned.migrated
    assert any("kept: still valid" in n for n in planned.notes)
    drive.run(graph, note("three"), config)
    assert runs == Counter({"take": 2})


def _two_turns(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> None:
    """Two turns under the old code, each appending an item."""
    old = ne.compile(notes(Counter()), checkpointer=saver)
    drive.run(old, note("one"), config)
    drive.run(old, note("two"), config)


def test_two_appending_turns_then_a_changed_item_replay_both(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    _two_turns(drive, saver, config)
    policy = ne.ResumePolicy(replay_turns=True)
    graph = ne.compile(notes(runs, ItemV2), checkpointer=saver, resume=policy)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.replayed and not plan.blocker
    drive.run(graph, None, config)
    assert runs == Counter({"take": 2})
    items = drive.get_state(graph, config).values["items"]
    assert [type(item) for item in items] == [ItemV2, ItemV2]
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_keep_compatible_carries_the_earlier_items(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    _two_turns(drive, saver, config)
    policy = ne.ResumePolicy(keep_compatible=True)
    graph = ne.compile(notes(runs, ItemV2), checkpointer=saver, resume=policy)
    assert drive.plan(graph, config).kind is ne.PlanKind.MIGRATE
    drive.run(graph, note("three"), config)
    assert runs == Counter({"take": 1})
    assert len(drive.get_state(graph, config).values["items"]) == 3


def test_items_plain_langgraph_appended_count_as_the_adopting_code_s(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.invoke(notes(Counter()).compile(checkpointer=saver), note("one"), config)
    adopting = ne.compile(notes(Counter()), checkpointer=saver)
    drive.run(adopting, note("two"), config)
    # Turn 1's unstamped item is still in the list, but the code that resumed the thread
    # adopted it: the thread is that code's, not unverified for ever.
    assert drive.plan(adopting, config).kind is ne.PlanKind.UP_TO_DATE
    policy = ne.ResumePolicy(replay_turns=True)
    graph = ne.compile(notes(runs, ItemV2), checkpointer=saver, resume=policy)
    # Judged as the adopting code's own, the adopted item's changed type is seen.
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.replayed
    drive.run(graph, None, config)
    assert runs == Counter({"take": 2})
    items = drive.get_state(graph, config).values["items"]
    assert [type(item) for item in items] == [ItemV2, ItemV2]


def _chat(runs: Counter[str], messages: Any) -> Any:
    """``reply`` answers the latest message; ``messages`` is the channel's item type."""
    state = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "Chat", {"messages": Annotated[list[messages], add_messages]}, total=False
    )

    def reply(values: Any) -> dict[str, Any]:
        runs["reply"] += 1
        return {"messages": [AIMessage(f"re: {values['messages'][-1].content}")]}

    return StateGraph(state).add_node("reply", reply).add_edge(START, "reply")


def test_a_widened_message_type_blocks_a_chat_and_keep_compatible_carries_it(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    # As after a langchain-core upgrade that changes a message class: every turn's
    # messages are still in the list, and the users' ones no node can write again.
    old = ne.compile(_chat(Counter(), HumanMessage | AIMessage), checkpointer=saver)
    for text in ("hi", "again"):
        drive.run(old, {"messages": [HumanMessage(text)]}, config)
    new = ne.compile(_chat(runs, AnyMessage), checkpointer=saver)
    plan = drive.plan(new, config)
    assert plan.blocker and "keep_compatible" in plan.blocker
    kept = ne.ResumePolicy(keep_compatible={"messages"})
    assert drive.plan(new, config, resume=kept).kind is ne.PlanKind.MIGRATE
    said = drive.run(new, {"messages": [HumanMessage("bye")]}, config, resume=kept)
    assert runs == Counter({"reply": 1})  # the new turn's alone
    assert [m.content for m in said["messages"]][-2:] == ["bye", "re: bye"]
    assert len(said["messages"]) == 6
