"""What each agent builder's stamp covers, built from the builders themselves: which
fingerprint a change moves decides which step re-runs (no database here)."""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Any, NotRequired

import pytest
from langchain.agents import AgentState
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langgraph.prebuilt import create_react_agent
from pydantic import BaseModel

from neograph_ext.decision._changes import step_changes
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._langgraph_agents import RESPONSE_CHANNEL
from neograph_ext.decision._stamp import Stamp, read_description
from tests.graphs.agents import (
    Audit,
    ScriptedChat,
    agent,
    artifact_tool,
    budget,
    counted_tool,
    deep_agent,
)
from tests.graphs.pipelines import model

CITY = model("SearchArgs", city=(str, ...))
UNITS = model("SearchArgs", city=(str, ...), units=(str, ...))
SUNNY = model("Sunny", temp=(float, ...))
RAINY = model("Rainy", mm=(int, ...))
RAINY_V2 = model("Rainy", mm=(float, ...))


class Custom(AgentState[Any]):
    notes: NotRequired[list[str]]


class CustomV2(AgentState[Any]):
    notes: NotRequired[list[int]]


def stamp_of(built: Any) -> Stamp:
    return build_stamp(built.builder)


def moved(old: Stamp, new: Stamp) -> set[str]:
    """The node and channel fingerprints that differ between two stamps."""
    nodes = {n for n in old.nodes.keys() | new.nodes.keys() if old.nodes.get(n) != new.nodes.get(n)}
    channels = {
        f"channel:{c}"
        for c in old.channels.keys() | new.channels.keys()
        if old.channels.get(c) != new.channels.get(c)
    }
    return nodes | channels


def weather_agent(response_format: object, **kwargs: Any) -> Stamp:
    return stamp_of(
        agent(
            Counter(),
            [counted_tool(Counter(), CITY)],
            [],
            **kwargs,
            response_format=response_format,
        )
    )


@pytest.mark.parametrize(
    "wrap",
    [lambda s: s, ToolStrategy, ProviderStrategy],
    ids=["model", "tool", "provider"],
)
def test_a_changed_response_model_moves_only_the_response_channel(wrap: Any) -> None:
    old = weather_agent(wrap(SUNNY), middleware=[Audit])
    new = weather_agent(
        wrap(model("Sunny", temp=(float, ...), wind=(int, ...))), middleware=[Audit]
    )
    assert moved(old, new) == {f"channel:{RESPONSE_CHANNEL}"}
    assert new.clears == (RESPONSE_CHANNEL,)


def test_a_union_of_response_models_and_a_json_schema_are_covered() -> None:
    union = weather_agent(ToolStrategy(SUNNY | RAINY))
    assert moved(union, weather_agent(ToolStrategy(SUNNY | RAINY_V2))) == {
        f"channel:{RESPONSE_CHANNEL}"
    }
    schema = {"title": "W", "type": "object", "properties": {"t": {"type": "number"}}}
    wider = {**schema, "required": ["t"]}
    assert moved(weather_agent(schema), weather_agent(wider)) == {f"channel:{RESPONSE_CHANNEL}"}


def test_without_a_response_format_nothing_is_cleared() -> None:
    assert stamp_of(agent(Counter(), [], [])).clears is None


def test_clears_is_never_stored() -> None:
    stamp = weather_agent(SUNNY)
    stored = read_description(stamp.encode())
    assert isinstance(stored, Stamp) and stored.clears is None and stored.id == stamp.id


def test_a_tool_schema_belongs_to_the_model_call_not_to_the_routing_hook() -> None:
    def built(args: type[BaseModel]) -> Stamp:
        return stamp_of(agent(Counter(), [counted_tool(Counter(), args)], [], middleware=[Audit]))

    old, new = built(CITY), built(UNITS)
    assert moved(old, new) == {"model"}
    assert old.nodes["model"].tools is not None
    assert old.nodes["Audit.after_model"].tools is None


def test_without_middleware_the_model_node_keeps_its_fingerprint() -> None:
    """The model node routes to the tools itself: its tools were covered before."""
    stamp = stamp_of(agent(Counter(), [counted_tool(Counter(), CITY)], []))
    assert stamp.nodes["model"].tools is not None
    assert stamp.nodes["model"].succ == ("__end__", "tools")


def test_the_react_agents_model_call_owns_the_tool_schemas_behind_a_post_model_hook() -> None:
    def built(args: type[BaseModel]) -> Stamp:
        tools = [counted_tool(Counter(), args)]
        return stamp_of(
            create_react_agent(ScriptedChat(runs=Counter()), tools, post_model_hook=lambda s: {})
        )

    assert moved(built(CITY), built(UNITS)) == {"agent"}


def test_state_schema_and_middleware_state_extensions_are_channels() -> None:
    def built(state: type[Any]) -> Stamp:
        return stamp_of(agent(Counter(), [], [], state_schema=state))

    assert moved(built(Custom), built(CustomV2)) == {"channel:notes"}

    def hooked(state: type[Any]) -> Stamp:
        return stamp_of(agent(Counter(), [], [], middleware=[partial(budget, state=state)]))

    assert moved(hooked(Custom), hooked(CustomV2)) == {"channel:notes"}


def test_a_deep_agents_sub_agent_is_folded_into_the_tools_node() -> None:
    old = stamp_of(deep_agent(Counter(), [counted_tool(Counter(), CITY)]))
    new = stamp_of(deep_agent(Counter(), [counted_tool(Counter(), UNITS)]))
    assert moved(old, new) == {"tools"}
    assert "channel:files" not in moved(old, new) and "files" in old.channels
    inner = old.nodes["tools"].inner or {}
    assert "researcher/model/tool:search" in inner


def test_a_tools_declared_return_type_belongs_to_the_tools_node() -> None:
    def built(artifact: type[BaseModel]) -> Stamp:
        tools = [artifact_tool(Counter(), CITY, artifact), counted_tool(Counter(), CITY)]
        return stamp_of(agent(Counter(), tools, [], middleware=[Audit]))

    old, new = built(RAINY), built(RAINY_V2)
    assert moved(old, new) == {"tools"}
    assert set(old.nodes["tools"].outputs or {}) == {"lookup"}  # `search` returns str


def test_a_node_of_tools_returning_str_keeps_its_fingerprint() -> None:
    stamp = stamp_of(agent(Counter(), [counted_tool(Counter(), CITY)], []))
    assert stamp.nodes["tools"].outputs is None


def _blame(old: Stamp, new: Stamp) -> tuple[str, ...]:
    """The lines a plan gives for the ``tools`` node between two stamps."""
    (change,) = step_changes(frozenset({"tools"}), frozenset(), old, new)
    return change.diff


def test_a_sub_agents_tool_return_change_gets_the_field_lines_of_a_top_level_tool() -> None:
    def top(artifact: type[BaseModel]) -> Stamp:
        return stamp_of(agent(Counter(), [artifact_tool(Counter(), CITY, artifact)], []))

    def deep(artifact: type[BaseModel]) -> Stamp:
        return stamp_of(deep_agent(Counter(), [artifact_tool(Counter(), CITY, artifact)]))

    field = "Rainy.mm: int -> float"
    assert _blame(top(RAINY), top(RAINY_V2)) == ("tool `lookup` output changed", f"    {field}")
    assert _blame(deep(RAINY), deep(RAINY_V2)) == (
        "tools > researcher: node `tools`: tool `lookup` output changed",
        f"    {field}",
    )
