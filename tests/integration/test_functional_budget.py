"""Budgets and telemetry hold for an ``@entrypoint`` as for a graph: its tasks' model
calls are counted in the thread's ledger, and a call past the cap stops the run."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.func import entrypoint, task

import neograph_ext as ne
from tests.graphs.budget import TOKENS, UsageChat


def _workflow(runs: Counter[str]) -> Any:
    model = UsageChat()

    @task
    def draft(topic: str) -> str:
        runs["draft"] += 1
        return f"{topic}: {model.invoke('draft').content}"

    @task
    def review(text: str) -> str:
        runs["review"] += 1
        return f"{text} / {model.invoke('review').content}"

    @entrypoint()
    def write(topic: str) -> str:
        return review(draft(topic).result()).result()

    return write


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": f"fn-{uuid.uuid4().hex[:8]}"}}


def test_an_entrypoint_s_task_calls_are_counted_and_capped(
    saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    config = _thread()
    capped = ne.compile(
        _workflow(runs), checkpointer=saver, attach=[ne.budget.Budget(max_model_calls=1)]
    )
    with pytest.raises(ne.budget.BudgetExceededError, match="max_model_calls"):
        ne.run(capped, "t", config)
    assert runs == Counter(draft=1, review=1)  # review started; its model call was refused
    spent = ne.budget.ledger(saver, config)
    assert spent is not None and spent.total.model_calls == 1
    assert spent.total.tokens == TOKENS

    raised = ne.compile(
        _workflow(runs), checkpointer=saver, attach=[ne.budget.Budget(max_model_calls=2)]
    )
    assert ne.run(raised, None, config) == "t: ok / ok"
    assert runs == Counter(draft=1, review=2)  # draft's cached result was kept
