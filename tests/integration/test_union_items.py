"""Items of a union a reducer accumulated in finished turns (``list[AItem | BItem]``): a
stored item still validates only as the current version of its own class, never as
another member of the union its fields would fit too. An ``AItem`` whose class gained
a required field is no ``BItem``: the next turn takes one of the usual ways out (the
error, a migration); while neither class changed in a way its items miss, each item
keeps its class, even where its fields fit the union's first member."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, StateGraph
from pydantic import BaseModel, Field

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.graphs.pipelines import deployed, model

AItemV1 = model("AItem", text=(str, ...))
AItemV2 = model("AItem", text=(str, ...), score=(int, ...))  # a required field added
BItemV1 = model("BItem", text=(str, ...))
# Constrained: its items still validate, and they hold the same fields as an AItem.
BItemV2 = model("BItem", text=(Annotated[str, Field(max_length=100)], ...))


def _items(runs: Counter[str], a_item: type[BaseModel], b_item: type[BaseModel]) -> Any:
    """``take`` appends an ``AItem`` on the thread's first turn, a ``BItem`` after it, to
    ``items``, a reducer channel of either."""
    deployed(a_item, b_item)
    state = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "Union", {"q": str, "items": Annotated[list[a_item | b_item], operator.add]}, total=False
    )

    def take(values: Any) -> dict[str, Any]:
        runs["take"] += 1
        made = a_item if not values.get("items") else b_item
        return {"items": [made(text=values["q"])]}

    return StateGraph(state).add_node("take", take).add_edge(START, "take")


def _history(result: dict[str, Any]) -> list[str]:
    return [f"{type(item).__name__}:{item.text}" for item in result["items"]]


def _two_turns(drive: Drive, saver: Saver, config: RunnableConfig) -> None:
    old = ne.compile(_items(Counter(), AItemV1, BItemV1), checkpointer=saver)
    drive.run(old, {"q": "a1"}, config)
    assert _history(drive.run(old, {"q": "b2"}, config)) == ["AItem:a1", "BItem:b2"]


def test_an_item_whose_class_gained_a_required_field_is_not_kept_as_another_member(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    _two_turns(drive, saver, config)
    graph = ne.compile(_items(runs, AItemV2, BItemV1), checkpointer=saver)
    planned = drive.plan(graph, config, input={"q": "b3"})
    assert not any("kept: still valid" in note for note in planned.notes), planned.notes
    assert planned.blocker and "migrations" in planned.blocker
    with pytest.raises(ne.CheckpointSchemaError, match=r"AItem\.score: added"):
        drive.run(graph, {"q": "b3"}, config, resume=ne.ResumePolicy(on_change="raise"))
    with pytest.raises(ne.CheckpointSchemaError, match="migrations"):
        drive.run(graph, {"q": "b3"}, config)
    assert runs == Counter()

    def scored(items: list[Any]) -> list[Any]:
        return [
            AItemV2(text=item.text, score=0) if type(item).__name__ == "AItem" else item
            for item in items
        ]

    migrate = ne.ResumePolicy(migrations={"items": scored})
    result = drive.run(graph, {"q": "b3"}, config, resume=migrate)
    assert _history(result) == ["AItem:a1", "BItem:b2", "BItem:b3"]
    assert result["items"][0].score == 0
    assert runs == Counter(take=1)


def test_items_of_a_union_keep_their_own_class_when_they_still_validate(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    _two_turns(drive, saver, config)
    graph = ne.compile(_items(runs, AItemV1, BItemV2), checkpointer=saver)
    planned = drive.plan(graph, config, input={"q": "b3"})
    assert any("kept: still valid" in note for note in planned.notes), planned.notes
    result = drive.run(graph, {"q": "b3"}, config)
    assert _history(result) == ["AItem:a1", "BItem:b2", "BItem:b3"]
    assert runs == Counter(take=1)
