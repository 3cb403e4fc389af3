"""What ``_langgraph_calls`` knows of how the Functional API stores a run, checked on a
real entrypoint: each test fails loudly when an upgrade of LangGraph changes it."""

from __future__ import annotations

from collections import Counter

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from neograph_ext.decision._langgraph_calls import (
    RETURN,
    call_id,
    entrypoint_task_id,
    finished_calls,
)
from tests.graphs.functional import chain, fan_out
from tests.graphs.pipelines import Crash


def _crashed(crash: set[str], parallel: bool = False) -> tuple[InMemorySaver, dict[str, object]]:
    saver = InMemorySaver()
    runs: Counter[str] = Counter()
    make = fan_out if parallel else chain
    workflow = make(runs, crash, is_async=False)
    workflow.checkpointer = saver
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(Crash):
        workflow.invoke(1, config, durability="sync")
    return saver, config


def test_a_crashed_run_keeps_one_input_checkpoint_holding_the_finished_calls() -> None:
    saver, config = _crashed({"t3"})
    tuples = list(saver.list(config))
    assert [(t.metadata["source"], t.metadata["step"]) for t in tuples] == [("input", -1)]
    head = tuples[0]
    calls = finished_calls(head.checkpoint, -1, "workflow", {"t1", "t2", "t3"}, head.pending_writes)
    assert [(c.position, c.task) for c in calls] == [(0, "t1"), (1, "t2")]
    assert [dict(c.writes)[RETURN] for c in calls] == [2, 4]


def test_call_ids_are_those_langgraph_files_the_writes_under() -> None:
    saver, config = _crashed({"t3"})
    head = next(iter(saver.list(config)))
    ids = {task_id for task_id, _, _ in head.pending_writes}
    expected = {
        call_id(head.checkpoint, -1, "workflow", t, i) for i, t in enumerate(["t1", "t2", "t3"])
    }
    assert expected | {entrypoint_task_id(head.checkpoint, -1, "workflow")} == ids


def test_parallel_calls_are_ordered_by_when_they_were_started() -> None:
    saver, config = _crashed({"join"}, parallel=True)
    head = next(iter(saver.list(config)))
    calls = finished_calls(
        head.checkpoint, -1, "workflow", {"p1", "p2", "p3", "join"}, head.pending_writes
    )
    assert [c.task for c in calls] == ["p1", "p2", "p3"]


def test_a_call_of_a_task_not_named_is_left_unknown_and_last() -> None:
    saver, config = _crashed({"t3"})
    head = next(iter(saver.list(config)))
    calls = finished_calls(head.checkpoint, -1, "workflow", {"t2"}, head.pending_writes)
    assert [c.task for c in calls] == ["t2", None]
