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
from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.graphs.agents import agent, artifact_tool, counted_tool
from tests.graphs.chat import ProfileV1, ProfileV2, ProfileV3
from tests.graphs.pipelines import Crash, as_data, deployed, model

CITY = model("SearchArgs", city=(str, ...))
WEATHER = model("Weather", temp=(float, ...))
WEATHER_V2 = model("Weather", temp=(float, ...), humidity=(int, ...))
READING = model("Reading", temp=(int, ...))
READING_V2 = model("Reading", temp=(float, ...), unit=(str, ...))
APPROVE = {"decisions": [{"type": "approve"}]}
REJECT = {"decisions": [{"type": "reject", "message": "not now"}]}


def say(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


class ProfileState(AgentState[Any]):
    """A middleware's own state field, declared ``NotRequired`` as every agent state key."""

    profile: NotRequired[ProfileV1]


class ProfileStateV2(AgentState[Any]):
    profile: NotRequired[ProfileV2]


class ProfileStateV3(AgentState[Any]):
    profile: NotRequired[ProfileV3]  # `who` renamed `full_name`: nothing to keep


def profiler(runs: Counter[str], state: type[Any]) -> Any:
    """A middleware whose ``before_agent`` hook writes its own state field ``profile``
    on a thread's first turn only."""
    profile = {ProfileStateV2: ProfileV2, ProfileStateV3: ProfileV3}.get(state, ProfileV1)
    field = "full_name" if profile is ProfileV3 else "who"

    class Profiler(AgentMiddleware[Any, Any, Any]):
        state_schema = state

        def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            runs["profiler"] += 1
            return None if state.get("profile") else {"profile": profile(**{field: "Ada"})}

    return lambda _: Profiler()


@pytest.mark.parametrize("keep", ["profile", ProfileV2], ids=["by-channel", "by-type"])
def test_a_middleware_state_value_of_an_earlier_turn_is_kept_converted(
    drive: Drive, saver: Saver, config: RunnableConfig, keep: Any, runs: Counter[str]
) -> None:
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


def _artifacts(result: dict[str, Any]) -> list[Any]:
    return [
        as_data(m.artifact)
        for m in result["messages"]
        if isinstance(m, ToolMessage) and m.artifact is not None
    ]


def test_a_tools_changed_artifact_type_reruns_the_tool_not_the_model_call_before_it(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """A thread crashed in its second tool call, after ``lookup`` stored its artifact:
    model (1), tools: lookup (2), model (3), tools: search crashes (4)."""
    script = ["lookup", "search"]
    crashing = counted_tool(runs, CITY, crash_once=True)
    old = agent(runs, [artifact_tool(runs, CITY, READING), crashing], script)
    with pytest.raises(Crash):
        drive.run(ne.compile(old, checkpointer=saver), say("a"), config)
    assert runs == Counter({"model": 2, "lookup": 1, "search": 1})
    before = runs.copy()  # not cleared: `search` crashes on its first call alone
    new = agent(runs, [artifact_tool(runs, CITY, READING_V2), crashing], script)
    graph = ne.compile(new, checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"tools"}
    assert plan.step == 1 and ne.types.TaskStep("model", 1, kept=True) in plan.steps
    assert "tool `lookup` output changed" in str(plan) and "Reading.unit: added" in str(plan)
    result = drive.run(graph, None, config)
    # The first model call is kept; the tool runs again under its new return type.
    assert runs - before == Counter({"lookup": 1, "model": 2, "search": 1})
    assert _artifacts(result) == [{"temp": 1.5, "unit": "s"}]
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_a_question_after_a_tool_whose_output_type_changed_is_asked_again(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """The human is asked to approve ``search``, which the model asked for after reading
    ``lookup``'s output: once that output's type changed, the question is asked again."""

    def built(reading: type[Any]) -> Any:
        tools = [artifact_tool(runs, CITY, reading), counted_tool(runs, CITY)]
        gate = HumanInTheLoopMiddleware({"search": True})
        return ne.compile(
            agent(runs, tools, ["lookup", "search"], middleware=[lambda _: gate]),
            checkpointer=saver,
        )

    asked = drive.run(built(READING), say("a"), config)["__interrupt__"]
    runs.clear()
    graph = built(READING_V2)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"tools"}
    result = drive.run(graph, Command(resume=APPROVE), config)
    assert runs == Counter({"lookup": 1, "model": 1})  # asked again: `search` did not run
    assert [i.value for i in result["__interrupt__"]] == [i.value for i in asked]
    result = drive.run(graph, Command(resume=APPROVE), config)
    assert runs == Counter({"lookup": 1, "model": 2, "search": 1})
    assert _artifacts(result) == [{"temp": 1.5, "unit": "s"}]


def test_the_same_input_object_again_returns_the_stored_answer(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """``add_messages`` gives each message it is handed an id, in place: the caller's
    message keeps none, so the same input asks for the stored result, not a new turn."""
    graph = ne.compile(agent(runs, [counted_tool(runs, CITY)], ["search"]), checkpointer=saver)
    question = say("a")
    first = drive.run(graph, question, config)
    assert question["messages"][0].id is None
    again = drive.run(graph, question, config)
    assert runs == Counter({"model": 2, "search": 1})
    assert again["messages"] == first["messages"] and len(first["messages"]) == 4


def _said(result: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """The conversation, without the ids LangGraph gives messages."""
    return [(m.type, m.content, getattr(m, "tool_calls", None)) for m in result["messages"]]


def _approved_chat(drive: Drive, graph: Any, config: RunnableConfig, *answers: Any) -> Any:
    """Three turns, each calling ``search`` once the human approves it (or as
    ``answers`` say, turn by turn)."""
    for text, answer in zip("abc", answers or (APPROVE,) * 3, strict=True):
        assert "__interrupt__" in drive.run(graph, say(text), config)
        result = drive.run(graph, Command(resume=answer), config)
    return result


def _gated(runs: Counter[str], saver: BaseCheckpointSaver[Any], state: type[Any]) -> Any:
    gate = HumanInTheLoopMiddleware({"search": True})
    hooks = [profiler(runs, state), lambda _: gate]
    built = agent(runs, [counted_tool(runs, CITY)], ["search"], middleware=hooks)
    return ne.compile(built, checkpointer=saver)


def test_replayed_turns_each_asked_again_end_as_a_fresh_run_of_the_new_code(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """The profile written in turn 1 changed beyond keeping: ``replay_turns`` re-runs turn
    1 and feeds turns 2 and 3 their inputs again; each stops at its approval, and each
    answer goes on with the turns still owed."""
    deployed(ProfileV1)
    _approved_chat(drive, _gated(runs, saver, ProfileState), config)
    runs.clear()
    deployed(ProfileV3)
    graph = _gated(runs, saver, ProfileStateV3)
    replay = ne.ResumePolicy(replay_turns=True)
    plan = drive.plan(graph, config, resume=replay)
    assert plan.kind is ne.PlanKind.REWIND and len(plan.replayed) == 2
    result = drive.run(graph, None, config, resume=replay)
    for _ in range(3):  # each turn asks again; each answer goes on with the next turn
        assert "__interrupt__" in result
        result = drive.run(graph, Command(resume=APPROVE), config)
    assert "__interrupt__" not in result
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE
    replayed, ran = result, runs.copy()
    runs.clear()
    other = {"configurable": {"thread_id": f"{config['configurable']['thread_id']}-fresh"}}
    fresh = _approved_chat(drive, _gated(runs, saver, ProfileStateV3), other)
    assert ran == runs == Counter({"model": 6, "search": 3, "profiler": 3})
    assert as_data(replayed["profile"]) == as_data(fresh["profile"]) == {"full_name": "Ada"}
    assert _said(replayed) == _said(fresh) and len(_said(fresh)) == 12


def test_an_answer_to_the_last_turns_question_is_not_given_to_a_replayed_turns(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """Turn 3 waits on its approval when the deploy comes: the rejection sent for it, with
    ``reanswer``, is set aside while turns 1 and 2 are replayed and asked again, and
    turn 3's question is asked again when its turn comes."""
    deployed(ProfileV1)
    old = _gated(runs, saver, ProfileState)
    for text in "ab":
        drive.run(old, say(text), config)
        drive.run(old, Command(resume=APPROVE), config)
    assert "__interrupt__" in drive.run(old, say("c"), config)
    runs.clear()
    deployed(ProfileV3)
    graph = _gated(runs, saver, ProfileStateV3)
    policy = ne.ResumePolicy(replay_turns=True, reanswer=True)
    result = drive.run(graph, Command(resume=REJECT), config, resume=policy)
    assert "__interrupt__" in result  # turn 1's question, not answered with turn 3's answer
    assert runs == Counter({"profiler": 1, "model": 1})
    for answer in (APPROVE, APPROVE, REJECT):
        assert "__interrupt__" in result
        result = drive.run(graph, Command(resume=answer), config)
    assert "__interrupt__" not in result
    replayed, ran = result, runs.copy()
    runs.clear()
    other = {"configurable": {"thread_id": f"{config['configurable']['thread_id']}-fresh"}}
    fresh = _approved_chat(drive, graph, other, APPROVE, APPROVE, REJECT)
    assert ran == runs and _said(replayed) == _said(fresh)
    assert _said(fresh)[-2][1] == "User rejected the tool call for `search` with reason: not now"


JSON_WEATHER = {"title": "W", "type": "object", "properties": {"temp": {"type": "number"}}}
JSON_WEATHER_V2 = {
    **JSON_WEATHER,
    "properties": {"temp": {"type": "number"}, "humidity": {"type": "integer"}},
    "required": ["temp", "humidity"],
}


@pytest.mark.parametrize(
    ("old", "new", "answer"),
    [
        (WEATHER, WEATHER_V2, WEATHER_V2(temp=1.5, humidity=1)),
        (JSON_WEATHER, JSON_WEATHER_V2, {"temp": 1.5, "humidity": 1}),
    ],
    ids=["model", "json-schema"],
)
def test_keep_compatible_keeps_no_structured_response_the_new_schema_rejects(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    old: Any,
    new: Any,
    answer: Any,
    runs: Counter[str],
) -> None:
    """The stored response lacks the field the new response schema requires (a JSON schema
    validates nothing here): it is no value to keep, and the final model call re-runs."""
    tools = [counted_tool(runs, CITY)]

    def weather(schema: Any, **options: Any) -> Any:
        name = "W" if isinstance(schema, dict) else "Weather"
        built = agent(runs, tools, ["search", name], response_format=ToolStrategy(schema))
        return ne.compile(built, checkpointer=saver, **options)

    deployed(WEATHER)
    drive.run(weather(old), say("a"), config)
    runs.clear()
    deployed(WEATHER_V2)
    graph = weather(new, resume=ne.ResumePolicy(keep_compatible=True))
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and not plan.migrated
    result = drive.run(graph, None, config)
    assert runs == Counter({"model": 1})
    assert result["structured_response"] == answer


def test_rolling_deploy_on_an_approval_old_workers_leave_the_new_question_alone(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """The new release adds a tool argument while the human is asked to approve the old
    call: it asks again with the new arguments; an old worker given the answer refuses."""
    calls: list[dict[str, Any]] = []

    def release(args: type[Any]) -> Any:
        gate = HumanInTheLoopMiddleware({"search": True})
        tools = [counted_tool(runs, args, calls=calls)]
        built = agent(runs, tools, ["search"], middleware=[lambda _: gate])
        return ne.compile(built, checkpointer=saver)

    old, new = release(CITY), release(model("SearchArgs", city=(str, ...), units=(str, ...)))
    drive.run(old, say("a"), config)
    asked = drive.run(new, Command(resume=APPROVE), config)["__interrupt__"]
    assert [a["args"] for i in asked for a in i.value["action_requests"]] == [
        {"city": "s", "units": "s"}
    ]
    with pytest.raises(ne.ThreadSupersededError):
        drive.run(old, Command(resume=APPROVE), config)
    result = drive.run(new, Command(resume=APPROVE), config)
    assert runs == Counter({"model": 3, "search": 1}) and calls == [{"city": "s", "units": "s"}]
    assert result["messages"][-1].content == "done"


def test_a_served_graph_replays_the_turns_owed_after_each_answer(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """As ``run`` does, for plain calls of a graph compiled with ``auto_resume`` (LangGraph
    Server): an answer to a replayed turn's question goes on with the turns owed."""
    deployed(ProfileV1)
    _approved_chat(drive, _gated(runs, saver, ProfileState), config)
    runs.clear()
    deployed(ProfileV3)
    built = _gated(runs, saver, ProfileStateV3).builder
    served = ne.compile(
        built,
        checkpointer=saver,
        resume=ne.ResumePolicy(replay_turns=True),
        attach=[ne.AutoResume()],
    )
    result = drive.invoke(served, None, config)
    for _ in range(3):
        assert "__interrupt__" in result
        result = drive.invoke(served, Command(resume=APPROVE), config)
    assert runs == Counter({"model": 6, "search": 3, "profiler": 3})
    assert len(_said(result)) == 12 and "__interrupt__" not in result
