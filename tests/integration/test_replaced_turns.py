"""A finished turn's value that the next turn writes before any node reads it does not
block that turn when its type changed: ``create_agent``'s ``structured_response`` (its
model node writes it on every call), and a plain graph's channel that the node a turn
starts with requires in its output and leaves out of its input. Where a node could read
the stale value first (a middleware hook before the model), the turn is blocked as
before. Counters prove what ran."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypedDict

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.graphs.agents import Audit
from tests.graphs.pipelines import Crash, deployed, model
from tests.graphs.turns import WEATHER, WEATHER_V2, weather_agent
from tests.integration.release_worker import released

HI = {"messages": [HumanMessage("hi")]}
AGAIN = {"messages": [HumanMessage("again")]}
REPLACED = "replaced by the new turn"


class Prepare(AgentMiddleware[Any, Any, Any]):
    """A ``before_model`` hook: its node runs before the model, on the whole state."""

    def __init__(self, runs: Counter[str]) -> None:
        super().__init__()
        self.runs = runs

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        self.runs["before_model"] += 1
        return None


def _bare(schema: type) -> type:
    return schema


@pytest.mark.parametrize(
    "strategy", [_bare, ToolStrategy, ProviderStrategy], ids=["model", "tool", "provider"]
)
@pytest.mark.parametrize("hooks", [(), (Audit,)], ids=["no_middleware", "after_model"])
def test_a_new_turn_replaces_a_structured_response_of_a_changed_model(
    drive: Drive,
    saver: Saver,
    config: RunnableConfig,
    runs: Counter[str],
    hooks: tuple[type[Any], ...],
    strategy: Callable[[type], Any],
) -> None:
    turn = Counter({"model": 2, "search": 1, **({"after_model": 2} if hooks else {})})
    old = ne.compile(weather_agent(runs, WEATHER, hooks, strategy), checkpointer=saver)
    drive.run(old, HI, config)
    assert runs == turn
    runs.clear()
    graph = ne.compile(weather_agent(runs, WEATHER_V2, hooks, strategy), checkpointer=saver)
    plan = drive.plan(graph, config, input=AGAIN)
    assert plan.blocker is None and plan.rerun == frozenset()
    assert any(REPLACED in note and "structured_response" in note for note in plan.notes)
    result = drive.run(graph, AGAIN, config)
    assert runs == turn  # the new turn only: its tool call and its answer
    assert WEATHER_V2.model_validate(result["structured_response"]).humidity == 1
    asked = [m.content for m in result["messages"] if isinstance(m, HumanMessage)]
    assert asked == ["hi", "again"]
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_a_hook_before_the_model_could_read_the_old_response_so_the_turn_is_blocked(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    old = ne.compile(weather_agent(runs, WEATHER, (Prepare,)), checkpointer=saver)
    drive.run(old, HI, config)
    runs.clear()
    graph = ne.compile(weather_agent(runs, WEATHER_V2, (Prepare,)), checkpointer=saver)
    plan = drive.plan(graph, config, input=AGAIN)
    assert plan.blocker is not None and "structured_response" in plan.blocker
    assert not any(REPLACED in note for note in plan.notes)
    with pytest.raises(ne.CheckpointSchemaError):
        drive.run(graph, AGAIN, config)
    assert runs == Counter()


class Question(TypedDict):
    """What the node a turn starts with reads: the question alone."""

    question: str


def _plain(
    runs: Counter[str],
    answer: type[BaseModel],
    reads: Literal["question", "all"],
    crash: str | None = None,
) -> Any:
    """``answer`` (writes ``answer`` on every call; ``reads``: its input schema, the
    question alone or the whole state; ``crash``: the question it fails on), then
    ``note`` (reads the answer)."""
    deployed(answer)
    fields = {"question": str, "answer": answer, "notes": str}
    state = TypedDict("Turns", fields, total=False)  # type: ignore[misc]
    answered = TypedDict("Answered", {"answer": answer})  # type: ignore[misc]  # noqa: UP013

    def ask(inputs: Any) -> Any:
        runs["answer"] += 1
        text = inputs["question"]
        if text == crash:
            raise Crash("answer")
        return {"answer": answer.model_validate({"text": text, "words": len(text.split())})}

    def note(state: Any) -> Any:
        runs["note"] += 1
        return {"notes": state["answer"].text}

    ask.__annotations__["inputs"] = Question if reads == "question" else state
    ask.__annotations__["return"] = answered
    builder = StateGraph(state)
    builder.add_node("answer", ask)
    builder.add_node("note", note)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", "note")
    builder.add_edge("note", END)
    return builder


TEXT = model("Answer", text=(str, ...))
TEXT_V2 = model("Answer", text=(str, ...), words=(int, ...))


@pytest.mark.parametrize("reads", ["question", "all"])
def test_a_plain_graphs_channel_the_first_node_writes_unread_is_replaced_by_a_new_turn(
    drive: Drive,
    saver: Saver,
    config: RunnableConfig,
    runs: Counter[str],
    reads: Literal["question", "all"],
) -> None:
    drive.run(ne.compile(_plain(runs, TEXT, reads), checkpointer=saver), {"question": "a"}, config)
    runs.clear()
    graph = ne.compile(_plain(runs, TEXT_V2, reads), checkpointer=saver)
    again = {"question": "b c"}
    if reads == "all":  # the node could read the old answer: blocked, as before
        with pytest.raises(ne.CheckpointSchemaError, match="answer"):
            drive.run(graph, again, config)
        assert runs == Counter()
        return
    plan = drive.plan(graph, config, input=again)
    assert plan.blocker is None and any(REPLACED in note for note in plan.notes)
    result = drive.run(graph, again, config)
    assert runs == Counter({"answer": 1, "note": 1})
    assert result["answer"].words == 2 and result["notes"] == "b c"


def test_a_turn_that_crashed_before_replacing_the_value_resumes_under_new_code(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    """The old code's second turn crashed in the node that writes the channel: after the
    deploy, the turn under way still replaces the first turn's value before any node
    reads it, so it resumes."""
    old = ne.compile(_plain(runs, TEXT, "question", crash="b c"), checkpointer=saver)
    drive.run(old, {"question": "a"}, config)
    with pytest.raises(Crash):
        drive.run(old, {"question": "b c"}, config)
    runs.clear()
    graph = ne.compile(_plain(runs, TEXT_V2, "question"), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.CONTINUE and plan.next_nodes == {"answer"}
    assert any(REPLACED in note for note in plan.notes)
    result = drive.run(graph, None, config)
    assert runs == Counter({"answer": 1, "note": 1})
    assert result["answer"].words == 2


@pytest.mark.slow
def test_release_two_answers_the_next_message_of_a_chat_release_one_finished(
    tmp_path: Path,
) -> None:
    """The issue's shape: two processes on one SQLite file, release 1 then release 2."""
    db = str(tmp_path / "threads.sqlite")
    assert released("agent", db, "chat", "1", "hi") == {"model": 2, "search": 1}
    assert released("agent", db, "chat", "2", "again") == {"model": 2, "search": 1}
