"""A counted three-node pipeline whose nodes call a fake chat model that reports usage:
directly, through a tool, and inside a subgraph (what budgets count).

One run makes 4 model calls of ``TOKENS`` tokens each, in 3 supersteps: ``draft`` calls
the model once, ``review`` twice (once through the ``check`` tool), ``publish`` once,
inside a subgraph of its own.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Container
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from tests.graphs.models import AnsweringChat
from tests.graphs.pipelines import wire

__all__ = ["CALLS", "STEPS", "TOKENS", "Crash", "UsageChat", "pipeline"]

TOKENS = 10
"""Tokens each call of ``UsageChat`` reports."""
CALLS = 4
"""Model calls of one whole run of ``pipeline``."""
STEPS = 3
"""Supersteps of one whole run of ``pipeline``."""


class Crash(RuntimeError):
    """What a node told to fail raises, after its model calls."""


class UsageChat(AnsweringChat):
    """A chat model answering ``ok``, reporting ``TOKENS`` tokens in ``usage_metadata``."""

    @property
    def _llm_type(self) -> str:
        return "usage-chat"

    def answer(self, messages: list[BaseMessage]) -> AIMessage:
        usage = {"input_tokens": 7, "output_tokens": 3, "total_tokens": TOKENS}
        return AIMessage(content="ok", usage_metadata=usage)  # type: ignore[arg-type]


class Doc(TypedDict, total=False):
    topic: str
    draft: str
    review: str
    done: str


@tool
def check(text: str) -> str:
    """Check a text with the model."""
    return str(UsageChat().invoke(f"check {text}").content)


def pipeline(
    runs: Counter[str], fail: Container[str] = (), kill: Container[str] = ()
) -> StateGraph[Any, Any, Any, Any]:
    """``draft`` -> ``review`` -> ``publish``; a node named in ``fail`` raises ``Crash``
    after its model calls (a crash whose spend was already paid), one named in ``kill``
    ends the process there (``os._exit``, as a kill would)."""
    model = UsageChat()

    def ended(node: str) -> None:
        if node in kill:
            os._exit(17)
        if node in fail:
            raise Crash(node)

    def draft(state: Doc) -> Doc:
        runs["draft"] += 1
        text = str(model.invoke(f"draft {state.get('topic', '')}").content)
        ended("draft")
        return {"draft": text}

    def review(state: Doc) -> Doc:
        runs["review"] += 1
        checked = check.invoke({"text": state.get("draft", "")})
        text = str(model.invoke(f"review {checked}").content)
        ended("review")
        return {"review": text}

    def write(state: Doc) -> Doc:
        runs["publish"] += 1
        text = str(model.invoke("publish").content)
        ended("publish")
        return {"done": text}

    inner = StateGraph(Doc)
    inner.add_node("write", write)
    inner.add_edge(START, "write")
    inner.add_edge("write", END)

    builder = StateGraph(Doc)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_node("publish", inner.compile())
    wire(builder, "draft", "review", "publish")
    return builder
