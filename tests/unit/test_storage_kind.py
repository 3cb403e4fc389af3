"""A channel whose LangGraph channel class changed, its value's type unchanged.

LangGraph reads a plain reducer channel's stored values into a ``DeltaChannel`` and a
``DeltaChannel``'s into a plain reducer (its suite's ``test_delta_channel_migration``
and ``test_delta_channel_to_plain``), so neither is a change; a changed value type
beside it still is.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langgraph.channels.delta import DeltaChannel
from langgraph.graph import START, StateGraph

from neograph_ext.decision._changes import ChangeReason, step_changes, storage_kind_changes
from neograph_ext.decision._fingerprint import signature, without_storage_kind
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._stamp import Stamp


def _extend(state: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    return [*state, *(item for write in writes for item in write)]


class Plain(TypedDict):
    log: Annotated[list[str], operator.add]


class Delta(TypedDict):
    log: Annotated[list[str], DeltaChannel(_extend)]


class DeltaOfInts(TypedDict):
    log: Annotated[list[int], DeltaChannel(_extend)]


def _stamp(state: type) -> Stamp:
    builder = StateGraph(state)
    builder.add_node("a", lambda s: {"log": ["a"]})
    builder.add_edge(START, "a")
    return build_stamp(builder)


def _changes(old: type, new: type) -> tuple[Any, ...]:
    return step_changes(frozenset({"a"}), frozenset({"log"}), _stamp(old), _stamp(new))


def test_the_channel_class_alone_is_not_a_change_either_way() -> None:
    assert _stamp(Plain).channels != _stamp(Delta).channels  # stored stamps stay as they were
    assert _changes(Plain, Delta) == ()
    assert _changes(Delta, Plain) == ()
    assert storage_kind_changes(_stamp(Plain), _stamp(Delta)) == ("log",)


def test_a_changed_value_type_beside_it_still_is() -> None:
    for old, new in ((Plain, DeltaOfInts), (Delta, DeltaOfInts)):
        changes = _changes(old, new)
        assert [(c.node, c.reason, c.channel) for c in changes] == [
            ("a", ChangeReason.CHANNEL, "log")
        ]
        assert storage_kind_changes(_stamp(old), _stamp(new)) == ()


def test_only_langgraph_channel_classes_are_dropped() -> None:
    delta = signature(Annotated[list[str], DeltaChannel(_extend)])
    assert without_storage_kind(delta) == signature(list[str])

    class Marker:
        pass

    marked = signature(Annotated[list[str], Marker()])
    assert without_storage_kind(marked) == marked
