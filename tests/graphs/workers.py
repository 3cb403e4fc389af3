"""A supervisor handing off to a worker subgraph it calls from code (``sub.invoke(state)``,
``await sub.ainvoke``, ``sub.stream``, or a tool that invokes it), as multi-agent
supervisors and deep agents do; every node counts its executions.

The worker is ``outline -> draft -> review``; ``review`` waits on ``interrupt()`` when
asked to. Release 2 adds a required field ``words`` to the ``Draft`` that ``draft``
returns: only the called graph's types change, the supervisor's state types nothing.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal, TypedDict

from langchain_core.tools import tool
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt
from pydantic import BaseModel

from tests.graphs.agents import agent
from tests.graphs.pipelines import deployed, model

Call = Literal["invoke", "ainvoke", "stream"]

DRAFT_V1 = model("Draft", text=(str, ...))
DRAFT_V2 = model("Draft", text=(str, ...), words=(int, ...))


class Work(TypedDict, total=False):
    """The worker's state, and the supervisor's: the supervisor types the draft loosely."""

    topic: str
    notes: str
    outline: str
    draft: Any
    review: str


def worker(runs: Counter[str], draft_model: type[BaseModel], ask: bool) -> Any:
    """The compiled worker subgraph (compiled by plain LangGraph, as users do)."""
    deployed(draft_model)

    def outline(state: Work) -> dict[str, Any]:
        runs["outline"] += 1
        return {"outline": f"outline of {state.get('topic')}"}

    def draft(state: Work) -> dict[str, Any]:
        runs["draft"] += 1
        words = {"words": 1} if "words" in draft_model.model_fields else {}
        return {"draft": draft_model(text="d", **words)}

    draft.__annotations__["return"] = draft_model  # what the deploy declares

    def review(state: Work) -> dict[str, Any]:
        runs["review"] += 1
        answer = interrupt("approve the draft?") if ask else "auto"
        return {"review": str(answer)}

    return (
        StateGraph(Work).add_sequence([outline, draft, review]).add_edge(START, "outline").compile()
    )


def supervisor(
    runs: Counter[str], draft_model: type[BaseModel], call: Call, ask: bool = True
) -> StateGraph[Any, Any, Any, Any]:
    """``research``, then the ``worker`` node, which calls the worker subgraph ``call``'s
    way."""
    sub = worker(runs, draft_model, ask)

    def research(state: Work) -> dict[str, Any]:
        runs["research"] += 1
        return {"notes": "n"}

    builder = StateGraph(Work)
    builder.add_node("research", research)
    builder.add_edge(START, "research")
    if call == "ainvoke":

        async def ahand_off(state: Work) -> dict[str, Any]:
            runs["worker"] += 1
            return await sub.ainvoke(state)  # type: ignore[no-any-return]

        builder.add_node("worker", ahand_off)
    elif call == "stream":

        def streamed(state: Work) -> dict[str, Any]:
            runs["worker"] += 1
            *_, last = sub.stream(state, stream_mode="values")
            return last  # type: ignore[no-any-return]

        builder.add_node("worker", streamed)
    else:

        def hand_off(state: Work) -> dict[str, Any]:
            runs["worker"] += 1
            return sub.invoke(state)  # type: ignore[no-any-return]

        builder.add_node("worker", hand_off)
    builder.add_edge("research", "worker")
    return builder


def built_per_call(runs: Counter[str]) -> StateGraph[Any, Any, Any, Any]:
    """``research``, then a ``worker`` node that compiles the worker in its body and calls
    it: no object holds the graph before the node runs, so only the saver shows it."""

    def research(state: Work) -> dict[str, Any]:
        runs["research"] += 1
        return {"notes": "n"}

    def hand_off(state: Work) -> dict[str, Any]:
        runs["worker"] += 1
        return worker(runs, DRAFT_V1, ask=True).invoke(state)  # type: ignore[no-any-return]

    builder = StateGraph(Work).add_node("research", research).add_node("worker", hand_off)
    return builder.add_edge(START, "research").add_edge("research", "worker")


def by_tool(runs: Counter[str], draft_model: type[BaseModel]) -> Any:
    """``create_agent`` whose model calls the ``write_draft`` tool once, which invokes the
    worker subgraph (its ``review`` answering by itself)."""
    sub = worker(runs, draft_model, ask=False)

    @tool
    def write_draft(topic: str) -> str:
        """Have the worker write a draft about ``topic``."""
        runs["write_draft"] += 1
        return str(sub.invoke({"topic": topic})["draft"])

    return agent(runs, [write_draft], [("write_draft", {"topic": "t"})])
