"""The stamp's description, stored once per saver and read back when planning.

Per saver and drive: a change is still found, minimal, with its field-level diff, from
the description a run (or a plain call, or a server's own saver) stored; each distinct
description is fetched once; a missing one counts as a change, never as none, and is
looked up again until found.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

import neograph_ext as ne
from neograph_ext.storage._stamp_order import ORDER_THREAD
from neograph_ext.storage._stamp_store import THREAD_PREFIX, save
from tests.drive import Drive, Saver
from tests.graphs import big
from tests.graphs.pipelines import linear, model
from tests.integration.reads import fetching

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def test_a_change_deep_inside_a_large_model_is_found_minimal_with_its_diff(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.ran_before(big.wide(runs), saver, {}, config, runs)
    graph = ne.compile(big.wide(runs, changed=17), checkpointer=saver)

    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"n17"}
    assert plan.kept == {f"n{i:02d}" for i in range(17)}
    assert any("score: int -> float" in line for c in plan.changes for line in c.diff), plan
    drive.run(graph, None, config)
    assert runs == Counter(f"n{i:02d}" for i in range(17, big.NODES))


def test_a_run_stores_the_description_a_later_plan_reads(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    drive.run(ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver), {}, config)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"c"} and "Analysis.score: int -> float" in str(plan)


def test_a_checkpointer_injected_at_run_time_gets_the_description(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    served = ne.compile(linear(Counter(), {"c": V1})).copy(update={"checkpointer": saver})
    drive.invoke(served, {"log": []}, config)  # as a server runs it: no run(), its own saver
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"c"}
    assert "Analysis.score: int -> float" in str(plan)


def test_a_plain_call_that_crashes_still_stores_its_description(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    crashing = ne.compile(linear(Counter(), {"c": V1}, crash="d"), checkpointer=saver)
    with pytest.raises(RuntimeError):
        drive.invoke(crashing, {"log": []}, config)  # a plain call, as a server makes it
    plan = drive.plan(ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver), config)
    assert plan.invalidated_nodes == {"c"} and "Analysis.score: int -> float" in str(plan)


class _Recording(InMemorySaver):
    """Records the thread of every checkpoint written, in order (``aput`` is ``put``)."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[str] = []

    def put(self, config: RunnableConfig, *args: Any) -> RunnableConfig:
        self.written.append(config["configurable"]["thread_id"])
        return super().put(config, *args)


def test_a_plain_call_adds_no_write_before_langgraphs_own(drive: Drive) -> None:
    saver = _Recording()
    graph = ne.compile(linear(Counter()), checkpointer=saver)
    config = _thread()
    drive.invoke(graph, {"log": []}, config)
    assert saver.written[0] == config["configurable"]["thread_id"]
    assert saver.written[-1].startswith(THREAD_PREFIX)
    # The description, then the stamp's place in the order of stamps (``_stamp_order``).
    reserved = [THREAD_PREFIX + graph.neograph_ext_stamp.id, ORDER_THREAD]
    assert [t for t in saver.written if t.startswith(THREAD_PREFIX)] == reserved
    drive.invoke(graph, {"log": []}, _thread())
    assert [t for t in saver.written if t.startswith(THREAD_PREFIX)] == reserved  # once per saver


def test_a_missing_description_counts_as_changed_never_as_unchanged(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    old = ne.compile(linear(runs, {"c": V1}), checkpointer=saver)
    drive.run(old, {"log": []}, config)
    saver.delete_thread(THREAD_PREFIX + old.neograph_ext_stamp.id)
    # The graph that wrote the thread needs no description to know it is current.
    assert drive.plan(old, config).kind is ne.PlanKind.UP_TO_DATE

    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.step == 0
    assert plan.invalidated_nodes == set("abcd") and plan.rerun == set("abcd")
    assert any("may re-run more than the changed nodes" in note for note in plan.notes)
    runs.clear()
    assert drive.run(graph, None, config)["log"] == list("abcd")
    assert runs == Counter("abcd")
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_a_missing_description_is_looked_up_again_until_found(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    old = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)
    drive.run(old, {"log": []}, config)
    saver.delete_thread(THREAD_PREFIX + old.neograph_ext_stamp.id)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)
    assert drive.plan(graph, config).invalidated_nodes == set("abcd")

    save(saver, old.neograph_ext_stamp)  # as another process storing it meanwhile
    plan = drive.plan(graph, config)
    assert plan.invalidated_nodes == {"c"} and "Analysis.score: int -> float" in str(plan)


def test_planning_fetches_each_distinct_description_once(
    drive: Drive, saver: Saver, config: RunnableConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    drive.run(ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver), {"log": []}, config)
    bumped = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver, versions={"d": "2"})
    drive.run(bumped, None, config)  # rewinds d: the lineage now holds two old stamps
    fetched = fetching(drive, saver, monkeypatch)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver, versions={"d": "2"})
    plan = drive.plan(graph, config)

    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"c"}
    descriptions = [t for t in fetched if t.startswith(THREAD_PREFIX)]
    assert sorted(descriptions) == sorted(set(descriptions)) and len(descriptions) == 2


def test_a_found_description_is_read_once_per_graph(
    drive: Drive, saver: Saver, config: RunnableConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    drive.run(ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver), {"log": []}, config)
    fetched = fetching(drive, saver, monkeypatch)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)
    first, second = drive.plan(graph, config), drive.plan(graph, config)

    assert first == second and second.invalidated_nodes == {"c"}
    assert "Analysis.score: int -> float" in str(second)
    assert sum(t.startswith(THREAD_PREFIX) for t in fetched) == 1
