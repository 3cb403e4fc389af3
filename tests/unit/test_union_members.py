"""A channel typed as a union of models is blamed only on a step that left in it a value
of a member that changed (``Record.held``), read from the stored value's first bytes."""

from __future__ import annotations

from typing import Any, TypedDict

import ormsgpack
import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from pydantic import BaseModel

from neograph_ext.decision._changes import ChangeReason, step_changes
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._stamp import Stamp
from neograph_ext.storage._storage_rows import stored_class
from tests.graphs.pipelines import MODULE, model

A_PATH, B_PATH = f"{MODULE}:UnionA", f"{MODULE}:UnionB"


def _stamp(a: type[BaseModel], b: type[BaseModel] | None) -> Stamp:
    out: Any = a if b is None else a | b
    builder = StateGraph(TypedDict("UnionState", {"out": out}, total=False))  # type: ignore[operator]
    builder.add_node("w", lambda s: {})
    builder.add_edge(START, "w")
    return build_stamp(builder)


A1, A2 = model("UnionA", x=(int, ...)), model("UnionA", x=(str, ...))
B = model("UnionB", y=(int, ...))
OLD, NEW = _stamp(A1, B), _stamp(A2, B)


def _blamed(held: frozenset[tuple[str, str]], new: Stamp = NEW) -> list[tuple[str, str | None]]:
    changes = step_changes(frozenset({"w"}), frozenset({"out"}), OLD, new, held=held)
    assert all(c.reason is ChangeReason.CHANNEL for c in changes)
    return [(c.node, c.channel) for c in changes]


def test_without_a_record_of_the_member_the_writer_is_blamed_as_before() -> None:
    # A record read before the class of stored values was kept (or of a value of no
    # named class): every writer of the changed channel counts, as it always did.
    assert _blamed(frozenset()) == [("w", "out")]


def test_a_step_that_left_the_unchanged_member_is_not_blamed() -> None:
    assert _blamed(frozenset({("out", B_PATH)})) == []


def test_a_step_that_left_the_changed_member_is_blamed() -> None:
    assert _blamed(frozenset({("out", A_PATH)})) == [("w", "out")]


def test_a_member_no_longer_in_the_union_is_blamed() -> None:
    assert _blamed(frozenset({("out", B_PATH)}), _stamp(A1, None)) == [("w", "out")]


def test_a_class_that_is_no_member_is_blamed() -> None:
    assert _blamed(frozenset({("out", f"{MODULE}:Other")})) == [("w", "out")]


SERDE = JsonPlusSerializer()


@pytest.mark.parametrize("size", [1, 300, 70_000])
def test_the_class_of_a_stored_object_is_read_from_its_first_bytes(size: int) -> None:
    value = model("UnionB", y=(str, ...))(y="x" * size)
    kind, blob = SERDE.dumps_typed(value)
    assert kind == "msgpack"
    assert stored_class(blob) == B_PATH
    seen: list[tuple[int, bytes]] = []
    ormsgpack.unpackb(blob, ext_hook=lambda code, data: seen.append((code, data)))
    assert [stored_class(data, code) for code, data in seen] == [B_PATH]
    assert stored_class(seen[0][1], 7) is None  # a DeltaChannel's snapshot: no class


@pytest.mark.parametrize("value", [{"y": 1}, [1, 2], "text", 3])
def test_plain_data_has_no_stored_class(value: object) -> None:
    _, blob = SERDE.dumps_typed(value)
    assert stored_class(blob) is None
    assert stored_class(blob[:1]) is None
