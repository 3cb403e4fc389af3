"""Real LangGraph graphs for the resume tests; every node counts its executions."""

from __future__ import annotations

import operator
import sys
import types
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic import BaseModel, create_model

MODULE = "tests.integration.models"


class State(TypedDict, total=False):
    """A log every node appends to (a reducer channel) and one plain value."""

    log: Annotated[list[str], operator.add]
    value: int


def deployed(*models: type[BaseModel]) -> None:
    """Bind ``models`` in their module, as the code a deploy runs: a stored value of that
    name then revives as the class bound, as it would in an application (where only one
    version of a class exists per process)."""
    module = sys.modules.setdefault(MODULE, types.ModuleType(MODULE))
    for made in models:
        setattr(module, made.__name__, made)


def model(name: str = "Analysis", **fields: Any) -> type[BaseModel]:
    """A pydantic model with a fixed module and qualname, so only its fields differ."""
    return create_model(name, __module__=MODULE, **fields)


class Crash(RuntimeError):
    """Raised by a node told to crash, standing in for a process dying mid-run."""


def node(
    name: str, runs: Counter[str], *, returns: object = None, crash: bool = False
) -> Callable[[State], dict[str, Any]]:
    """A node that counts itself, appends its name to the log, and declares ``returns``."""

    def fn(state: State) -> dict[str, Any]:
        runs[name] += 1
        if crash:
            raise Crash(name)
        return {"log": [name]}

    fn.__name__ = name.replace("-", "_")
    if returns is not None:
        fn.__annotations__ = {"state": State, "return": returns}
    return fn


def asking(runs: Counter[str]) -> StateGraph[Any, Any, Any, Any]:
    """``a -> ask -> b``; ``ask`` waits on an ``interrupt()``."""

    def ask(state: State) -> dict[str, Any]:
        runs["ask"] += 1
        return {"log": [f"ask:{interrupt('ok?')}"]}

    builder = StateGraph(State)
    builder.add_node("a", node("a", runs))
    builder.add_node("ask", ask)
    builder.add_node("b", node("b", runs))
    builder.add_edge(START, "a")
    builder.add_edge("a", "ask")
    builder.add_edge("ask", "b")
    builder.add_edge("b", END)
    return builder


def linear(
    runs: Counter[str],
    returns: Mapping[str, object] | None = None,
    *,
    names: Sequence[str] = ("a", "b", "c", "d"),
    crash: str | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """``names[0] -> names[1] -> ...``; ``returns`` sets return annotations per node."""
    returns = returns or {}
    builder = StateGraph(State)
    for name in names:
        builder.add_node(name, node(name, runs, returns=returns.get(name), crash=name == crash))
    builder.add_edge(START, names[0])
    for before, after in pairwise(names):
        builder.add_edge(before, after)
    builder.add_edge(names[-1], END)
    return builder
