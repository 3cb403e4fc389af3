"""LangChain 1.x agents (``create_agent`` with middleware, deep agents) across deploys:
each scenario runs once per saver, sync and async, with a scripted chat model; counters
of model calls, tool calls and hook runs prove what re-ran.

A thread of ``create_agent(tools=[search], middleware=[Audit])`` with a script of one
tool call runs: model (step 1), Audit.after_model (2), tools (3), model (4),
Audit.after_model (5).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.prebuilt import create_react_agent
from langgraph.types import Command

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.graphs.agents import (
    Audit,
    BudgetState,
    BudgetStateV2,
    ScriptedChat,
    agent,
    approving_deep_agent,
    budget,
    counted_tool,
    deep_agent,
)
from tests.graphs.pipelines import Crash, model

CITY = model("SearchArgs", city=(str, ...))
WITH_UNITS = model("SearchArgs", city=(str, ...), units=(str, ...))
OPTIONAL_UNITS = model("SearchArgs", city=(str, ...), units=(str | None, None))
WEATHER = model("Weather", temp=(float, ...))
WEATHER_V2 = model("Weather", temp=(float, ...), humidity=(int, ...))
HI = {"messages": [HumanMessage("hi")]}


def compiled(saver: BaseCheckpointSaver[Any], built: Any, **kwargs: Any) -> Any:
    return ne.compile(built, checkpointer=saver, **kwargs)


def _bare(schema: type) -> type:
    return schema


_STRATEGIES = pytest.mark.parametrize(
    "strategy", [_bare, ToolStrategy, ProviderStrategy], ids=["model", "tool", "provider"]
)
_ARGS = pytest.mark.parametrize("args", [OPTIONAL_UNITS, WITH_UNITS], ids=["optional", "required"])


def test_crash_in_a_tool_then_resume(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = compiled(
        saver,
        agent(runs, [counted_tool(runs, CITY, crash_once=True)], ["search"], middleware=[Audit]),
    )
    with pytest.raises(Crash):
        drive.run(graph, HI, config)
    assert runs == Counter({"model": 1, "after_model": 1, "search": 1})
    assert drive.plan(graph, config).kind is ne.PlanKind.CONTINUE
    result = drive.run(graph, None, config)
    # The model call that asked for the tool is kept; the tool runs again, then the answer.
    assert runs == Counter({"model": 2, "after_model": 2, "search": 2})
    assert result["messages"][-1].content == "done"


@_STRATEGIES
def test_response_model_changed(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    strategy: Callable[[type], Any],
    runs: Counter[str],
) -> None:
    tools = [counted_tool(runs, CITY)]
    # A ToolStrategy answers by calling the tool named after the schema (a bare schema
    # becomes one: the scripted model declares no provider structured output).
    script = ["search"] if strategy is ProviderStrategy else ["search", "Weather"]
    old = agent(runs, tools, script, middleware=[Audit], response_format=strategy(WEATHER))
    drive.run(compiled(saver, old), HI, config)
    assert runs == Counter({"model": 2, "after_model": 2, "search": 1})
    runs.clear()
    new = agent(runs, tools, script, middleware=[Audit], response_format=strategy(WEATHER_V2))
    graph = compiled(saver, new)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"model"}
    assert plan.step == 3  # after the tool call: only the final model call re-runs
    assert "Weather.humidity: added (int, required)" in str(plan)
    # ``kept`` names nodes: ``model`` re-runs, so its first call shows in the steps alone.
    assert ne.types.TaskStep("model", 1, kept=True) in plan.steps
    assert "model (step 4 of 5) re-runs" in str(plan) and "model (step 1) kept" in str(plan)
    result = drive.run(graph, None, config)
    assert runs == Counter({"model": 1, "after_model": 1})
    assert result["structured_response"].humidity == 1
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


@_ARGS
def test_tool_argument_added(
    drive: Drive, saver: Saver, config: RunnableConfig, args: type[Any], runs: Counter[str]
) -> None:
    old = agent(runs, [counted_tool(runs, CITY)], ["search"], middleware=[Audit])
    drive.run(compiled(saver, old), HI, config)
    assert runs == Counter({"model": 2, "after_model": 2, "search": 1})
    runs.clear()
    calls: list[dict[str, Any]] = []
    new = agent(runs, [counted_tool(runs, args, calls=calls)], ["search"], middleware=[Audit])
    graph = compiled(saver, new)
    plan = drive.plan(graph, config)
    # Blamed on the model call that made the tool call, not on the hook that routed it.
    assert plan.invalidated_nodes == {"model"} and plan.step == 0
    assert "tool `search` arguments changed" in str(plan)
    result = drive.run(graph, None, config)
    assert runs == Counter({"model": 2, "after_model": 2, "search": 1})
    assert calls == [{"city": "s", "units": "s"}]
    answers = [m.content for m in result["messages"] if isinstance(m, ToolMessage)]
    assert answers == ["search {'city': 's', 'units': 's'}"]


def test_middleware_state_changed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    tools = [counted_tool(runs, CITY)]
    hook = partial(budget, state=BudgetState)
    drive.run(compiled(saver, agent(runs, tools, ["search"], middleware=[hook])), HI, config)
    assert runs == Counter({"model": 2, "budget": 2, "search": 1})
    runs.clear()
    new_hook = partial(budget, state=BudgetStateV2)
    graph = compiled(saver, agent(runs, tools, ["search"], middleware=[new_hook]))
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"Budget.after_model"} and plan.step == 1
    assert "channel `calls` type changed" in str(plan)
    result = drive.run(graph, None, config)
    # The first model call is kept; the hook's step and everything after it re-run.
    assert runs == Counter({"budget": 2, "search": 1, "model": 1})
    assert result["calls"] == 2


def test_sub_agent_tool_changed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.run(compiled(saver, deep_agent(runs, [counted_tool(runs, CITY)])), HI, config)
    assert runs == Counter({"model": 2, "sub_model": 2, "search": 1})
    runs.clear()
    calls: list[dict[str, Any]] = []
    graph = compiled(saver, deep_agent(runs, [counted_tool(runs, WITH_UNITS, calls=calls)]))
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"tools"}
    assert "tools > researcher: node `model`: tool `search` arguments changed" in str(plan)
    result = drive.run(graph, None, config)
    # The parent's model call that handed the task over is kept; the sub-agent runs
    # afresh under the new tool, and the parent answers.
    assert runs == Counter({"sub_model": 2, "search": 1, "model": 1})
    assert calls == [{"city": "s", "units": "s"}]
    assert result["messages"][-1].content == "done"


FINDINGS = model("Findings", summary=(str, ...))
FINDINGS_V2 = model("Findings", summary=(str, ...), sources=(int, ...))


def test_sub_agent_response_type_changed_while_it_waits_on_an_approval(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    assert "__interrupt__" in drive.run(
        compiled(saver, approving_deep_agent(runs, FINDINGS)), HI, config
    )
    assert runs == Counter({"model": 1, "sub_model": 2, "search": 1, "approve": 1})
    runs.clear()
    graph = compiled(saver, approving_deep_agent(runs, FINDINGS_V2))
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"tools"}
    assert "tools > researcher: channel `structured_response` type changed" in str(plan)
    # The `task` tool's subagent runs under the tool task's namespace, and LangGraph
    # resumes it from there: it is rewound inside, and the parent's model call that
    # handed the task over is kept. Every model call of the subagent wrote
    # `structured_response` (LangChain clears it to None on each call), so under the
    # changed type each of them re-runs; only its before-agent hook is kept.
    (inside,) = plan.inside
    assert (inside.path, inside.kept) == (("tools",), ("PatchToolCallsMiddleware.before_agent",))
    assert inside.rerun[0] == "model"
    # The approval is asked again, under the new code, then answered.
    assert "__interrupt__" in drive.run(graph, Command(resume="yes"), config)
    assert runs == Counter({"sub_model": 2, "search": 1, "approve": 1})
    result = drive.run(graph, Command(resume="yes"), config)
    assert runs == Counter({"sub_model": 3, "search": 1, "approve": 2, "model": 1})
    assert FINDINGS_V2.model_validate_json(result["messages"][-2].content).sources == 1
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_react_agent_tool_change_behind_a_post_model_hook_reruns_the_model_call(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:

    def hook(state: Any) -> dict[str, Any]:
        runs["post_model_hook"] += 1
        return {}

    def react(args: type[Any], calls: list[dict[str, Any]] | None = None) -> Any:
        chat = ScriptedChat(runs=runs, script=("search",))
        tools = [counted_tool(runs, args, calls=calls)]
        return create_react_agent(chat, tools, post_model_hook=hook)

    drive.run(ne.compile(react(CITY), checkpointer=saver), HI, config)
    assert runs == Counter({"model": 2, "post_model_hook": 2, "search": 1})
    runs.clear()
    calls: list[dict[str, Any]] = []
    graph = ne.compile(react(WITH_UNITS, calls), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"agent"} and plan.step == 0
    drive.run(graph, None, config)
    assert runs == Counter({"model": 2, "post_model_hook": 2, "search": 1})
    assert calls == [{"city": "s", "units": "s"}]


def test_response_model_changed_after_two_turns_reruns_the_last_final_call(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """The earlier turn's response was replaced (cleared with None, then written again)
    by the later one: nothing of it is live, so no earlier turn blocks the rewind."""
    tools = [counted_tool(runs, CITY)]
    script = ["search", "Weather"]
    old = ne.compile(
        agent(runs, tools, script, middleware=[Audit], response_format=ToolStrategy(WEATHER)),
        checkpointer=saver,
    )
    drive.run(old, HI, config)
    drive.run(old, {"messages": [HumanMessage("again")]}, config)
    assert runs == Counter({"model": 4, "after_model": 4, "search": 2})
    runs.clear()
    new = agent(runs, tools, script, middleware=[Audit], response_format=ToolStrategy(WEATHER_V2))
    graph = ne.compile(new, checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.blocker is None
    assert ne.types.TaskStep("model", 8, kept=True) in plan.steps
    assert ne.types.TaskStep("model", 11, kept=False) in plan.steps
    result = drive.run(graph, None, config)
    assert runs == Counter({"model": 1, "after_model": 1})
    assert result["structured_response"].humidity == 1
