"""``create_agent`` graphs the CLI tests point GRAPH at: ``answering``'s ``response_format``
class (``Answer``) is stored in ``structured_response``, a channel LangGraph types ``Any``;
``searching`` and ``searching_v2`` are agents as an app defines them, compiled by
LangChain alone, before and after a deploy that added an argument to their tool."""

from __future__ import annotations

from collections import Counter

from langchain.agents.structured_output import ToolStrategy
from pydantic import BaseModel

import neograph_ext
from tests.graphs.agents import agent, counted_tool


class Answer(BaseModel):
    """The agent's structured response."""

    text: str


class Query(BaseModel):
    """The ``search`` tool's arguments."""

    q: str


class QueryV2(BaseModel):
    """The ``search`` tool's arguments after the deploy: ``limit`` added."""

    q: str
    limit: int = 10


runs: Counter[str] = Counter()
answering = neograph_ext.compile(
    agent(
        runs,
        [counted_tool(runs, Query)],
        ["search", "Answer"],
        response_format=ToolStrategy(Answer),
    ),
    checkpointer=None,
)
"""Searches once, then answers with an ``Answer``."""

searching = agent(runs, [counted_tool(runs, Query)], ["search"])
"""``create_agent(model, tools)``, no neograph-ext in sight: searches once, then answers."""

searching_v2 = agent(runs, [counted_tool(runs, QueryV2)], ["search"])
"""``searching`` after the deploy: its tool takes a ``limit``."""
