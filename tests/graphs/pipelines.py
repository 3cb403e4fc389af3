"""Real LangGraph graphs for the resume tests; every node counts its executions."""

from __future__ import annotations

import operator
import sys
import threading
import time
import types
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Annotated, Any, TypedDict

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic import BaseModel, create_model

MODULE = "tests.integration.models"
"""Where every ``model`` lives: the 0.1.0 fixture database stores values of that module,
so the name stays what it was when the fixture was written."""


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


def as_data(value: Any) -> dict[str, Any]:
    """A stored model as data, whichever class it revived as (a model or a dict; the one
    item of a list channel)."""
    if isinstance(value, list):
        (value,) = value
    return dict(value.model_dump()) if isinstance(value, BaseModel) else dict(value)


class Crash(RuntimeError):
    """Raised by a node told to crash, standing in for a process dying mid-run."""


def node(
    name: str,
    runs: Counter[str],
    *,
    returns: object = None,
    crash: bool = False,
    branches: Mapping[str, threading.Event] | None = None,
) -> Callable[[State], dict[str, Any]]:
    """A node that counts itself, appends its name to the log, and declares ``returns``;
    one of the ``branches`` of a superstep (each sets its event when it finished) crashes
    only once the others finished."""

    def fn(state: State) -> dict[str, Any]:
        runs[name] += 1
        if crash:
            if branches:
                # Parallel branches: crash once the others finished and LangGraph stored
                # their writes, else the crash may cut them short too.
                others = [event for other, event in branches.items() if other != name]
                assert all(event.wait(10) for event in others), "a branch never finished"
                time.sleep(0.1)
            raise Crash(name)
        if branches:
            branches[name].set()
        return {"log": [name]}

    fn.__name__ = name.replace("-", "_")
    if returns is not None:
        fn.__annotations__ = {"state": State, "return": returns}
    return fn


Step = str | Sequence[str]
"""A node, or the nodes of one parallel step."""


def wire(builder: StateGraph[Any, Any, Any, Any], *steps: Step) -> StateGraph[Any, Any, Any, Any]:
    """``builder`` with edges ``START -> steps[0] -> ... -> END``: a parallel step fans out
    from the step before it and is joined by the step after (which waits for all of it)."""
    for before, after in pairwise([START, *steps, END]):
        for name in [after] if isinstance(after, str) else after:
            builder.add_edge(before if isinstance(before, str) else list(before), name)
    return builder


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


DraftV1 = model("Draft", text=(str, ...))
DraftV2 = model("Draft", text=(str, ...), tone=(str, "plain"))
"""A draft's type before and after a deploy that adds a field with a default."""


def approval(
    runs: Counter[str],
    draft_type: Any,
    *,
    ask: bool = True,
    progress: bool = False,
    send: bool = True,
) -> StateGraph[Any, Any, Any, Any]:
    """``draft -> review -> send``: ``review`` asks with ``interrupt()`` when ``ask``,
    writing a custom stream event first when ``progress``; no ``send`` unless ``send``."""
    deployed(draft_type)
    # Functional syntax: the draft's type is this call's argument.
    flow = TypedDict("Flow", {"draft": draft_type, "answer": str}, total=False)  # type: ignore[misc]  # noqa: UP013

    def draft(state: Any) -> dict[str, Any]:
        runs["draft"] += 1
        return {"draft": draft_type(text="hello")}

    def review(state: Any) -> dict[str, Any]:
        runs["review"] += 1
        if progress:
            get_stream_writer()({"progress": "review"})
        return {"answer": interrupt("approve?") if ask else "seen"}

    def sent(state: Any) -> dict[str, Any]:
        runs["send"] += 1
        return {}

    builder = StateGraph(flow)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    if send:
        builder.add_node("send", sent)
    return wire(builder, "draft", "review", *(["send"] if send else []))


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


def diamond(
    runs: Counter[str],
    c_returns: object = None,
    *,
    branches: str = "bc",
    crash: str | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """``a -> (branches...) -> d``, the branches in one superstep; ``c`` declares
    ``c_returns``."""
    builder = StateGraph(State)
    builder.add_node("a", node("a", runs, crash=crash == "a"))
    builder.add_node("d", node("d", runs, crash=crash == "d"))
    finished = {name: threading.Event() for name in branches}
    for name in branches:
        returns = c_returns if name == "c" else None
        crashes = crash == name
        builder.add_node(name, node(name, runs, returns=returns, crash=crashes, branches=finished))
        builder.add_edge("a", name)
    builder.add_edge(START, "a")
    builder.add_edge(list(branches), "d")
    builder.add_edge("d", END)
    return builder
