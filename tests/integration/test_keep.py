"""A rewind keeps the finished work of the unchanged tasks of the superstep it forks.

Each case runs a graph, changes one parallel branch, and rewinds: only the changed
tasks and what follows them run again (counted), ``plan.rerun`` names exactly them,
and the final state equals a fresh run's under the new code.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

import neograph_ext as ne
from neograph_ext.drivers._drivers import Driver
from neograph_ext.drivers._thread import thread_call
from neograph_ext.flows._keep import forked, keep
from tests.drive import Drive, Saver
from tests.graphs.pipelines import Crash, State, diamond, model, node, wire

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))

Builder = StateGraph[Any, Any, Any, Any]


def fan(runs: Counter[str], changed: bool, branches: str = "bc", crash: bool = False) -> Builder:
    """``diamond`` whose branch ``c`` declares V2 when ``changed`` (else V1) and crashes
    when ``crash``."""
    return diamond(runs, V2 if changed else V1, branches=branches, crash="c" if crash else None)


class FanState(TypedDict, total=False):
    results: Annotated[list[str], operator.add]


def send_fan(runs: Counter[str], changed: bool) -> Builder:
    """``prepare`` sends two items to each of two worker nodes; ``right`` changes."""

    def worker(name: str, returns: object) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def fn(state: dict[str, Any]) -> dict[str, Any]:
            runs[name] += 1
            return {"results": [f"{name}{state['item']}"]}

        fn.__annotations__ = {"state": dict, "return": returns}
        return fn

    def prepare(state: FanState) -> dict[str, Any]:
        runs["prepare"] += 1
        return {}

    def total(state: FanState) -> dict[str, Any]:
        runs["total"] += 1
        return {"results": [f"total={len(state['results'])}"]}

    builder = StateGraph(FanState)
    builder.add_node("prepare", prepare)
    builder.add_node("left", worker("left", V1))
    builder.add_node("right", worker("right", V2 if changed else V1))
    builder.add_node("total", total)
    builder.add_edge(START, "prepare")
    builder.add_conditional_edges(
        "prepare",
        lambda s: [Send(w, {"item": i}) for w in ("left", "right") for i in (1, 2)],
        ["left", "right"],
    )
    builder.add_edge(["left", "right"], "total")
    builder.add_edge("total", END)
    return builder


def sub_fan(runs: Counter[str], changed: bool, *, inner: bool) -> Builder:
    """``a -> (b || sub) -> d``; ``sub`` is a subgraph ``inner-1 -> inner-2``. The change
    is in ``inner-2`` when ``inner``, else in ``b``."""
    graph = StateGraph(State)
    graph.add_node("inner-1", node("inner-1", runs))
    inner_returns = V2 if changed and inner else V1
    graph.add_node("inner-2", node("inner-2", runs, returns=inner_returns))
    graph.add_edge(START, "inner-1")
    graph.add_edge("inner-1", "inner-2")
    builder = StateGraph(State)
    builder.add_node("a", node("a", runs))
    builder.add_node("b", node("b", runs, returns=V2 if changed and not inner else V1))
    builder.add_node("sub", ne.compile(graph))
    builder.add_node("d", node("d", runs))
    wire(builder, "a", ["b", "sub"], "d")
    return builder


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Counter[str], bool], Builder]
    input: dict[str, Any]
    runs_again: Counter[str]
    """What runs on the rewind."""
    kept_tasks: frozenset[str]
    """The nodes of the rewound step whose work is kept."""
    rerun: frozenset[str]
    """What the plan names as running again (a subgraph's inner nodes run as its node)."""


CASES = [
    Case("diamond", fan, {"log": []}, Counter("cd"), frozenset("b"), frozenset("cd")),
    Case(
        "fan-out-3",
        lambda r, c: fan(r, c, "bce"),
        {"log": []},
        Counter("cd"),
        frozenset("be"),
        frozenset("cd"),
    ),
    Case(
        "send",
        send_fan,
        {},
        Counter({"right": 2, "total": 1}),
        frozenset({"left"}),
        frozenset({"right", "total"}),
    ),
    Case(
        "subgraph-changed",
        lambda r, c: sub_fan(r, c, inner=True),
        {"log": []},
        Counter(["inner-1", "inner-2", "d"]),
        frozenset("b"),
        frozenset({"sub", "d"}),
    ),
    Case(
        "subgraph-kept",
        lambda r, c: sub_fan(r, c, inner=False),
        {"log": []},
        Counter("bd"),
        frozenset({"sub"}),
        frozenset("bd"),
    ),
]


def at(config: RunnableConfig, checkpoint_id: str | None) -> RunnableConfig:
    """``config`` addressing one checkpoint of its thread."""
    thread_id = config["configurable"]["thread_id"]
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": checkpoint_id,
        }
    }


def fresh(drive: Drive, case: Case, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    """The final state of an uninterrupted run of the new code, on another thread."""
    other: RunnableConfig = {
        "configurable": {"thread_id": f"{config['configurable']['thread_id']}-fresh"}
    }
    return drive.run(ne.compile(case.build(Counter(), True), checkpointer=saver), case.input, other)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_rewind_runs_only_the_changed_tasks_of_the_forked_step(
    drive: Drive, saver: Saver, config: RunnableConfig, case: Case, runs: Counter[str]
) -> None:
    drive.ran_before(case.build(runs, False), saver, case.input, config, runs)
    graph = ne.compile(case.build(runs, True), checkpointer=saver)

    plan = drive.plan(graph, config)
    result = drive.run(graph, None, config)

    assert plan.kind is ne.PlanKind.REWIND and plan.kept_tasks == case.kept_tasks
    assert runs == case.runs_again
    assert plan.rerun == case.rerun
    assert result == fresh(drive, case, saver, config)
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_stream_keeps_the_unchanged_branch(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.ran_before(fan(runs, False), saver, {"log": []}, config, runs)
    graph = ne.compile(fan(runs, True), checkpointer=saver)

    chunks = list(drive.stream(graph, None, config, stream_mode="updates"))

    assert runs == Counter("cd")
    # LangGraph reports the kept task's writes as an update too, as on any resume.
    assert {"b", "c", "d"} <= {name for chunk in chunks for name in chunk}


def test_after_a_crash_in_one_branch_a_fix_that_changes_it_keeps_the_sibling(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    with pytest.raises(Crash):
        drive.run(ne.compile(fan(runs, False, crash=True), checkpointer=saver), {"log": []}, config)
    assert runs == Counter("abc")
    runs.clear()
    graph = ne.compile(fan(runs, True), checkpointer=saver)

    plan = drive.plan(graph, config)
    result = drive.run(graph, None, config)

    # The fix changed c's type, so the crashed step itself is rewound; b had finished.
    assert plan.kind is ne.PlanKind.REWIND and plan.kept_tasks == {"b"}
    assert plan.rerun == {"c"}
    assert runs == Counter("cd")
    assert result == drive.run(
        ne.compile(fan(Counter(), True), checkpointer=saver),
        {"log": []},
        {"configurable": {"thread_id": f"{config['configurable']['thread_id']}-fresh"}},
    )


def test_after_a_crash_in_one_branch_an_unchanged_fix_keeps_the_sibling(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    with pytest.raises(Crash):
        drive.run(ne.compile(fan(runs, False, crash=True), checkpointer=saver), {"log": []}, config)
    runs.clear()
    graph = ne.compile(fan(runs, False), checkpointer=saver)

    assert drive.plan(graph, config).kind is ne.PlanKind.CONTINUE
    drive.run(graph, None, config)

    assert runs == Counter("cd")


def test_a_fork_left_without_its_kept_writes_is_forked_again(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.ran_before(fan(runs, False), saver, {"log": []}, config, runs)
    graph = ne.compile(fan(runs, True), checkpointer=saver)
    plan = drive.plan(graph, config)
    # What a run killed between its fork and the kept writes leaves: the bare fork.
    at_target = at(config, plan.checkpoint_id)
    target = saver.get_tuple(at_target)
    assert target is not None
    checkpoint, metadata = forked(target, graph.neograph_ext_stamp, "", 1)
    saver.put(at_target, checkpoint, metadata, {})
    # Planned from the fork's parent, read once the listing is closed: reading it inside
    # a SqliteSaver listing waited forever for the saver's lock.
    assert drive.plan(graph, config).checkpoint_id == plan.checkpoint_id

    result = drive.run(graph, None, config)

    assert runs == Counter("cd")
    assert result["log"] == list("abcd")
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


@pytest.mark.parametrize("addressed", [False, True], ids=["newest", "by-checkpoint-id"])
def test_langgraph_hands_saved_writes_back_only_when_resuming_the_newest_checkpoint(
    drive: Drive, saver: Saver, config: RunnableConfig, addressed: bool, runs: Counter[str]
) -> None:
    # What _keep relies on (langgraph 1.2.24): resuming the thread's newest checkpoint
    # applies the writes saved on it instead of running their tasks; addressing the
    # same checkpoint by id is time travel and runs them all again.
    graph = ne.compile(fan(runs, False), checkpointer=saver)
    drive.invoke(graph, {"log": []}, config)
    target = drive.plan(ne.compile(fan(runs, True), checkpointer=saver), config).checkpoint_id
    at_target = at(config, target)
    with Driver(thread_call(graph, config)) as driver:
        driver.run(keep(graph, saver, at_target, frozenset("b"), graph.neograph_ext_stamp, ""))
    fork = saver.get_tuple(config)
    assert fork is not None
    runs.clear()

    drive.invoke(graph, None, fork.config if addressed else config)

    assert runs == (Counter("bcd") if addressed else Counter("cd"))
