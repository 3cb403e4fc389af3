"""Rewinds on every graph shape LangGraph offers: parallel, Send, loops, subgraphs,
interrupts, added and removed nodes, channel types, pydantic state, multi-turn threads."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.pipelines import Crash, State, diamond, linear, model, node

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


def test_parallel_branch_change_reruns_that_branch_and_after(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.ran_before(diamond(runs, V1), saver, {"log": []}, config, runs)
    graph = ne.compile(diamond(runs, V2), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"c"} and plan.kept == {"a", "b"}
    result = drive.run(graph, None, config)
    # b finished in the rewound superstep and did not change: its writes are kept.
    assert runs == Counter("cd")
    assert sorted(result["log"]) == sorted("abcd")


class FanState(TypedDict, total=False):
    items: list[int]
    results: Annotated[list[int], operator.add]
    log: Annotated[list[str], operator.add]


def fan_out(runs: Counter[str], worker_returns: object) -> StateGraph[Any, Any, Any, Any]:
    def prepare(state: FanState) -> dict[str, Any]:
        runs["prepare"] += 1
        return {"items": [1, 2, 3, 4, 5]}

    def worker(state: dict[str, Any]) -> dict[str, Any]:
        runs["worker"] += 1
        return {"results": [state["item"] * 10]}

    worker.__annotations__ = {"state": dict, "return": worker_returns}

    def total(state: FanState) -> dict[str, Any]:
        runs["total"] += 1
        return {"log": [f"total={sum(state['results'])}"]}

    builder = StateGraph(FanState)
    builder.add_node("prepare", prepare)
    builder.add_node("worker", worker)
    builder.add_node("total", total)
    builder.add_edge(START, "prepare")
    builder.add_conditional_edges(
        "prepare", lambda s: [Send("worker", {"item": i}) for i in s["items"]], ["worker"]
    )
    builder.add_edge("worker", "total")
    builder.add_edge("total", END)
    return builder


def test_send_fan_out_reruns_all_sends_without_duplicating_results(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.run(ne.compile(fan_out(runs, V1), checkpointer=saver), {}, config)
    assert runs == Counter({"prepare": 1, "worker": 5, "total": 1})
    runs.clear()
    graph = ne.compile(fan_out(runs, V2), checkpointer=saver)
    assert drive.plan(graph, config).invalidated_nodes == {"worker"}
    result = drive.run(graph, None, config)
    assert runs == Counter({"worker": 5, "total": 1})
    assert sorted(result["results"]) == [10, 20, 30, 40, 50]


class LoopState(TypedDict, total=False):
    n: int
    log: Annotated[list[str], operator.add]


def loop(runs: Counter[str], body_returns: object) -> StateGraph[Any, Any, Any, Any]:
    def start(state: LoopState) -> dict[str, Any]:
        runs["start"] += 1
        return {"n": 0}

    def body(state: LoopState) -> dict[str, Any]:
        runs["body"] += 1
        return {"n": state["n"] + 1, "log": [f"body{state['n']}"]}

    body.__annotations__ = {"state": LoopState, "return": body_returns}
    builder = StateGraph(LoopState)
    builder.add_node("start", start)
    builder.add_node("body", body)
    builder.add_edge(START, "start")
    builder.add_edge("start", "body")
    builder.add_conditional_edges("body", lambda s: "body" if s["n"] < 3 else END, ["body", END])
    return builder


def test_loop_body_change_restarts_the_loop_once(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.run(ne.compile(loop(runs, V1), checkpointer=saver), {}, config)
    assert runs == Counter({"start": 1, "body": 3})
    runs.clear()
    graph = ne.compile(loop(runs, V2), checkpointer=saver)
    result = drive.run(graph, None, config)
    assert runs == Counter({"body": 3})
    assert result["log"] == ["body0", "body1", "body2"]
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def with_subgraph(
    runs: Counter[str], inner_returns: object, outer_returns: object = V1
) -> StateGraph[Any, Any, Any, Any]:
    inner = StateGraph(State)
    inner.add_node("inner-1", node("inner-1", runs))
    inner.add_node("inner-2", node("inner-2", runs, returns=inner_returns))
    inner.add_edge(START, "inner-1")
    inner.add_edge("inner-1", "inner-2")
    sub = ne.compile(inner)
    builder = StateGraph(State)
    builder.add_node("a", node("a", runs, returns=outer_returns))
    builder.add_node("sub", sub)
    builder.add_node("z", node("z", runs))
    builder.add_edge(START, "a")
    builder.add_edge("a", "sub")
    builder.add_edge("sub", "z")
    return builder


def test_change_inside_a_subgraph_reruns_its_parent_node_only(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.run(ne.compile(with_subgraph(runs, V1), checkpointer=saver), {"log": []}, config)
    assert runs == Counter(["a", "inner-1", "inner-2", "z"])
    runs.clear()
    graph = ne.compile(with_subgraph(runs, V2), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"sub"}
    assert plan.changes[0].reason is ne.types.ChangeReason.SUBGRAPH
    assert any("inner-2" in line for line in plan.changes[0].diff)
    drive.run(graph, None, config)
    assert runs == Counter(["inner-1", "inner-2", "z"])


def test_node_appended_to_a_completed_thread_runs(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.ran_before(linear(runs, names="abc"), saver, {"log": []}, config, runs)
    graph = ne.compile(linear(runs, names="abcd"), checkpointer=saver)
    (change,) = drive.plan(graph, config).changes
    assert change.node == "c" and change.reason is ne.types.ChangeReason.SUCCESSORS
    assert drive.run(graph, None, config)["log"] == list("abcd")
    assert runs == Counter("cd")


def test_node_removed_while_the_thread_waits_on_it(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    with pytest.raises(Crash):
        drive.run(ne.compile(linear(runs, crash="c"), checkpointer=saver), {"log": []}, config)
    runs.clear()
    graph = ne.compile(linear(runs, names="abd"), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"b"} and plan.kind is ne.PlanKind.REWIND
    assert drive.run(graph, None, config)["log"] == list("abd")
    assert runs == Counter("bd")


def approval(runs: Counter[str], a_returns: object) -> StateGraph[Any, Any, Any, Any]:
    def ask(state: State) -> dict[str, Any]:
        runs["ask"] += 1
        answer = interrupt("approve?")
        return {"log": [f"answer={answer}"]}

    builder = StateGraph(State)
    builder.add_node("a", node("a", runs, returns=a_returns))
    builder.add_node("ask", ask)
    builder.add_node("z", node("z", runs))
    builder.add_edge(START, "a")
    builder.add_edge("a", "ask")
    builder.add_edge("ask", "z")
    return builder


def test_interrupt_is_asked_again_after_an_upstream_change(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    first = drive.run(ne.compile(approval(runs, V1), checkpointer=saver), {"log": []}, config)
    assert "__interrupt__" in first
    runs.clear()
    graph = ne.compile(approval(runs, V2), checkpointer=saver)
    assert any("asked again" in note for note in drive.plan(graph, config).notes)
    again = drive.run(graph, Command(resume="yes"), config)
    assert "__interrupt__" in again and runs == Counter({"a": 1, "ask": 1})
    result = drive.run(graph, Command(resume="yes"), config)
    assert result["log"] == ["a", "answer=yes", "z"]
    assert runs == Counter({"a": 1, "ask": 2, "z": 1})
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_reanswer_applies_the_answer_to_the_new_interrupt(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.ran_before(approval(runs, V1), saver, {"log": []}, config, runs)
    graph = ne.compile(approval(runs, V2), checkpointer=saver)
    result = drive.run(graph, Command(resume="yes"), config, resume=ne.ResumePolicy(reanswer=True))
    assert result["log"] == ["a", "answer=yes", "z"]
    # a re-ran; ask ran once to reach the interrupt again and once with the answer.
    assert runs == Counter({"a": 1, "ask": 2, "z": 1})
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_unstamped_thread_resumes_as_langgraph_would(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:
    with pytest.raises(Crash):
        drive.invoke(
            linear(runs, crash="c").compile(checkpointer=saver),
            {"log": []},
            config,
            durability="sync",
        )
    runs.clear()
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.UNVERIFIED and plan.notes
    with caplog.at_level("WARNING", logger="neograph_ext"):
        assert drive.run(graph, None, config)["log"] == list("abcd")
    assert "without a stamp" in caplog.text
    assert runs == Counter("cd")
    # Stamped from then on: the new checkpoints carry the fingerprints.
    head = saver.get_tuple(config)
    assert head is not None and "neograph_ext" in head.metadata


def test_channel_type_change_in_a_plain_graph_without_annotations(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    def build(summary_type: Any, runs: Counter[str]) -> StateGraph[Any, Any, Any, Any]:
        # Built at run time on purpose: the channel's type is the parameter.
        state = TypedDict("Plain", {"doc": str, "summary": summary_type, "out": str}, total=False)  # noqa: UP013
        builder = StateGraph(state)

        def load(s: Any):  # type: ignore[no-untyped-def]
            runs["load"] += 1
            return {"doc": "text"}

        def summarize(s: Any):  # type: ignore[no-untyped-def]
            runs["summarize"] += 1
            return {"summary": "short"}

        def publish(s: Any):  # type: ignore[no-untyped-def]
            runs["publish"] += 1
            return {"out": str(s["summary"])}

        for fn in (load, summarize, publish):
            builder.add_node(fn.__name__, fn)
        builder.add_edge(START, "load")
        builder.add_edge("load", "summarize")
        builder.add_edge("summarize", "publish")
        return builder

    runs: Counter[str] = Counter()
    drive.run(ne.compile(build(str, runs), checkpointer=saver), {}, config)
    runs.clear()
    graph = ne.compile(build(list[str], runs), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"summarize"}
    (change,) = plan.changes
    assert change.reason is ne.types.ChangeReason.CHANNEL and change.channel == "summary"
    drive.run(graph, None, config)
    assert runs == Counter(["summarize", "publish"])


class Report(BaseModel):
    score: int = 0
    note: str = ""


class ReportV2(BaseModel):
    score: list[int] = []
    note: str = ""


def pydantic_graph(state: type[BaseModel], runs: Counter[str]) -> StateGraph[Any, Any, Any, Any]:
    def score(s: Any) -> dict[str, Any]:
        runs["score"] += 1
        return {"score": 5 if state is Report else [5]}

    def note(s: Any) -> dict[str, Any]:
        runs["note"] += 1
        return {"note": f"score is {s.score}"}

    builder = StateGraph(state)
    builder.add_node("score", score)
    builder.add_node("note", note)
    builder.add_edge(START, "score")
    builder.add_edge("score", "note")
    return builder


def test_pydantic_state_whose_field_became_incompatible(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.ran_before(pydantic_graph(Report, runs), saver, {}, config, runs)
    ReportV2.__name__ = ReportV2.__qualname__ = "Report"
    graph = ne.compile(pydantic_graph(ReportV2, runs), checkpointer=saver)
    # The stored score (5) no longer validates as list[int]; planning must not care.
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"score"}
    assert drive.run(graph, None, config) == {"score": [5], "note": "score is [5]"}
    assert runs == Counter(["score", "note"])


def test_multi_turn_change_whose_earlier_values_are_dead_rewinds_the_latest_turn(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(linear(runs, {"b": V1}), checkpointer=saver)
    drive.run(graph, {"log": ["turn1"]}, config)
    drive.run(graph, {"log": ["turn2"]}, config)
    assert runs == Counter("abcdabcd"), "a different input on a complete thread is a new turn"
    runs.clear()
    changed = ne.compile(linear(runs, {"b": V2}), checkpointer=saver)
    # Turn 2 wrote every channel turn 1 wrote: turn 1's values are dead (a live one
    # blocks: tests/integration/test_long_lived.py).
    plan = drive.plan(changed, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.blocker is None
    drive.run(changed, None, config)
    assert runs == Counter("bcd")


def test_same_input_on_a_complete_thread_returns_the_stored_result(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(linear(runs), checkpointer=saver)
    first = drive.run(graph, {"log": ["x"]}, config)
    assert drive.run(graph, {"log": ["x"]}, config) == first
    assert drive.run(graph, None, config) == first
    assert runs == Counter("abcd")


def test_thread_written_with_exit_durability_is_reported_not_guessed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.run(ne.compile(linear(runs, {"c": V1}), checkpointer=saver), {"log": []}, config,
           durability="exit")  # fmt: skip
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.blocker is not None and "durability='exit'" in plan.blocker
    with pytest.raises(ne.CheckpointSchemaError, match="durability='exit'"):
        drive.run(graph, None, config)
