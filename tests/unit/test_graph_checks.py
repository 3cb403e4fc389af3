"""``is_stamped`` and ``unrevivable_types``: what a script asks of a compiled graph."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from pydantic import BaseModel

import neograph_ext as ne


class Note(BaseModel):
    """A module-level class: its values read back as themselves."""

    text: str


class Noting(TypedDict, total=False):
    note: Note


def _builder(state: type[Any]) -> StateGraph[Any, Any, Any, Any]:
    def write(state: Any) -> dict[str, Any]:
        return {}

    return StateGraph(state).add_node(write).add_edge(START, "write")


def _local() -> StateGraph[Any, Any, Any, Any]:
    class Draft(BaseModel):  # a local class: its values cannot read back from a checkpoint
        text: str

    drafting = TypedDict("Drafting", {"draft": Draft}, total=False)  # type: ignore[misc]  # noqa: UP013
    return _builder(drafting)


def test_only_what_compile_made_is_stamped() -> None:
    graph = ne.compile(_builder(Noting))

    assert ne.is_stamped(graph) and ne.is_stamped(graph.copy())
    assert ne.is_stamped(graph.with_config(tags=["x"]))
    assert not ne.is_stamped(_builder(Noting).compile())
    assert not ne.is_stamped(_builder(Noting)) and not ne.is_stamped(None)


def test_unrevivable_types_name_the_class_where_it_is_declared_and_the_fix() -> None:
    [found] = ne.unrevivable_types(ne.compile(_local()))

    assert "_local.<locals>.Draft" in found and "channel `draft`" in found
    assert "local class" in found and "Fix:" in found
    assert ne.unrevivable_types(ne.compile(_builder(Noting))) == ()


def test_unrevivable_types_refuse_a_plain_graph() -> None:
    with pytest.raises(ne.GraphError, match="carries no neograph-ext stamp"):
        ne.unrevivable_types(_builder(Noting).compile())
