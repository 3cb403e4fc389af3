"""A ``Send`` queued before a crash is stored with its argument whole: an argument of a
class the serializer cannot revive comes back as a ``dict``. On resume the node that
sent it runs again, so every branch gets the class its node declares."""

from __future__ import annotations

import operator
import threading
import time
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from pydantic import BaseModel

import neograph_ext as ne
from tests.drive import Drive


class Shared(BaseModel):
    """An importable job: it reads back as itself."""

    n: int


class Fan(TypedDict, total=False):
    out: Annotated[list[str], operator.add]


def make(runs: Counter[str], *, crash: bool = False, local: bool = True) -> Any:
    """``fan`` sends ``work`` three jobs, of a class defined inside this factory unless
    ``local`` is False; with ``crash``, the third job fails."""

    class Job(BaseModel):
        n: int

    job = Job if local else Shared

    def fan(state: Fan) -> dict[str, Any]:
        runs["fan"] += 1
        return {}

    returned = threading.Semaphore(0)

    def work(given: Any) -> dict[str, Any]:
        runs["work"] += 1
        if crash and getattr(given, "n", None) == 2:
            # The jobs run in parallel: fail once the other two finished and LangGraph
            # stored their writes (it does as each task finishes), so that only this
            # one is left to run; else which of them the crash cut short is up to timing.
            for _ in range(2):
                assert returned.acquire(timeout=10), "the other jobs never finished"
            time.sleep(0.1)
            raise RuntimeError("the third job failed")
        returned.release()
        return {"out": [type(given).__name__]}

    work.__annotations__ = {"given": job, "return": dict}
    builder = StateGraph(Fan)
    builder.add_node("fan", fan)
    builder.add_node("work", work)
    builder.add_edge(START, "fan")
    builder.add_conditional_edges("fan", lambda _: [Send("work", job(n=i)) for i in range(3)])
    builder.add_edge("work", END)
    return builder


def crashed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, *, local: bool = True
) -> None:
    with pytest.raises(RuntimeError, match="third job"):
        drive.run(
            ne.compile(make(Counter(), crash=True, local=local), checkpointer=saver), {}, config
        )


def test_a_send_whose_job_does_not_read_back_runs_its_sender_again(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    crashed(drive, saver, config)
    graph = ne.compile(make(runs), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"fan"}
    assert "a stored Send to `work` does not read back as `Job`: got `dict`" in str(plan)
    result = drive.run(graph, None, config)
    assert sorted(result["out"]) == ["Job", "Job", "Job"]  # without the check: one 'dict'
    assert runs == Counter({"fan": 1, "work": 3})
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_no_false_alarm_for_a_job_that_reads_back(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    crashed(drive, saver, config, local=False)
    graph = ne.compile(make(runs, local=False), checkpointer=saver)
    assert drive.plan(graph, config).kind is ne.PlanKind.CONTINUE
    assert sorted(drive.run(graph, None, config)["out"]) == ["Shared"] * 3
    assert runs == Counter({"work": 1})  # the failed job alone
