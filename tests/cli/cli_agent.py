"""``create_agent`` graphs the CLI tests point GRAPH at: ``answering``'s ``response_format``
class (``Answer``) is stored in ``structured_response``, a channel LangGraph types ``Any``;
``searching`` and ``searching_v2`` are agents as an app defines them, compiled by
LangChain alone, before and after a deploy that added an argument to their tool."""

from __future__ import annotations

from collections import Counter

from langchain.agents.structured_output import ToolStrategy
from pydantic import BaseModel

import neograph_ext
from tests.graphs.agents import agent, artifact_tool, counted_tool


class Answer(BaseModel):
    """The agent's structured response."""

    text: str


class Query(BaseModel):
    """The ``search`` tool's arguments."""

    q: str


class Reading(BaseModel):
    """The artifact the ``lookup`` tool returns."""

    mm: int


class ReadingV2(BaseModel):
    """``Reading`` after a deploy: ``mm`` is a float."""

    mm: float


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

reading = agent(runs, [artifact_tool(runs, Query, Reading)], ["lookup"])
"""Calls ``lookup`` (its artifact a ``Reading``) once, then answers."""

reading_v2 = agent(runs, [artifact_tool(runs, Query, ReadingV2)], ["lookup"])
"""``reading`` after the deploy: the tool's output changed, so its step and the final
model call re-run, and the model call that asked for the tool is kept."""
