"""A ``create_agent`` graph the CLI tests point GRAPH at: its ``response_format`` class
(``Answer``) is stored in ``structured_response``, a channel LangGraph types ``Any``."""

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
