"""A process killed before LangGraph saved the first step leaves only the input
checkpoint: the thread must resume as incomplete, never count as finished."""

from __future__ import annotations

from collections import Counter
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from tests.integration.pipelines import linear

INPUT = {"log": [], "value": 7}


def test_a_head_that_is_the_input_checkpoint_resumes_every_node(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs: Counter[str] = Counter()
    graph = ne.compile(linear(runs), checkpointer=saver)
    # Exactly what a kill right after ``run()`` saved its input leaves behind.
    graph.update_state(config, INPUT, as_node="__input__")
    assert graph.get_state(config).next == ("__start__",)

    plan = ne.plan(graph, config)
    assert plan.kind is ne.PlanKind.CONTINUE
    assert ne.run(graph, None, config) == {"log": list("abcd"), "value": 7}
    assert runs == Counter("abcd")
    assert ne.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


async def test_the_async_twin_resumes_it_too(
    async_saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs: Counter[str] = Counter()
    graph = ne.compile(linear(runs), checkpointer=async_saver)
    await graph.aupdate_state(config, INPUT, as_node="__input__")

    assert (await ne.aplan(graph, config)).kind is ne.PlanKind.CONTINUE
    assert await ne.arun(graph, {"log": [], "value": 1}, config) == {
        "log": list("abcd"),
        "value": 7,
    }
    assert runs == Counter("abcd")
    assert (await ne.aplan(graph, config)).kind is ne.PlanKind.UP_TO_DATE
