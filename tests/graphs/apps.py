"""Graphs shaped like LangGraph's own tutorials; every node counts its executions.

Each builder takes the types a "deploy" uses, so a test builds the old and the new
code side by side, as two processes would.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel, ConfigDict

from tests.graphs.models import AnsweringChat
from tests.graphs.pipelines import Crash, model, wire


class Outer(TypedDict, total=False):
    topic: str
    draft: str


def writer(
    runs: Counter[str],
    outline: type[BaseModel],
    *,
    crash: bool = False,
    checkpointer: bool | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """``plan -> write``: ``plan`` fills an ``outline`` of type ``outline``; ``write``
    checks it got exactly that type (a revived stale value fails there)."""

    # Functional syntax: under ``from __future__ import annotations`` a class body would
    # hold the string "outline", which resolves to this module's function of that name.
    Inner = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "Inner", {"topic": str, "outline": outline, "draft": str}, total=False
    )

    def plan(state: Inner) -> dict[str, Any]:
        runs["plan"] += 1
        title_type = outline.model_fields["title"].annotation
        return {"outline": outline(title=1 if title_type is int else "t")}

    def write(state: Inner) -> dict[str, Any]:
        runs["write"] += 1
        if crash:
            raise Crash("write")
        got = state["outline"]
        title_type = outline.model_fields["title"].annotation
        if not isinstance(got, outline) or type(got.title) is not title_type:
            raise TypeError(f"stale outline revived: {got!r}")
        return {"draft": f"draft of {got.title}"}

    builder = StateGraph(Inner)
    builder.add_node("plan", plan)
    builder.add_node("write", write)
    wire(builder, "plan", "write")
    return builder


def with_subgraph(
    runs: Counter[str], sub: Runnable[Any, Any], *, name: str = "writer"
) -> StateGraph[Any, Any, Any, Any]:
    """``research -> <name>``, where ``<name>`` is the compiled subgraph ``sub``."""

    def research(state: Outer) -> dict[str, Any]:
        runs[f"research@{name}"] += 1
        return {"topic": state.get("topic", "") + "!"}

    builder = StateGraph(Outer)
    builder.add_node("research", research)
    builder.add_node(name, sub)
    builder.add_edge(START, "research")
    builder.add_edge("research", name)
    builder.add_edge(name, END)
    return builder


def outline(title: type) -> type[BaseModel]:
    return model("Outline", title=(title, ...))


# A ReAct loop with tools, written by hand and prebuilt.


def search_tool(runs: Counter[str], args: type[BaseModel], *, crash_once: bool = False) -> BaseTool:
    """A tool whose argument schema is ``args``; ``crash_once`` fails its first call."""

    def search(**kwargs: Any) -> str:
        runs["search"] += 1
        if crash_once and runs["search"] == 1:
            raise Crash("search")
        parsed = args(**kwargs)
        return f"found {parsed.model_dump()}"

    return StructuredTool.from_function(
        search, name="search", description="Search.", args_schema=args
    )


def tool_loop(
    runs: Counter[str], tools: Sequence[BaseTool], call: dict[str, Any]
) -> StateGraph[Any, Any, Any, Any]:
    """``agent -> tools -> agent``; the agent asks for ``call`` once, then answers."""

    def agent(state: MessagesState) -> dict[str, Any]:
        runs["agent"] += 1
        if isinstance(state["messages"][-1], ToolMessage):
            return {"messages": [AIMessage(content="done")]}
        tool_call = {"name": "search", "args": call, "id": f"call-{runs['agent']}"}
        return {"messages": [AIMessage(content="", tool_calls=[tool_call])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(list(tools)))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder


class FakeChat(AnsweringChat):
    """A chat model without keys: calls the ``search`` tool once, then answers.

    Structured output returns ``answer`` built by ``respond`` from the schema asked for.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    runs: Any  # Any: pydantic would copy a Counter, and the test would count nothing
    call: dict[str, Any]

    @property
    def _llm_type(self) -> str:
        return "fake"

    def answer(self, messages: list[BaseMessage]) -> AIMessage:
        self.runs["model"] += 1
        if isinstance(messages[-1], HumanMessage):
            tool_call = {"name": "search", "args": self.call, "id": "call-1"}
            message = AIMessage(content="", tool_calls=[tool_call])
        else:
            message = AIMessage(content="done")
        return message

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeChat:  # type: ignore[override]
        return self

    def with_structured_output(  # type: ignore[override]
        self, schema: Any, **kwargs: Any
    ) -> Runnable[Any, Any]:
        runs = self.runs

        def respond(messages: Any) -> Any:
            runs["respond"] += 1
            return schema(
                **{name: _sample(field.annotation) for name, field in schema.model_fields.items()}
            )

        return RunnableLambda(respond)


def _sample(tp: object) -> object:
    samples: dict[object, object] = {int: 1, str: "s", float: 1.5, bool: True}
    return samples.get(tp, "s")
