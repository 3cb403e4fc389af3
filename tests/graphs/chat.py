"""A counted two-turn chat: ``MessagesState`` plus a profile written in turn 1 only and a
summary written every turn."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from pydantic import ConfigDict

import neograph_ext
from tests.drive import Drive, Saver
from tests.graphs.pipelines import deployed, model

ProfileV1 = model("Profile", who=(str, ...))
ProfileV2 = model("Profile", who=(str, ...), tone=(str, "plain"))  # additive, compatible
# Renamed field: needs a migration. Extra fields allowed: a stored ProfileV1 value revives
# through this class (the one deployed) by model_construct, which keeps `who` only so.
ProfileV3 = model("Profile", __config__=ConfigDict(extra="allow"), full_name=(str, ...))
SummaryV1 = model("Summary", text=(str, ...))
SummaryV2 = model("Summary", text=(str, ...), turns=(int, 0))


def chat(
    runs: Counter[str], profile: Any = ProfileV1, summary: Any = SummaryV1
) -> StateGraph[Any, Any, Any, Any]:
    """``extract`` (turn 1 only: writes ``profile``) then ``reply`` (every turn).

    ``reply`` asks the user first (LangGraph's ``interrupt``) when the message is ``ask``.
    """
    deployed(profile, summary)
    # Functional syntax: the channel types are this call's arguments.
    state = TypedDict(  # type: ignore[name-match]  # noqa: UP013
        "Chat",
        {
            "messages": Annotated[list[AnyMessage], add_messages],
            "profile": profile,
            "summary": summary,
        },
        total=False,
    )

    def extract(state: Any) -> dict[str, Any]:
        runs["extract"] += 1
        fields = profile.model_fields
        key = "who" if "who" in fields else "full_name"
        return {"profile": profile(**{key: "Ada"})}

    def reply(state: Any) -> dict[str, Any]:
        runs["reply"] += 1
        said = state["messages"][-1].content
        if said == "ask":
            said = f"ask: {interrupt('may I?')}"
        return {"messages": [AIMessage(f"re: {said}")], "summary": summary(text=str(said))}

    return extracting_once(state, extract, reply)


def extracting_once(
    state: Any, extract: Callable[..., Any], reply: Callable[..., Any]
) -> StateGraph[Any, Any, Any, Any]:
    """``extract`` (while no ``profile`` is stored: the first turn) then ``reply``."""
    builder = StateGraph(state).add_node("extract", extract).add_node("reply", reply)
    builder.add_conditional_edges(
        START, lambda s: "reply" if s.get("profile") else "extract", ["extract", "reply"]
    )
    return builder.add_edge("extract", "reply").add_edge("reply", END)


def say(text: str) -> dict[str, Any]:
    """One user turn's input."""
    return {"messages": [HumanMessage(text)]}


def two_turns(drive: Drive, saver: Saver, config: RunnableConfig) -> None:
    """Two turns of the first release of ``chat`` on the thread, its runs uncounted."""
    graph = neograph_ext.compile(chat(Counter()), checkpointer=saver)
    drive.run(graph, say("hi"), config)
    drive.run(graph, say("again"), config)
