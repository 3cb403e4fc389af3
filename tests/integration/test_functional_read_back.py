"""An ``@entrypoint``'s cached task results that do not read back as their task's
declared return type (a class the serializer cannot revive comes back as a ``dict``):
found at compile time, and on resume the task runs again instead of its result being
served as something else."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.func import entrypoint, task
from pydantic import BaseModel

import neograph_ext as ne
from tests.drive import SYNC_ONLY, Drive
from tests.graphs.pipelines import Crash


class Kept(BaseModel):
    """An importable model: it reads back as itself."""

    text: str


def make(runs: Counter[str], *, crash: bool = False, local: bool = True, is_async: bool) -> Any:
    """``count -> write -> publish``; ``write`` returns a model defined inside this
    factory (as factories and tests do) unless ``local`` is False."""

    class Draft(BaseModel):
        text: str

    model = Draft if local else Kept

    def count_body(text: str) -> int:
        runs["count"] += 1
        return len(text)

    def write_body(text: str) -> Any:
        runs["write"] += 1
        return model(text=text)

    def publish_body(draft: Any) -> str:
        runs["publish"] += 1
        if crash:
            raise Crash("publish")
        return f"{type(draft).__name__}:{getattr(draft, 'text', None)}"

    bodies = {"count": count_body, "write": write_body, "publish": publish_body}
    returns = {"count": int, "write": model, "publish": str}
    tasks = {}
    for name, body in bodies.items():

        async def abody(arg: Any, body: Any = body) -> Any:
            return body(arg)

        chosen: Any = abody if is_async else body
        chosen.__name__ = name
        chosen.__annotations__ = {"return": returns[name]}
        tasks[name] = task(chosen)
    count, write, publish = tasks["count"], tasks["write"], tasks["publish"]
    if is_async:

        @entrypoint()
        async def flow(text: str) -> str:
            await count(text)
            return await publish(await write(text))

        return flow

    @entrypoint()
    def flow(text: str) -> str:  # type: ignore[no-redef]
        count(text).result()
        return publish(write(text).result()).result()

    return flow


def crashed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, *, local: bool = True
) -> None:
    workflow = make(Counter(), crash=True, local=local, is_async=drive.is_async)
    with pytest.raises(Crash):
        drive.run(ne.compile(workflow, checkpointer=saver), "hello", config)


def test_a_cached_result_of_a_local_class_runs_its_task_again(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    crashed(drive, saver, config)
    graph = ne.compile(make(runs, is_async=drive.is_async), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"write"}
    assert plan.kept == {"count"} and plan.rerun == {"write", "publish", "flow"}
    assert "cached result of task `write` does not read back as `Draft`: got `dict`" in str(plan)
    assert drive.run(graph, None, config) == "Draft:hello"  # without the check: 'dict:None'
    assert runs == Counter({"write": 1, "publish": 1})  # count's result was kept
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_strict_mode_raises_naming_the_cached_result(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    crashed(drive, saver, config)
    graph = ne.compile(make(runs, is_async=drive.is_async), checkpointer=saver)
    with pytest.raises(ne.CheckpointSchemaError) as caught:
        drive.run(graph, None, config, resume=ne.ResumePolicy(on_change="raise"))
    assert caught.value.invalidated_nodes == {"write"}
    assert "cached result of task `write` does not read back" in str(caught.value)
    assert runs == Counter()


def test_no_false_alarm_for_results_that_read_back(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    crashed(drive, saver, config, local=False)
    graph = ne.compile(make(runs, local=False, is_async=drive.is_async), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.CONTINUE and plan.kept == {"count", "write"}
    assert drive.run(graph, None, config) == "Kept:hello"
    assert runs == Counter({"publish": 1})


@SYNC_ONLY  # compile's own check: no driver runs
def test_compile_warns_naming_the_task_and_strict_compile_raises(
    saver: BaseCheckpointSaver[Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="neograph_ext"):
        ne.compile(make(Counter(), is_async=False), checkpointer=saver)
    warned = [r.getMessage() for r in caplog.records if "will not read back" in r.getMessage()]
    assert len(warned) == 1
    assert "make.<locals>.Draft" in warned[0] and "task `write` output" in warned[0]
    with pytest.raises(ne.GraphError, match="local class"):
        strict = ne.ResumePolicy(on_change="raise")
        ne.compile(make(Counter(), is_async=False), checkpointer=saver, resume=strict)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="neograph_ext"):
        ne.compile(make(Counter(), local=False, is_async=False), checkpointer=saver)
    assert not [r for r in caplog.records if "will not read back" in r.getMessage()]
