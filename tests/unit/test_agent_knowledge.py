"""What ``_langgraph`` knows about the agent builders (langchain 1.5.2, deepagents 0.7.32,
langgraph-prebuilt 1.1.3), checked against the installed ones: each test fails loudly
when an upgrade changes it. Kept apart from ``test_langgraph_knowledge``: these need the
agent libraries, which the oldest-versions pass does not install."""

from __future__ import annotations

from collections import Counter
from typing import Any, TypeVar, get_args, get_type_hints

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.prebuilt import create_react_agent
from pydantic import BaseModel

from neograph_ext.decision._introspect import build_stamp, channel_types
from neograph_ext.decision._langgraph_agents import (
    RESPONSE_CHANNEL,
    makes_tool_calls,
    overwrites,
    response_schema,
    sub_agents,
    tool_callables,
    tool_objects,
)
from tests.graphs.agents import Audit, ScriptedChat, agent, counted_tool, deep_agent


class Weather(BaseModel):
    temp: float


class Rain(BaseModel):
    mm: int


class City(BaseModel):
    city: str


JSON_SCHEMA = {"title": "W", "type": "object", "properties": {"t": {"type": "number"}}}


@pytest.mark.parametrize(
    ("given", "schema"),
    [
        (Weather, Weather),
        (ToolStrategy(Weather), Weather),
        (ProviderStrategy(Weather), Weather),
        (ToolStrategy(Weather | Rain), Weather | Rain),
        (JSON_SCHEMA, JSON_SCHEMA),
        (None, None),
    ],
    ids=["model", "tool", "provider", "union", "json", "none"],
)
def test_create_agents_response_schema_is_read_from_its_model_node(
    given: object, schema: object
) -> None:
    built = agent(Counter(), [counted_tool(Counter(), City)], [], response_format=given)
    assert response_schema(built.builder.nodes["model"].runnable) == schema
    assert response_schema(built.builder.nodes["tools"].runnable) is None


def test_create_agent_types_the_structured_response_with_a_type_variable() -> None:
    """Why the response schema is read from the model node: the state says nothing.
    When this fails, LangChain resolves the type itself and the override can go."""
    built = agent(Counter(), [], [], response_format=Weather)
    hints = get_type_hints(built.builder.state_schema, include_extras=True)
    assert any(isinstance(arg, TypeVar) for arg in _flatten(hints[RESPONSE_CHANNEL]))
    # What the stamp, keeping and reading back judge the stored response by.
    assert channel_types(built.builder)[RESPONSE_CHANNEL] is Weather


def _flatten(tp: object) -> list[object]:
    return [tp, *(inner for arg in get_args(tp) for inner in _flatten(arg))]


def test_create_agents_model_call_clears_the_structured_response_with_none() -> None:
    """Every model call without a structured response writes None there (the stored
    value of the channel after that step); the last call writes the response."""
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "t"}}
    runs: Counter[str] = Counter()
    built = agent(
        runs,
        [counted_tool(runs, City)],
        ["search", "Weather"],
        response_format=ToolStrategy(Weather),
    )
    built.builder.compile(checkpointer=saver).invoke(
        {"messages": [HumanMessage("hi")]}, config, durability="sync"
    )
    steps = {t.metadata["step"]: t.checkpoint["channel_values"] for t in saver.list(config)}
    assert RESPONSE_CHANNEL in steps[1] and steps[1][RESPONSE_CHANNEL] is None  # model
    assert isinstance(steps[3][RESPONSE_CHANNEL], Weather)  # the final model call
    assert runs["model"] == 2


class _Wrap(AgentMiddleware[Any, Any, Any]):
    """A ``wrap_model_call`` middleware: it is handed the request, the whole state in it."""

    def __init__(self, runs: Counter[str]) -> None:
        super().__init__()

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request)


class _Before(AgentMiddleware[Any, Any, Any]):
    """A ``before_model`` hook: its node starts each turn, on the whole state."""

    def __init__(self, runs: Counter[str]) -> None:
        super().__init__()

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return None


@pytest.mark.parametrize(
    ("middleware", "replaced"),
    [((), True), ((Audit,), True), ((_Wrap,), False), ((_Before,), False)],
    ids=["none", "after_model", "wrap_model_call", "before_model"],
)
def test_a_turn_of_create_agent_starts_with_its_model_call_writing_the_response(
    middleware: tuple[type[Any], ...], replaced: bool
) -> None:
    """The model node writes the structured response on every call (the response or
    None, ``test_create_agents_model_call_clears_the_structured_response_with_none``)
    and starts each turn; a ``wrap_model_call`` middleware (found by the name of the
    handler the node closes over) may read the stored one, and so may a hook before."""
    built = agent(Counter(), [], [], middleware=middleware, response_format=ToolStrategy(Weather))
    model = built.builder.nodes["model"].runnable
    assert (overwrites(model) == {RESPONSE_CHANNEL}) is (_Wrap not in middleware)
    assert build_stamp(built.builder).replaced == ((RESPONSE_CHANNEL,) if replaced else None)
    paused = build_stamp(built.builder, paused_before=["model"]).replaced
    assert paused is None
    plain = agent(Counter(), [], [], middleware=middleware)
    assert overwrites(plain.builder.nodes["model"].runnable) == frozenset()


def test_with_after_model_middleware_the_hook_routes_to_the_tools() -> None:
    """Why the model node, not the router, owns the tool schemas."""
    built = agent(Counter(), [counted_tool(Counter(), City)], [], middleware=[Audit])
    nodes, branches = built.builder.nodes, built.builder.branches
    assert ("model", "Audit.after_model") in built.builder.edges
    assert "model" not in branches
    assert "tools" in next(iter(branches["Audit.after_model"].values())).ends.values()
    assert makes_tool_calls(nodes["model"].runnable)
    assert not makes_tool_calls(nodes["Audit.after_model"].runnable)
    assert not makes_tool_calls(nodes["tools"].runnable)


def test_with_a_post_model_hook_the_react_agents_hook_routes_to_the_tools() -> None:
    tool = counted_tool(Counter(), City)
    built = create_react_agent(
        ScriptedChat(runs=Counter()), [tool], post_model_hook=lambda state: {}
    )
    assert ("agent", "post_model_hook") in built.builder.edges
    assert "tools" in next(iter(built.builder.branches["post_model_hook"].values())).ends
    assert makes_tool_calls(built.builder.nodes["agent"].runnable)
    assert not makes_tool_calls(built.builder.nodes["post_model_hook"].runnable)


def test_deep_agents_task_tool_holds_its_compiled_sub_agents() -> None:
    built = deep_agent(Counter(), [counted_tool(Counter(), City)])
    tools = tool_objects(built.builder.nodes["tools"].runnable)
    assert tools is not None and "task" in tools
    graphs = sub_agents(tools["task"])
    assert graphs is not None and "researcher" in graphs
    researcher = graphs["researcher"]
    assert isinstance(getattr(researcher, "builder", None), StateGraph)
    inner = tool_objects(researcher.builder.nodes["tools"].runnable)  # type: ignore[attr-defined]
    assert inner is not None and "search" in inner
    assert sub_agents(tools["write_file"]) is None
    assert "files" in channel_types(built.builder)


def _lookup(city: str) -> tuple[str, Weather]:
    """Looks the weather up."""
    return city, Weather(temp=1.0)


async def _alookup(city: str) -> tuple[str, Weather]:
    """Looks the weather up."""
    return city, Weather(temp=1.0)


class _Lookup(BaseTool):
    name: str = "by_class"
    description: str = "Looks the weather up."

    def _run(self, city: str) -> Weather:
        return Weather(temp=1.0)


def test_a_tools_function_is_where_its_return_type_is_declared() -> None:
    tools = [
        tool("decorated", response_format="content_and_artifact")(_lookup),
        StructuredTool.from_function(coroutine=_alookup, name="async_only"),
        _Lookup(),
    ]
    built = agent(Counter(), tools, [])
    found = tool_callables(built.builder.nodes["tools"].runnable)
    assert found == {"decorated": _lookup, "async_only": _alookup, "by_class": _Lookup._run}
    assert tool_callables(built.builder.nodes["model"].runnable) is None
