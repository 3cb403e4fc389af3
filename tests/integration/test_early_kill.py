"""A process killed before LangGraph saved the first step leaves only the input
checkpoint: the thread must resume as incomplete, never count as finished."""

from __future__ import annotations

from collections import Counter
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.pipelines import linear

INPUT = {"log": [], "value": 7}


def test_a_head_that_is_the_input_checkpoint_resumes_every_node(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(linear(runs), checkpointer=saver)
    # Exactly what a kill right after ``run()`` saved its input leaves behind.
    drive.update_state(graph, config, INPUT, as_node="__input__")
    assert drive.get_state(graph, config).next == ("__start__",)

    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.CONTINUE
    assert drive.run(graph, None, config) == {"log": list("abcd"), "value": 7}
    assert runs == Counter("abcd")
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_an_input_given_to_it_is_ignored(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(linear(runs), checkpointer=saver)
    drive.update_state(graph, config, INPUT, as_node="__input__")

    assert drive.plan(graph, config).kind is ne.PlanKind.CONTINUE
    assert drive.run(graph, {"log": [], "value": 1}, config) == {
        "log": list("abcd"),
        "value": 7,
    }
    assert runs == Counter("abcd")
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE
