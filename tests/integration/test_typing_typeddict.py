"""Stored values declared by a ``typing.TypedDict`` (not ``typing_extensions``'), which
pydantic refuses to validate before Python 3.12: the package validates them as the
fingerprints read them, so a change of the class is settled as any other (kept,
migrated, replayed, or the error naming those ways out), never with pydantic's raw
error. A reducer channel of items, and an ``@entrypoint``'s saved value."""

from __future__ import annotations

import operator
import sys
import types
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.func import entrypoint
from langgraph.graph import START, StateGraph

import neograph_ext as ne
from tests.drive import Drive, Saver

MODULE = "tests.integration.typing_dicts"
"""Where both releases' classes live: a class keeps its path across a deploy."""
sys.modules.setdefault(MODULE, types.ModuleType(MODULE))


def _typeddict(name: str, fields: dict[str, Any]) -> Any:
    made = TypedDict(name, fields)  # type: ignore[operator]
    made.__module__ = MODULE
    setattr(sys.modules[MODULE], name, made)
    return made


ItemV1 = _typeddict("Item", {"text": str})
ItemV2 = _typeddict("Item", {"text": str, "score": int})  # a required key added
TotalV1 = _typeddict("Total", {"total": int})
TotalV2 = _typeddict("Total", {"total": int, "turns": int})


def test_the_classes_are_typing_s_own() -> None:
    assert {type(cls).__module__ for cls in (ItemV1, ItemV2, TotalV1, TotalV2)} == {"typing"}


def _items(runs: Counter[str], item: Any) -> Any:
    """``take`` appends an ``item`` holding the input to ``items``, a reducer channel."""
    state = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "Items", {"q": str, "items": Annotated[list[item], operator.add]}, total=False
    )
    keys = set(item.__annotations__)

    def take(values: Any) -> dict[str, Any]:
        runs["take"] += 1
        return {"items": [{"text": values["q"], **({"score": 1} if "score" in keys else {})}]}

    return StateGraph(state).add_node("take", take).add_edge(START, "take")


def test_items_of_a_changed_typing_typeddict_are_settled_by_the_policy(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    old = ne.compile(_items(Counter(), ItemV1), checkpointer=saver)
    for q in ("1", "2"):
        drive.run(old, {"q": q}, config)
    graph = ne.compile(_items(runs, ItemV2), checkpointer=saver)
    planned = drive.plan(graph, config, input={"q": "3"})
    assert planned.blocker and "a finished turn" in planned.blocker
    with pytest.raises(ne.CheckpointSchemaError, match="replay_turns"):
        drive.run(graph, {"q": "3"}, config)
    assert runs == Counter()
    replay = ne.ResumePolicy(replay_turns=True)
    assert drive.plan(graph, config, input={"q": "3"}, resume=replay).kind is ne.PlanKind.REWIND
    result = drive.run(graph, {"q": "3"}, config, resume=replay)
    assert result["items"] == [{"text": q, "score": 1} for q in ("1", "2", "3")]
    assert runs == Counter(take=3)  # both finished turns replayed, then the new one


def test_items_of_a_typing_typeddict_that_still_validate_are_kept(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    old = ne.compile(_items(Counter(), ItemV2), checkpointer=saver)
    drive.run(old, {"q": "1"}, config)
    graph = ne.compile(_items(runs, ItemV1), checkpointer=saver)  # `score` dropped
    planned = drive.plan(graph, config, input={"q": "2"})
    assert any("kept: still valid" in note for note in planned.notes), planned.notes
    assert len(drive.run(graph, {"q": "2"}, config)["items"]) == 2
    assert runs == Counter(take=1)


def _totals(runs: Counter[str], total: Any, *, is_async: bool) -> Any:
    """An entrypoint adding its input to the ``total`` it saved last turn, saved as a
    ``total`` (``entrypoint.final[int, total]``), counting its turns where it has room."""

    def body(x: int, previous: Any) -> Any:
        runs["workflow"] += 1
        value = x + (previous["total"] if previous else 0)
        turns = {"turns": (previous or {}).get("turns", 0) + 1} if "turns" in keys else {}
        return entrypoint.final(value=value, save=total(total=value, **turns))

    keys = set(total.__annotations__)
    if is_async:

        async def workflow(x: int, *, previous: Any = None) -> Any:
            return body(x, previous)

    else:

        def workflow(x: int, *, previous: Any = None) -> Any:  # type: ignore[misc]
            return body(x, previous)

    workflow.__annotations__["return"] = entrypoint.final[int, total]  # type: ignore[valid-type]
    return entrypoint()(workflow)


def test_an_entrypoint_s_changed_typing_typeddict_save_has_its_ways_out(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    old = ne.compile(_totals(Counter(), TotalV1, is_async=drive.is_async), checkpointer=saver)
    for x in (1, 2):
        drive.run(old, x, config)
    graph = ne.compile(_totals(runs, TotalV2, is_async=drive.is_async), checkpointer=saver)
    planned = drive.plan(graph, config, input=3)
    assert planned.blocker and "no longer validates" in planned.blocker
    with pytest.raises(ne.CheckpointSchemaError, match="replay_turns"):
        drive.run(graph, 3, config)
    assert runs == Counter()
    replay = ne.ResumePolicy(replay_turns=True)
    assert drive.plan(graph, config, input=3, resume=replay).replayed
    assert drive.run(graph, 3, config, resume=replay) == 6
    assert runs == Counter(workflow=3)  # both finished turns replayed, then the new one
    assert drive.run(graph, 4, config) == 10  # the replayed turns saved under the new type
    assert runs == Counter(workflow=4)
