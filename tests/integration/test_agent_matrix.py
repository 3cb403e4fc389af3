"""LangChain 1.x agents meeting the ways a thread settles a deploy: carrying a
middleware's state, a tool's output type, human-in-the-loop questions asked again, rolling
deploys, replayed turns. Each case runs once per saver, sync and async, with a scripted
chat model; counters of model calls, tool calls and hook runs prove what re-ran, and each
resumed thread ends as a fresh run of the new code would.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, NotRequired

import pytest
from langchain.agents import AgentState
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.agents import agent, counted_tool
from tests.graphs.chat import ProfileV1, ProfileV2
from tests.graphs.pipelines import as_data, deployed, model

CITY = model("SearchArgs", city=(str, ...))


def say(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


class ProfileState(AgentState[Any]):
    """A middleware's own state field, declared ``NotRequired`` as every agent state key."""

    profile: NotRequired[ProfileV1]


class ProfileStateV2(AgentState[Any]):
    profile: NotRequired[ProfileV2]


def profiler(runs: Counter[str], state: type[Any]) -> Any:
    """A middleware whose ``before_agent`` hook writes its own state field ``profile``
    on a thread's first turn only."""
    profile = ProfileV2 if state is ProfileStateV2 else ProfileV1

    class Profiler(AgentMiddleware[Any, Any, Any]):
        state_schema = state

        def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            runs["profiler"] += 1
            return None if state.get("profile") else {"profile": profile(who="Ada")}

    return lambda _: Profiler()


@pytest.mark.parametrize("keep", ["profile", ProfileV2], ids=["by-channel", "by-type"])
def test_a_middleware_state_value_of_an_earlier_turn_is_kept_converted(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, keep: Any
) -> None:
    runs: Counter[str] = Counter()
    tools = [counted_tool(runs, CITY)]
    deployed(ProfileV1)
    old = ne.compile(
        agent(runs, tools, ["search"], middleware=[profiler(runs, ProfileState)]),
        checkpointer=saver,
    )
    drive.run(old, say("a"), config)
    drive.run(old, say("b"), config)
    assert runs == Counter({"model": 4, "search": 2, "profiler": 2})
    runs.clear()
    deployed(ProfileV2)  # adds `tone`, with a default
    new = agent(runs, tools, ["search"], middleware=[profiler(runs, ProfileStateV2)])
    graph = ne.compile(new, checkpointer=saver, resume=ne.ResumePolicy(keep_compatible={keep}))
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.MIGRATE and plan.migrated == {"profile"}
    result = drive.run(graph, None, config)
    assert runs == Counter()
    assert isinstance(result["profile"], ProfileV2)
    assert as_data(result["profile"]) == {"who": "Ada", "tone": "plain"}
    result = drive.run(graph, say("c"), config)
    assert runs == Counter({"model": 2, "search": 1, "profiler": 1})
    assert as_data(result["profile"]) == {"who": "Ada", "tone": "plain"}
