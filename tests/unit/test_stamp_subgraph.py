"""A compiled subgraph used as a node is fingerprinted by the stamp it carries."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import START, StateGraph

import neograph_ext
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._stamp import Stamped


class Inner(TypedDict):
    text: str


def inner_builder() -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(Inner)
    builder.add_node("x", lambda state: {"text": state["text"] + "!"})
    builder.add_edge(START, "x")
    return builder


def parent_of(subgraph: object) -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(Inner)
    builder.add_node("sub", subgraph)  # type: ignore[call-overload]
    builder.add_edge(START, "sub")
    return builder


def test_a_stamped_subgraph_counts_with_its_own_compile_options() -> None:
    v1 = neograph_ext.compile(inner_builder(), versions={"x": "v1"})
    v2 = neograph_ext.compile(inner_builder(), versions={"x": "v2"})
    assert isinstance(v1, Stamped)
    sub_v1 = build_stamp(parent_of(v1)).nodes["sub"]
    sub_v2 = build_stamp(parent_of(v2)).nodes["sub"]
    # The inner stamp is the one compile() made (versions included), not its builder's.
    assert sub_v1.sub is not None and sub_v1.sub["x"] == v1.neograph_ext_stamp.nodes["x"].fp
    assert sub_v1.fp != sub_v2.fp


def test_a_plainly_compiled_subgraph_is_fingerprinted_from_its_builder() -> None:
    plain = inner_builder().compile()
    assert not isinstance(plain, Stamped)
    sub = build_stamp(parent_of(plain)).nodes["sub"]
    assert sub.sub is not None and sub.sub["x"] == build_stamp(inner_builder()).nodes["x"].fp
