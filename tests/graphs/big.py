"""Graphs the size of real apps, for measuring what neograph-ext adds to metadata."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from pydantic import BaseModel, create_model

from tests.graphs.pipelines import MODULE

NODES = 30
FIELDS = 12


def _model(name: str, **extra: Any) -> type[BaseModel]:
    fields: dict[str, Any] = {f"field_{i:02d}": (str, "") for i in range(FIELDS)}
    fields.update(extra)
    return create_model(name, __module__=MODULE, **fields)


def output_model(index: int, *, deep_float: bool = False) -> type[BaseModel]:
    """Node ``index``'s output: a model three levels deep, each level a dozen fields."""
    deep = _model(f"Deep{index:02d}", score=(float if deep_float else int, 0), tags=(list[str], []))
    inner = _model(f"Inner{index:02d}", deep=(deep, deep()), items=(dict[str, list[int]], {}))
    return _model(f"Output{index:02d}", inner=(inner, inner()), notes=(list[str], []))


def wide(runs: Counter[str], *, changed: int | None = None) -> StateGraph[Any, Any, Any, Any]:
    """``n00 -> n01 -> ... -> n29``; node ``nK`` writes key ``kK``, a large nested model.

    ``changed=K``: ``Output<K>.inner.deep.score`` is a float instead of an int.
    """
    models = [output_model(i, deep_float=i == changed) for i in range(NODES)]
    state = TypedDict(  # type: ignore[misc]
        "WideState", {f"k{i:02d}": models[i] for i in range(NODES)}, total=False
    )
    builder = StateGraph(state)

    def make(i: int) -> Callable[[Any], dict[str, Any]]:
        def node(_: Any) -> dict[str, Any]:
            runs[f"n{i:02d}"] += 1
            return {f"k{i:02d}": models[i]()}

        return node

    for i in range(NODES):
        builder.add_node(f"n{i:02d}", make(i))
        builder.add_edge(START if i == 0 else f"n{i - 1:02d}", f"n{i:02d}")
    return builder


def chat(runs: Counter[str]) -> StateGraph[Any, Any, Any, Any]:
    """A one-node ``MessagesState`` agent whose model streams a few tokens."""

    def agent(state: MessagesState) -> dict[str, Any]:
        runs["agent"] += 1
        model = GenericFakeChatModel(messages=iter([AIMessage(content="one two three four")]))
        return {"messages": [model.invoke(state["messages"])]}

    return StateGraph(MessagesState).add_node("agent", agent).add_edge(START, "agent")
