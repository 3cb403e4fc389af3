"""Two releases of the shapes a deploy used to block or to re-run needlessly: a
``create_agent`` with a structured response whose model gains a required field, and a
chat whose cached LLM node ``ask`` sits before a node whose output type changes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langgraph.graph import StateGraph
from langgraph.types import CachePolicy
from pydantic import BaseModel

from tests.graphs.agents import agent, counted_tool
from tests.graphs.pipelines import deployed, model, wire

CITY = model("SearchArgs", city=(str, ...))
WEATHER = model("Weather", temp=(float, ...))
WEATHER_V2 = model("Weather", temp=(float, ...), humidity=(int, ...))
"""The response model of the agent's first release, and of its second."""


def weather_agent(
    runs: Counter[str],
    weather: type[BaseModel],
    hooks: Sequence[Callable[[Counter[str]], AgentMiddleware[Any, Any, Any]]] = (),
    strategy: Callable[[type], Any] = ToolStrategy,
) -> Any:
    """``create_agent`` that calls ``search`` once, then answers with ``weather``."""
    deployed(weather)
    tools = [counted_tool(runs, CITY)]
    # A ToolStrategy (a bare schema too) answers by calling the tool named after it.
    script = ["search"] if strategy is ProviderStrategy else ["search", "Weather"]
    return agent(runs, tools, script, middleware=hooks, response_format=strategy(weather))


DOC = {
    "old": model("Doc", title=(str, ...)),
    "new": model("Doc", title=(str, ...), lang=(str, "en")),
}
ANSWER = {
    "old": model("Answer", text=(str, ...)),
    "new": model("Answer", text=(str, ...), score=(float, 0.0)),
}
REPORT = {
    "old": model("Report", body=(str, ...)),
    "new": model("Report", body=(str, ...), pages=(int, 1)),
}
"""Each type of the chat, as the first release and a second release that changes it."""


def cached_chat(
    runs: Counter[str], policy: CachePolicy[Any], changed: str | None = None
) -> StateGraph[Any, Any, Any, Any]:
    """``ask`` (cached by ``policy``, the LLM call: reads the document, writes the
    answer), then ``write`` (writes the report from the answer); ``changed`` names the
    type (``doc``, ``answer``, ``report``) the release changes, None for the first."""
    doc, answer, report = (
        kinds["new" if name == changed else "old"]
        for name, kinds in (("doc", DOC), ("answer", ANSWER), ("report", REPORT))
    )
    deployed(doc, answer, report)
    fields = {"doc": doc, "answer": answer, "report": report}
    state = TypedDict("Chat", fields, total=False)  # type: ignore[misc]

    def ask(state: Any) -> Any:
        runs["ask"] += 1
        return {"answer": answer(text=state["doc"].title)}

    def write(state: Any) -> Any:
        runs["write"] += 1
        return {"report": report(body=state["answer"].text)}

    ask.__annotations__["return"] = TypedDict("Asked", {"answer": answer})  # type: ignore[operator]
    write.__annotations__["return"] = TypedDict("Written", {"report": report})  # type: ignore[operator]
    builder = StateGraph(state)
    builder.add_node("ask", ask, cache_policy=policy)
    builder.add_node("write", write)
    return wire(builder, "ask", "write")
