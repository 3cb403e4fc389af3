"""What a subgraph's own checkpoint must read back (``_subgraph_misread``): which
subgraphs are checked, with which findings, and what a misread value inside one says.
Builders only: nothing runs, no database."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from pydantic import BaseModel, RootModel

import neograph_ext as ne
from neograph_ext.decision._changes import ChangeReason
from neograph_ext.decision._revive import Revival
from neograph_ext.decision._subgraph_misread import inner_changes, inner_misread, subgraph_revivals


class Draft(BaseModel):
    text: str


def _local() -> type[BaseModel]:
    class Local(BaseModel):
        text: str

    return Local


class Plain(TypedDict, total=False):
    n: int


class Drafted(TypedDict, total=False):
    draft: Draft


def _node(state: Any) -> dict[str, Any]:
    return {}


def _parent(**subgraphs: Any) -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(Plain)
    for name, sub in subgraphs.items():
        builder.add_node(name, sub)
        builder.add_edge(START, name)
    return builder


def _sub(schema: Any) -> StateGraph[Any, Any, Any, Any]:
    return StateGraph(schema).add_node("inner", _node).add_edge(START, "inner")


def test_subgraphs_declaring_classes_stored_by_path_are_checked() -> None:
    local = _local()
    Held = TypedDict("Held", {"draft": local}, total=False)  # type: ignore[misc]  # noqa: UP013
    stamped = ne.compile(_sub(Held), checkpointer=InMemorySaver())
    builder = _parent(
        plain=_sub(Plain).compile(), drafted=_sub(Drafted).compile(), held=_sub(Held).compile()
    )
    builder.add_node("stamped", stamped)
    found, findings = subgraph_revivals(builder, True)
    assert sorted(found) == ["drafted", "held", "stamped"]  # `plain` holds no such class
    assert found["stamped"] is stamped.neograph_ext_revival
    # Only the plain subgraph's finding is the parent's: `stamped` reported its own.
    [finding] = findings
    assert finding.where == ("subgraph `held` channel `draft`",)
    assert found["held"].unrevivable == {"draft"}


class Tags(RootModel[list[str]]):
    pass


class Tagged(TypedDict, total=False):
    tags: Tags


def test_a_root_model_is_validated_on_read_only_inside_a_subgraph_neograph_ext_compiled() -> None:
    stamped = ne.compile(_sub(Tagged), checkpointer=InMemorySaver())
    found, _ = subgraph_revivals(_parent(plain=_sub(Tagged).compile(), stamped=stamped), True)
    assert found["stamped"].validated == {"tags"} and not found["stamped"].unrevivable
    # No node of a subgraph LangGraph alone compiled is handed the data validated.
    assert found["plain"].unrevivable == {"tags"} and not found["plain"].validated
    assert not found["plain"].findings[0].rebuilt


def test_a_misread_value_inside_names_its_subgraph_node() -> None:
    revivals = {"sub": Revival({"draft": Draft}, unrevivable=frozenset({"draft"}))}
    found, lost = inner_misread(revivals, {"sub": {"draft": {"text": "a"}}})
    why = "in its subgraph's checkpoint, stored value of `draft` does not read back as `Draft`"
    assert found == {"sub": f"{why}: got `dict`"} and lost == {"sub"}
    assert inner_misread(revivals, {"sub": {"draft": Draft(text="a")}}) == ({}, frozenset())
    [change] = inner_changes(found)
    assert change.node == "sub" and change.reason is ChangeReason.STORED_VALUE
    assert change.describe() == f"node `sub`: {why}: got `dict`"
