"""A finished turn is history: a new input on a thread whose run completed starts a new
turn, and the turns before it are judged as earlier turns, by what of theirs is still
live in the state, not by whether the code that wrote it changed.

A chat whose first turn called a tool whose return model a deploy changed plans and runs
the same with one turn as with three: the ToolMessage is a message whatever its tool
returns, so it is kept and the plan says so, and no node of a finished turn runs again.
The same input again (or none) on a finished thread still rewinds its latest turn, and
an unfinished turn rewinds as it did.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.graphs.agents import ScriptedChat, agent, artifact_tool
from tests.graphs.chat import ProfileV2, ProfileV3, chat, say
from tests.graphs.functional import chain, saving
from tests.graphs.pipelines import as_data, deployed, linear, model

CITY = model("SearchArgs", city=(str, ...))
RAINY = model("Rainy", mm=(int, ...))
RAINY_NOTED = model("Rainy", mm=(int, ...), note=(str, ...))
V1 = model(score=(int, ...))
V2 = model(score=(float, ...))
NEXT = {"messages": [HumanMessage("next")]}


def _plain(runs: Counter[str], tools: list[Any], script: list[str]) -> Any:
    """The same chat as a plain ``StateGraph`` over ``add_messages`` (``MessagesState``):
    a model node, LangGraph's ``ToolNode`` and ``tools_condition``."""
    model = ScriptedChat(runs=runs, script=tuple(script)).bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder


CHATS = {"create_agent": agent, "StateGraph": _plain}


def _chat(
    runs: Counter[str],
    rainy: Any,
    saver: BaseCheckpointSaver[Any],
    *,
    looks_up: bool,
    kind: str = "create_agent",
) -> Any:
    """A chat with the ``lookup`` tool; its model calls it when ``looks_up``."""
    deployed(rainy)
    tools = [artifact_tool(runs, CITY, rainy)]
    built = CHATS[kind](runs, tools, ["lookup"] if looks_up else [])
    return ne.compile(built, checkpointer=saver)


def _talked(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    turns: int,
    kind: str = "create_agent",
) -> RunnableConfig:
    """A chat of ``turns`` finished turns on a thread of its own; only the first calls
    the tool."""
    chat: RunnableConfig = {
        "configurable": {"thread_id": f"{config['configurable']['thread_id']}-{kind}-{turns}"}
    }
    for turn in range(turns):
        old = _chat(Counter(), RAINY, saver, looks_up=turn == 0, kind=kind)
        drive.run(old, {"messages": [HumanMessage(f"turn {turn}")]}, chat)
    return chat


@pytest.mark.parametrize("kind", list(CHATS))
@pytest.mark.parametrize("call", ["run", "invoke"])
def test_one_and_three_turn_chats_plan_the_same_and_rerun_no_finished_turn(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, call: str, kind: str
) -> None:
    found: dict[int, tuple[ne.PlanKind, tuple[str, ...], Counter[str]]] = {}
    for turns in (1, 3):
        chat = _talked(drive, saver, config, turns, kind)
        runs: Counter[str] = Counter()
        new = _chat(runs, RAINY_NOTED, saver, looks_up=False, kind=kind)
        if call == "invoke":
            new = ne.compile(new, checkpointer=saver, attach=[ne.AutoResume()])
        planned = drive.plan(new, chat, input=NEXT)
        result = getattr(drive, call)(new, NEXT, chat)
        found[turns] = planned.kind, planned.notes, runs
        assert [m.content for m in result["messages"]][-2:] == ["next", "done"]
        assert len(result["messages"]) == 2 * turns + 4  # every earlier message kept
    assert found[1] == found[3]
    kind, notes, runs = found[1]
    assert kind is ne.PlanKind.UP_TO_DATE
    assert runs == Counter(model=1)  # the new turn's own call, no more
    assert any("node `tools`" in n and "kept: still valid" in n for n in notes), notes


def test_without_the_new_input_plan_answers_for_the_stored_result(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    chat = _talked(drive, saver, config, 1)
    new = _chat(Counter(), RAINY_NOTED, saver, looks_up=False)
    bare = drive.plan(new, chat)
    assert bare.kind is ne.PlanKind.REWIND  # as run(new, None, chat)
    assert any("plan(graph, config, input=...)" in n for n in bare.notes), bare.notes
    planned = drive.plan(new, chat, input=NEXT)
    assert planned.kind is ne.PlanKind.UP_TO_DATE
    assert not any("plan(graph, config, input=...)" in n for n in planned.notes)


def test_the_same_input_again_on_a_finished_pipeline_still_rewinds(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.run(ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver), {"log": []}, config)
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    assert drive.plan(graph, config, input={"log": []}).kind is ne.PlanKind.REWIND
    assert drive.run(graph, {"log": []}, config) == {"log": list("abcd")}
    assert runs == Counter("cd")


@pytest.mark.parametrize("turns", [1, 2])
def test_a_finished_turns_value_that_no_longer_validates_is_settled_by_the_policy(
    drive: Drive, saver: Saver, config: RunnableConfig, turns: int, runs: Counter[str]
) -> None:
    """``extract`` wrote ``profile`` in turn 1 (live); a deploy renames its field. A new
    turn is blocked with the ways out, on one turn as on two; a migration converts it,
    and only the new turn's node runs."""
    old = ne.compile(chat(Counter()), checkpointer=saver)
    for turn in range(turns):
        drive.run(old, say(f"turn {turn}"), config)
    graph = ne.compile(chat(runs, ProfileV3), checkpointer=saver)
    planned = drive.plan(graph, config, input=say("next"))
    assert planned.blocker is not None and "a finished turn" in planned.blocker
    with pytest.raises(ne.CheckpointSchemaError, match="migrations"):
        drive.run(graph, say("next"), config)
    assert runs == Counter()
    migrate = ne.ResumePolicy(migrations={ProfileV3: lambda v: ProfileV3(full_name="Ada")})
    assert drive.plan(graph, config, input=say("next"), resume=migrate).kind is ne.PlanKind.MIGRATE
    result = drive.run(graph, say("next"), config, resume=migrate)
    assert runs == Counter({"reply": 1})
    assert as_data(result["profile"]) == {"full_name": "Ada"}
    assert len(result["messages"]) == 2 * turns + 2


@pytest.mark.parametrize("turns", [1, 2])
def test_a_finished_turns_value_that_still_validates_is_kept_without_an_option(
    drive: Drive, saver: Saver, config: RunnableConfig, turns: int, runs: Counter[str]
) -> None:
    """``Profile`` gains a field with a default: the stored one still validates, so a new
    turn keeps it (as ``keep_compatible`` would, by default for a finished turn) and only
    the new turn's node runs, on one turn as on two."""
    old = ne.compile(chat(Counter()), checkpointer=saver)
    for turn in range(turns):
        drive.run(old, say(f"turn {turn}"), config)
    graph = ne.compile(chat(runs, ProfileV2), checkpointer=saver)
    planned = drive.plan(graph, config, input=say("next"))
    assert planned.kind is ne.PlanKind.UP_TO_DATE and planned.migrated == {"profile"}
    assert any("`profile`" in n and "kept: still valid" in n for n in planned.notes)
    assert "values kept: still valid: profile" in str(planned)
    assert drive.plan(graph, config).kind is ne.PlanKind.REWIND  # no new turn: as before
    result = drive.run(graph, say("next"), config)
    assert runs == Counter({"reply": 1})
    assert as_data(result["profile"]) == {"who": "Ada", "tone": "plain"}
    assert len(result["messages"]) == 2 * turns + 2


def _entry_turns(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, turns: int, old: Any
) -> RunnableConfig:
    """``turns`` finished turns of the entrypoint ``old`` (inputs 1, 2, ...) on a thread
    of their own."""
    thread: RunnableConfig = {
        "configurable": {"thread_id": f"{config['configurable']['thread_id']}-{turns}"}
    }
    graph = ne.compile(old, checkpointer=saver)
    for turn in range(1, turns + 1):
        drive.run(graph, turn, thread)
    return thread


def test_an_entrypoint_s_new_turn_runs_no_finished_turn_s_task_at_any_turn_count(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    """``t2`` returns another type now: no new turn reads a finished turn's cached
    results, so a new input runs the new turn's three calls alone, the plan saying why,
    with one turn as with three; the same input again still rewinds the latest turn."""
    found = {}
    for turns in (1, 3):
        thread = _entry_turns(
            drive, saver, config, turns, chain(Counter(), set(), is_async=drive.is_async)
        )
        runs: Counter[str] = Counter()
        new = chain(runs, set(), is_async=drive.is_async)
        graph = ne.compile(new, checkpointer=saver, output_types={"t2": float})
        planned = drive.plan(graph, thread, input=7)
        assert drive.run(graph, 7, thread) == 15
        found[turns] = planned.kind, planned.notes, runs
    assert found[1] == found[3]
    kind, notes, runs = found[3]  # the counter of the thread and graph used below
    assert kind is ne.PlanKind.UP_TO_DATE and runs == Counter(t1=1, t2=1, t3=1)
    assert any("node `t2`" in n and "kept: still valid" in n for n in notes), notes
    runs.clear()
    assert drive.plan(graph, thread, input=7).kind is ne.PlanKind.UP_TO_DATE
    assert drive.run(graph, 7, thread) == 15 and runs == Counter()  # the same input again
    bumped = ne.compile(new, checkpointer=saver, output_types={"t2": float}, versions={"t3": "2"})
    assert drive.plan(bumped, thread, input=7).kind is ne.PlanKind.REWIND
    assert drive.run(bumped, 7, thread) == 15 and runs == Counter(t3=1)


@pytest.mark.parametrize("turns", [1, 2])
def test_an_entrypoint_s_saved_value_is_judged_by_whether_it_still_validates(
    drive: Drive, saver: Saver, config: RunnableConfig, turns: int, runs: Counter[str]
) -> None:
    """The save type went from ``str`` to ``int``: the ``"..."`` the finished turn saved
    still validates, so a new turn keeps it, converted, and runs alone; to ``bool`` it
    does not, and the new turn is blocked, then a migration converts it."""
    old = saving(Counter(), is_async=drive.is_async)
    thread = _entry_turns(drive, saver, config, turns, old)
    total = 101 if turns == 1 else 203
    graph = ne.compile(saving(runs, is_async=drive.is_async, save=int), checkpointer=saver)
    planned = drive.plan(graph, thread, input=5)
    assert (planned.kind, planned.migrated) == (ne.PlanKind.UP_TO_DATE, {"__previous__"})
    assert any("kept: still valid" in n for n in planned.notes), planned.notes
    assert drive.run(graph, 5, thread) == 105 + total
    assert runs == Counter(add=1, workflow=1)
    runs.clear()
    strict = ne.compile(saving(runs, is_async=drive.is_async, save=bool), checkpointer=saver)
    planned = drive.plan(strict, thread, input=6)
    assert planned.blocker and "no longer validates" in planned.blocker
    with pytest.raises(ne.CheckpointSchemaError, match="replay_turns"):
        drive.run(strict, 6, thread)
    assert runs == Counter()
    migrate = ne.ResumePolicy(migrations={bool: lambda saved: True})
    assert drive.plan(strict, thread, input=6, resume=migrate).kind is ne.PlanKind.MIGRATE
    assert drive.run(strict, 6, thread, resume=migrate) == 106 + 1
    assert runs == Counter(add=1, workflow=1)


def test_an_entrypoint_s_changed_version_asks_its_finished_turns_to_run_again(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """The entrypoint's own version changed: the ``previous`` it saved is read by a new
    turn, so the new turn is blocked, and ``replay_turns`` runs both turns again."""
    thread = _entry_turns(drive, saver, config, 2, saving(Counter(), is_async=drive.is_async))
    new = saving(runs, is_async=drive.is_async)
    graph = ne.compile(new, checkpointer=saver, versions={"workflow": "2"})
    planned = drive.plan(graph, thread, input=3)
    assert planned.blocker and "replay_turns" in planned.blocker
    with pytest.raises(ne.CheckpointSchemaError):
        drive.run(graph, 3, thread)
    replay = ne.ResumePolicy(replay_turns=True)
    assert drive.plan(graph, thread, input=3, resume=replay).replayed
    assert drive.run(graph, 3, thread, resume=replay) == 103 + 203
    assert runs == Counter(add=3, workflow=3)
