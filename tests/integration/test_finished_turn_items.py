"""Items a reducer accumulated in finished turns, side by side on every accumulating
channel kind (``operator.add``, ``Topic``, a ``DeltaChannel`` far from or near its
snapshot, ``add_messages`` with and without message ids): a new turn keeps the items
that still validate under the current types, the plan says so and runs only the new
turn's node; an item that no longer validates is settled by the policy (the error, or a
migration); a changed ``versions`` string of the node that appended them asks for a
re-run (the error, or ``replay_turns``). One turn and three plan the same. Every call
runs under the plan == run harness."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.channels.topic import Topic
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import ConfigDict

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.graphs.delta import extend
from tests.graphs.notes import ItemV1, ItemV2, note, notes
from tests.graphs.pipelines import deployed, model

# `n` renamed: a stored item no longer validates. Extra fields allowed: it revives
# through this class by model_construct, which keeps `n` only so.
ItemV3 = model("Item", __config__=ConfigDict(extra="allow"), m=(int, ...))
Builder = StateGraph[Any, Any, Any, Any]


def _said(runs: Counter[str], message: Any, *, ids: bool) -> Builder:
    """``take`` appends an AI message to ``items``, an ``add_messages`` channel of
    ``message``s, with an id of its own when ``ids``, else one ``add_messages`` gives."""
    state = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "Said", {"text": str, "items": Annotated[list[message], add_messages]}, total=False
    )

    def take(values: Any) -> dict[str, Any]:
        runs["take"] += 1
        n = len(values.get("items", []))
        return {"items": [AIMessage(f"{n}", id=f"m{n}" if ids else None)]}

    return StateGraph(state).add_node("take", take).add_edge(START, "take")


def _topic(item: Any) -> Any:
    return Topic(item, accumulate=True)


# Per kind: the builder for the old, a still-valid, and an invalid item type, and the
# migration that converts the stored items to the invalid one.
_NOTES = {
    "add": operator.add,
    "delta-far": DeltaChannel(extend, snapshot_frequency=1000),
    "delta-near": DeltaChannel(extend, snapshot_frequency=1),
}
_ITEMS = {"old": ItemV1, "valid": ItemV2, "invalid": ItemV3}
_MESSAGES = {"old": HumanMessage | AIMessage, "valid": AnyMessage, "invalid": HumanMessage}


def _noted(kind: str) -> Callable[[Counter[str], str], Builder]:
    def build(runs: Counter[str], item: str) -> Builder:
        reducer = _topic(_ITEMS[item]) if kind == "topic" else _NOTES[kind]
        return notes(runs, _ITEMS[item], reducer=reducer)

    return build


def _messages(ids: bool) -> Callable[[Counter[str], str], Builder]:
    return lambda runs, item: _said(runs, _MESSAGES[item], ids=ids)


KINDS: dict[str, Callable[[Counter[str], str], Builder]] = {
    **{kind: _noted(kind) for kind in (*_NOTES, "topic")},
    "messages-ids": _messages(True),
    "messages-no-ids": _messages(False),
}


def _migration(kind: str) -> Callable[[Any], Any]:
    if kind.startswith("messages"):
        return lambda items: [HumanMessage(m.content, id=m.id) for m in items]
    return lambda items: [ItemV3(m=i.model_dump()["n"]) for i in items]


def _talked(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, kind: str, turns: int
) -> RunnableConfig:
    """``turns`` finished turns under the old code on a thread of their own."""
    thread: RunnableConfig = {
        "configurable": {"thread_id": f"{config['configurable']['thread_id']}-{turns}"}
    }
    deployed(ItemV1)
    old = ne.compile(KINDS[kind](Counter(), "old"), checkpointer=saver)
    for turn in range(turns):
        drive.run(old, note(f"turn {turn}"), thread)
    return thread


NEXT = note("next")


@pytest.mark.parametrize("kind", list(KINDS))
def test_valid_items_of_finished_turns_are_kept_and_the_plan_says_so(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, kind: str
) -> None:
    found = {}
    for turns in (1, 3):
        thread = _talked(drive, saver, config, kind, turns)
        runs: Counter[str] = Counter()
        graph = ne.compile(KINDS[kind](runs, "valid"), checkpointer=saver)
        planned = drive.plan(graph, thread, input=NEXT)
        result = drive.run(graph, NEXT, thread)
        assert len(result["items"]) == turns + 1  # every earlier item kept, one appended
        found[turns] = planned.kind, planned.migrated, planned.notes, runs
    assert found[1] == found[3]
    kind_of, migrated, notes_of, runs = found[1]
    assert kind_of is ne.PlanKind.UP_TO_DATE and migrated == {"items"}
    assert any("node `take`" in n and "kept: still valid" in n for n in notes_of), notes_of
    assert runs == Counter(take=1)  # the new turn's own, no finished turn's


@pytest.mark.parametrize("kind", list(KINDS))
def test_items_that_no_longer_validate_are_settled_by_the_policy(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, kind: str
) -> None:
    for turns in (1, 3):
        thread = _talked(drive, saver, config, kind, turns)
        runs: Counter[str] = Counter()
        graph = ne.compile(KINDS[kind](runs, "invalid"), checkpointer=saver)
        planned = drive.plan(graph, thread, input=NEXT)
        assert planned.blocker and "a finished turn" in planned.blocker
        with pytest.raises(ne.CheckpointSchemaError, match="migrations"):
            drive.run(graph, NEXT, thread)
        migrate = ne.ResumePolicy(migrations={"items": _migration(kind)})
        assert drive.plan(graph, thread, input=NEXT, resume=migrate).kind is ne.PlanKind.MIGRATE
        result = drive.run(graph, NEXT, thread, resume=migrate)
        assert len(result["items"]) == turns + 1
        assert runs == Counter(take=1)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_changed_version_of_the_node_that_appended_them_asks_for_a_rerun(
    drive: Drive, saver: Saver, config: RunnableConfig, kind: str, runs: Counter[str]
) -> None:
    thread = _talked(drive, saver, config, kind, 2)
    bumped = ne.compile(KINDS[kind](runs, "old"), checkpointer=saver, versions={"take": "2"})
    planned = drive.plan(bumped, thread, input=NEXT)
    assert planned.blocker and "replay_turns" in planned.blocker
    assert not any("kept: still valid" in n for n in planned.notes)
    with pytest.raises(ne.CheckpointSchemaError):
        drive.run(bumped, NEXT, thread)
    assert runs == Counter()
    replay = ne.ResumePolicy(replay_turns=True)
    assert drive.plan(bumped, thread, input=NEXT, resume=replay).kind is ne.PlanKind.REWIND
    drive.run(bumped, NEXT, thread, resume=replay)
    assert runs == Counter(take=3)  # both finished turns replayed, then the new one
