"""``history`` / ``ahistory`` and ``list_threads`` / ``alist_threads``: a thread's lineage
read through the public API, each step compared with a graph as ``plan`` compares it.

Threads are written by ``run`` under ``a -> b -> c -> d`` where ``c`` returns ``V1``;
``V2`` changes ``Analysis.score`` from ``int`` to ``float``. Reading never runs a node
(the counters stay empty) and never writes (the checkpoint count stays).
"""

from __future__ import annotations

import uuid
from collections import Counter
from importlib.metadata import version
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from tests.graphs.pipelines import Crash, linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))
STEPS = [
    (-1, "input", set()),
    (0, "loop", set()),
    *((i, "loop", {n}) for i, n in enumerate("abcd", 1)),
]


def _stored(saver: BaseCheckpointSaver[Any]) -> int:
    return sum(1 for _ in saver.list(None))


async def _astored(saver: BaseCheckpointSaver[Any]) -> int:
    return len([tup async for tup in saver.alist(None)])


def _assert_compared_with_v2(found: ne.types.History, config: RunnableConfig) -> None:
    """The lineage of a finished v1 thread, seen from v2: only ``c``'s step changed."""
    assert found.thread_id == config["configurable"]["thread_id"]
    assert [(e.step, e.source, set(e.ran)) for e in found] == STEPS
    assert len(found) == found.checkpoints == 6
    assert {e.stamp for e in found} == {ne.types.StampStatus.STAMPED}
    assert all(e.verified and e.why is None and e.children <= 1 for e in found)
    assert [e.parent_id for e in found[1:]] == [e.checkpoint_id for e in found[:-1]]
    changed = {e.step: e.changes for e in found if e.changes}
    [change] = changed.pop(3) or ()
    assert changed == {}
    assert (change.node, change.reason) == ("c", ne.types.ChangeReason.OUTPUT_TYPE)
    assert change.diff == ("Analysis.score: int -> float",)


def test_history_compares_each_step_with_the_graph(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    ne.run(ne.compile(linear(runs, {"c": V1}), checkpointer=saver), {"log": []}, config)
    runs.clear()
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    stored = _stored(saver)

    found = ne.history(graph, config)

    _assert_compared_with_v2(found, config)
    # The same comparison as the plan's: the change that rewinds is the one listed
    # for step 3 (index 4: the lineage starts at step -1).
    assert ne.plan(graph, config).changes == found[4].changes
    assert runs == Counter() and _stored(saver) == stored


async def test_ahistory_compares_each_step_with_the_graph(
    async_saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    await ne.arun(
        ne.compile(linear(runs, {"c": V1}), checkpointer=async_saver), {"log": []}, config
    )
    runs.clear()
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=async_saver)
    stored = await _astored(async_saver)

    found = await ne.ahistory(graph, config)

    _assert_compared_with_v2(found, config)
    assert (await ne.aplan(graph, config)).changes == found[4].changes
    assert runs == Counter() and await _astored(async_saver) == stored


def test_a_node_renamed_before_it_finished_runs_by_its_new_name(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """A node renamed (``renames=``) before it ever finished is waited on by its new
    name: nothing changed, the thread continues there, and ``history`` agrees."""
    with pytest.raises(Crash):
        ne.run(ne.compile(linear(runs, crash="c"), checkpointer=saver), {"log": []}, config)
    renamed = linear(runs, names=("a", "b", "c2", "d"))
    graph = ne.compile(renamed, checkpointer=saver, renames={"c": "c2"})

    plan = ne.plan(graph, config)
    found = ne.history(graph, config)
    runs.clear()
    ne.run(graph, None, config)

    assert plan.kind is ne.PlanKind.CONTINUE and plan.next_nodes == {"c2"}
    assert not plan.changes and not [e for e in found if e.changes]
    assert runs == Counter({"c2": 1, "d": 1})


def test_history_of_a_checkpointer_alone_compares_nothing(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    graph = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)
    ne.run(graph, {"log": []}, config)

    alone = ne.history(saver, config)

    assert [(e.step, e.source, set(e.ran)) for e in alone] == STEPS
    assert all(e.changes is None and e.stamp is ne.types.StampStatus.STAMPED for e in alone)
    compared = ne.history(graph, config)
    assert [e.stamp_id for e in alone] == [e.stamp_id for e in compared]
    assert all(e.changes == () for e in compared)


_FORKS_ON_TIME_TRAVEL = tuple(int(n) for n in version("langgraph").split(".")[:2]) >= (1, 2)
"""Whether invoking from a checkpoint writes a fork checkpoint first (LangGraph 1.2)."""


def test_a_rewind_shows_as_a_fork_and_a_branch(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    ne.run(ne.compile(linear(runs, {"c": V1}), checkpointer=saver), {"log": []}, config)
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    target = ne.plan(graph, config).checkpoint_id
    runs.clear()
    ne.run(graph, None, config)
    assert runs == Counter("cd")

    found = ne.history(graph, config)

    assert found.checkpoints > len(found)
    [branched] = [e for e in found if e.children > 1]
    assert branched.checkpoint_id == target and branched.children == 2
    # The branch starts at the target's one child on the head's lineage: the fork
    # LangGraph's time travel writes (since 1.2), or else the step run from it.
    [child] = [e for e in found if e.parent_id == target]
    assert child.source == ("fork" if _FORKS_ON_TIME_TRAVEL else "loop")
    assert all(e.changes == () for e in found), "the rewound thread is v2's now"


def test_a_named_checkpoint_and_absent_ones(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    graph = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)
    ne.run(graph, {"log": []}, config)
    full = ne.history(graph, config)
    thread = config["configurable"]["thread_id"]

    upto = ne.history(
        graph, {"configurable": {"thread_id": thread, "checkpoint_id": full[3].checkpoint_id}}
    )
    absent = ne.history(graph, {"configurable": {"thread_id": thread, "checkpoint_id": "nope"}})
    unknown = ne.history(graph, {"configurable": {"thread_id": str(uuid.uuid4())}})

    assert list(upto) == list(full[:4])
    assert (len(absent), absent.checkpoints) == (0, 6)
    assert (len(unknown), unknown.checkpoints) == (0, 0)


def test_unstamped_and_undescribed_checkpoints(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    builder = linear(Counter(), {"c": V1})
    builder.compile(checkpointer=saver).invoke({"log": []}, config)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)

    unstamped = ne.history(graph, config)

    assert {e.stamp for e in unstamped} == {ne.types.StampStatus.UNSTAMPED}
    assert all(e.changes is None and e.why == "written without a stamp" for e in unstamped)
    assert not any(e.verified or e.stamp_id for e in unstamped)

    other: RunnableConfig = {"configurable": {"thread_id": str(uuid.uuid4())}}
    old = ne.compile(builder, checkpointer=saver)
    ne.run(old, {"log": []}, other)
    [stamp_id] = {e.stamp_id for e in ne.history(old, other)}
    saver.delete_thread(f"neograph-ext-stamp:{stamp_id}")  # the description, lost

    undescribed = ne.history(graph, other)

    assert {e.stamp for e in undescribed} == {ne.types.StampStatus.UNDESCRIBED}
    assert all(e.why and "is not stored" in e.why for e in undescribed)
    reasons = {(c.node, c.reason) for e in undescribed for c in e.changes or ()}
    assert reasons == {(n, ne.types.ChangeReason.UNKNOWN) for n in "abcd"}


def test_history_refuses_what_plan_refuses(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    builder = linear(Counter())
    graph = ne.compile(builder, checkpointer=saver)
    refused: list[tuple[Any, RunnableConfig, str]] = [
        (builder.compile(checkpointer=saver), config, "carries no neograph-ext stamp"),
        (ne.compile(builder), config, "has no checkpointer"),
        (graph, {"configurable": {}}, "config names no thread"),
        (saver, {"configurable": {"thread_id": "neograph-ext-stamp:x"}}, "is reserved"),
    ]
    for source, given, message in refused:
        with pytest.raises(ne.GraphError, match=message):
            ne.history(source, given)


def test_the_deprecated_list_threads_leaves_out_the_stamp_descriptions(
    saver: BaseCheckpointSaver[Any],
) -> None:
    graph = ne.compile(linear(Counter()), checkpointer=saver)
    names = sorted(f"{uuid.uuid4()}" for _ in range(3))
    for name in names:
        ne.run(graph, {"log": []}, {"configurable": {"thread_id": name}})

    with pytest.warns(
        DeprecationWarning, match=r"list_threads is deprecated: use neograph_ext.check"
    ):
        listed = ne.list_threads(saver)

    assert set(names) <= set(listed) and list(listed) == sorted(listed)
    assert not any(ne.is_reserved_thread(name) for name in listed)
    assert any(
        ne.is_reserved_thread(t.config["configurable"]["thread_id"]) for t in saver.list(None)
    )


async def test_the_deprecated_alist_threads_leaves_out_the_stamp_descriptions(
    async_saver: BaseCheckpointSaver[Any],
) -> None:
    graph = ne.compile(linear(Counter()), checkpointer=async_saver)
    names = sorted(f"{uuid.uuid4()}" for _ in range(3))
    for name in names:
        await ne.arun(graph, {"log": []}, {"configurable": {"thread_id": name}})

    with pytest.warns(
        DeprecationWarning, match=r"alist_threads is deprecated: use neograph_ext.ach"
    ):
        listed = await ne.alist_threads(async_saver)

    assert set(names) <= set(listed) and list(listed) == sorted(listed)
    assert not any(ne.is_reserved_thread(name) for name in listed)
