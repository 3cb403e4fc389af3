"""``is_stamped``, ``unrevivable_types``, ``declared_classes`` and ``stale_values``: what a
script asks of a compiled graph."""

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


class Noted(BaseModel):
    """``Note`` after a deploy that made ``tags`` required."""

    text: str
    tags: list[str]


class Notes(TypedDict, total=False):
    note: Noted


def test_declared_classes_are_those_that_read_back() -> None:
    assert ne.declared_classes(ne.compile(_builder(Noting))) == {(__name__, "Note")}
    assert ne.declared_classes(ne.compile(_local())) == frozenset()


def test_stale_values_name_a_value_that_no_longer_validates_or_reads_back_as_data() -> None:
    graph = ne.compile(_builder(Notes))
    assert ne.stale_values(graph, {"note": Noted(text="a", tags=[])}) == {}
    stored = Noted.model_construct(text="a")  # as the serializer revives a value of old code
    assert ne.stale_values(graph, {"note": stored}) == {
        "note": "stored value of `note` does not validate as declared now: tags: Field required"
    }
    assert ne.stale_values(graph, {"note": {"text": "a", "tags": []}}) == {
        "note": "stored value of `note` does not read back as `Noted`: got `dict`"
    }
    with pytest.raises(ne.GraphError, match="carries no neograph-ext stamp"):
        ne.stale_values(_builder(Notes).compile(), {})
