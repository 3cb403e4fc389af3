"""Graphs whose state lives in a ``DeltaChannel`` or a plain reducer channel."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypedDict

from langgraph.channels.delta import DeltaChannel
from langgraph.graph import StateGraph

from tests.graphs.pipelines import wire

Builder = StateGraph[Any, Any, Any, Any]


def extend(state: list[str], writes: Sequence[list[str]]) -> list[str]:
    """A batching-invariant reducer, as ``DeltaChannel`` requires."""
    return [*state, *(item for write in writes for item in write)]


class Far(TypedDict, total=False):
    """A DeltaChannel whose snapshot is far back: only the first checkpoint has one."""

    log: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=1000)]


class Near(TypedDict, total=False):
    """A DeltaChannel snapshotted at every update."""

    log: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=1)]


class Plain(TypedDict, total=False):
    """The same channel as a plain reducer channel."""

    log: Annotated[list[str], operator.add]


STATES: dict[str, type] = {"delta-far": Far, "delta-near": Near, "plain": Plain}


def fan(state: type, runs: Counter[str], b: str = "b1", crash: str | None = None) -> Builder:
    """``a -> (b | c) -> d``, each appending its label to ``log``; ``b`` writes ``b``."""

    def step(name: str, label: str) -> Callable[[dict[str, Any]], dict[str, list[str]]]:
        def fn(values: dict[str, Any]) -> dict[str, list[str]]:
            runs[name] += 1
            if name == crash:
                raise RuntimeError(f"{name} crashed")
            return {"log": [label]}

        return fn

    builder = StateGraph(state)
    for name, label in (("a", "a1"), ("b", b), ("c", "c1"), ("d", "d1")):
        builder.add_node(name, step(name, label))
    wire(builder, "a", ["b", "c"], "d")
    return builder
