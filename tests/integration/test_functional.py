"""The Functional API: an ``@entrypoint`` thread resumes after a deploy, its cached
``@task`` results kept up to the first changed task in call order, dropped from there.

Each case runs an entrypoint (sync for the sync drive, async for the async one) on every
saver, crashes or pauses it, "deploys" the same code with a changed task (another
declared type or version), and counts the task executions of the resume.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.functional import asking_chain, cached, chain, crashed_in, fan_out, saving


def _crashed_in_t3(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> tuple[Counter[str], Any]:
    runs: Counter[str] = Counter()
    workflow, ran = crashed_in(drive, saver, config, runs, chain, "t3")
    assert ran == Counter(t1=1, t2=1, t3=1)
    return runs, workflow


def test_a_crash_with_nothing_changed_continues_without_repeating_a_task(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs, workflow = _crashed_in_t3(drive, saver, config)
    graph = ne.compile(workflow, checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind == "continue"
    assert plan.kept == {"t1", "t2"}
    assert drive.run(graph, None, config) == 3
    assert runs == Counter(t3=1)
    assert drive.plan(graph, config).kind == "up_to_date"


def test_the_first_task_changed_reruns_every_task(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs, workflow = _crashed_in_t3(drive, saver, config)
    graph = ne.compile(workflow, checkpointer=saver, output_types={"t1": float})
    plan = drive.plan(graph, config)
    assert plan.kind == "rewind"
    assert plan.invalidated_nodes == {"t1"}
    # t3, whose call failed, runs too: the plan names every call the run makes.
    assert plan.rerun == {"t1", "t2", "t3", "workflow"}
    assert plan.kept == frozenset()
    assert "t1" in str(plan) and "int -> float" in str(plan)
    assert drive.run(graph, 1, config) == 3
    assert runs == Counter(t1=1, t2=1, t3=1)
    assert drive.plan(graph, config).kind == "up_to_date"


def test_the_middle_task_changed_keeps_the_first(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs, workflow = _crashed_in_t3(drive, saver, config)
    graph = ne.compile(workflow, checkpointer=saver, versions={"t2": "prompt-v2"})
    plan = drive.plan(graph, config)
    assert (plan.kind, plan.invalidated_nodes) == ("rewind", {"t2"})
    assert plan.kept == {"t1"} and plan.rerun == {"t2", "t3", "workflow"}
    assert [(s.node, s.kept) for s in plan.steps] == [("t1", True), ("t2", False)]
    history = len(list(saver.list(config)))
    assert drive.run(graph, 1, config) == 3
    assert runs == Counter(t2=1, t3=1)
    # A fork, never a deletion: the old branch stays.
    assert len(list(saver.list(config))) > history
    assert drive.plan(graph, config).kind == "up_to_date"
    assert drive.run(graph, 1, config) == 3
    assert runs == Counter(t2=1, t3=1)


def test_the_last_task_changed_after_it_crashed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs, workflow = _crashed_in_t3(drive, saver, config)
    graph = ne.compile(workflow, checkpointer=saver, versions={"t3": "v2"})
    # t3 never finished: nothing cached changed, the turn continues.
    assert drive.plan(graph, config).kind == "continue"
    assert drive.run(graph, None, config) == 3
    assert runs == Counter(t3=1)
    # Once finished, a later change of t3 re-runs it alone.
    again = ne.compile(workflow, checkpointer=saver, versions={"t3": "v3"})
    plan = drive.plan(again, config)
    assert (plan.kind, plan.rerun, plan.kept) == ("rewind", {"t3", "workflow"}, {"t1", "t2"})
    assert drive.run(again, 1, config) == 3
    assert runs == Counter(t3=2)


def test_strict_mode_raises_naming_the_task_before_anything_runs(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs, workflow = _crashed_in_t3(drive, saver, config)
    graph = ne.compile(workflow, checkpointer=saver, output_types={"t2": str})
    before = [(t.checkpoint["id"], len(t.pending_writes or ())) for t in saver.list(config)]
    with pytest.raises(ne.CheckpointSchemaError) as raised:
        drive.run(graph, None, config, resume=ne.ResumePolicy(on_change="raise"))
    assert raised.value.invalidated_nodes == {"t2"}
    assert "t2" in str(raised.value)
    assert runs == Counter()
    assert [(t.checkpoint["id"], len(t.pending_writes or ())) for t in saver.list(config)] == before


def test_an_interrupt_after_a_changed_task_is_asked_again(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    workflow = asking_chain(runs, is_async=drive.is_async)
    graph = ne.compile(workflow, checkpointer=saver)
    drive.run(graph, 1, config)
    assert runs == Counter(t1=1, t2=1)
    runs.clear()
    changed = ne.compile(workflow, checkpointer=saver, versions={"t2": "v2"})
    plan = drive.plan(changed, config)
    assert plan.kind == "rewind" and plan.rerun == {"t2", "workflow"}
    out = drive.run(changed, Command(resume="1"), config)
    # The question is asked again; the answer sent to the old one is set aside.
    assert "__interrupt__" in out
    assert runs == Counter(t2=1)
    assert drive.run(changed, Command(resume="1"), config) == 4
    assert runs == Counter(t2=1, t3=1)


def test_reanswer_applies_the_answer_after_the_changed_task_ran_again(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    workflow = asking_chain(runs, is_async=drive.is_async)
    drive.ran_before(workflow, saver, 1, config, runs)
    changed = ne.compile(workflow, checkpointer=saver, versions={"t2": "v2"})
    out = drive.run(changed, Command(resume="1"), config, resume=ne.ResumePolicy(reanswer=True))
    assert out == 4
    assert runs == Counter(t2=1, t3=1)


def test_a_two_turn_entrypoint_reruns_a_turn_whose_save_type_changed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    workflow = saving(runs, is_async=drive.is_async)
    graph = ne.compile(workflow, checkpointer=saver)
    assert drive.run(graph, 1, config) == 101
    assert drive.run(graph, 2, config) == 203  # previous = "101"
    assert runs == Counter(add=2, workflow=2)
    runs.clear()
    # The entrypoint's own return is unchanged, its version bumped: the latest turn's
    # body runs again with its cached task result.
    bumped = ne.compile(workflow, checkpointer=saver, versions={"workflow": "v2"})
    plan = drive.plan(bumped, config)
    assert (plan.kind, plan.invalidated_nodes, plan.kept) == ("rewind", {"workflow"}, {"add"})
    assert drive.run(bumped, 2, config) == 203
    assert runs == Counter(workflow=1)


def test_a_stale_previous_from_an_earlier_turn_blocks_or_replays(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    workflow = saving(runs, is_async=drive.is_async)
    graph = ne.compile(workflow, checkpointer=saver)
    drive.run(graph, 1, config)
    drive.run(graph, 2, config)
    runs.clear()
    # The save type changed: turn 2 started from a `previous` of the old shape.
    changed = ne.compile(saving(runs, is_async=drive.is_async, save=int), checkpointer=saver)
    plan = drive.plan(changed, config)
    assert plan.kind == "rewind" and plan.blocker is not None
    with pytest.raises(ne.CheckpointSchemaError, match="replay_turns"):
        drive.run(changed, 2, config)
    assert runs == Counter()
    replay = ne.ResumePolicy(replay_turns=True)
    assert drive.plan(changed, config, resume=replay).replayed
    assert drive.run(changed, 2, config, resume=replay) == 203
    assert runs == Counter(workflow=2, add=2)


def test_parallel_futures_keep_the_calls_before_the_changed_one(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    workflow, ran = crashed_in(drive, saver, config, runs, fan_out, "join")
    assert ran == Counter(p1=1, p2=1, p3=1, join=1)
    graph = ne.compile(workflow, checkpointer=saver, versions={"p2": "v2"})
    plan = drive.plan(graph, config)
    expected = ("rewind", {"p1"}, {"p2", "p3", "join", "workflow"})
    assert (plan.kind, plan.kept, plan.rerun) == expected
    assert drive.run(graph, 1, config) == (2 + 3 + 4) * 10
    assert runs == Counter(p2=1, p3=1, join=1)


def test_a_cached_task_is_not_served_a_result_of_other_types(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    from langgraph.cache.memory import InMemoryCache

    workflow = cached(runs, is_async=drive.is_async)
    cache = InMemoryCache()
    workflow.cache = cache
    graph = ne.compile(workflow, checkpointer=saver)
    first = {"configurable": {"thread_id": f"{config['configurable']['thread_id']}-1"}}
    second = {"configurable": {"thread_id": f"{config['configurable']['thread_id']}-2"}}
    third = {"configurable": {"thread_id": f"{config['configurable']['thread_id']}-3"}}
    assert drive.run(graph, 1, first) == 4
    assert drive.run(graph, 1, second) == 4
    assert runs == Counter(slow=1, t2=2)  # the second thread was served the cache
    changed = ne.compile(workflow, checkpointer=saver, output_types={"slow": float})
    assert drive.run(changed, 1, third) == 4
    assert runs == Counter(slow=2, t2=3)


def test_stream_yields_langgraphs_chunks_of_the_rewind(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs, workflow = _crashed_in_t3(drive, saver, config)
    graph = ne.compile(workflow, checkpointer=saver, versions={"t2": "v2"})
    chunks = list(drive.stream(graph, 1, config, stream_mode="values"))
    assert chunks[-1] == 3
    assert runs == Counter(t2=1, t3=1)


def test_auto_resume_plans_a_plain_call_as_run_does(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs, workflow = _crashed_in_t3(drive, saver, config)
    graph = ne.compile(
        workflow, checkpointer=saver, versions={"t2": "v2"}, attach=[ne.AutoResume()]
    )
    assert drive.invoke(graph, None, config) == 3
    assert runs == Counter(t2=1, t3=1)
    strict = ne.compile(
        workflow,
        checkpointer=saver,
        versions={"t2": "v3"},
        resume=ne.ResumePolicy(on_change="raise"),
        attach=[ne.AutoResume()],
    )
    with pytest.raises(ne.CheckpointSchemaError) as raised:
        drive.invoke(strict, 1, config)
    assert raised.value.invalidated_nodes == {"t2"}
    assert runs == Counter(t2=1, t3=1)


def test_a_migration_converts_the_previous_saved_under_another_save_type(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(saving(runs, is_async=drive.is_async), checkpointer=saver)
    drive.run(graph, 1, config)
    drive.run(graph, 2, config)
    runs.clear()
    changed = ne.compile(
        saving(runs, is_async=drive.is_async, save=int),
        checkpointer=saver,
        resume=ne.ResumePolicy(migrations={int: lambda saved: int(saved)}),
    )
    plan = drive.plan(changed, config)
    assert (plan.kind, plan.migrated) == ("migrate", {"__previous__"})
    assert drive.run(changed, 2, config) == 203  # the finished turn: nothing re-runs
    assert runs == Counter()
    head = saver.get_tuple(config)
    assert head is not None and head.checkpoint["channel_values"]["__previous__"] == 203
    assert drive.plan(changed, config).kind == "up_to_date"
    assert drive.run(changed, 3, config) == 103 + 203  # previous, converted: 203
    assert runs == Counter(workflow=1, add=1)
