"""Where the Functional API meets the library's other features: rolling deploys,
interrupts inside tasks, several turns, pruning, failed calls, after a deploy.

Each case runs an entrypoint of ``tests.graphs.functional`` (sync for the sync drive,
async for the async one) on every saver, deploys changed code, and counts the task
executions of the resume; the result is the one a fresh run of the new code returns.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

import neograph_ext as ne
from tests.cli.support import DATABASE_KINDS, Database, database
from tests.drive import Drive, Saver
from tests.graphs.functional import asking_chain, asking_task, chain, crashed_in, nesting, saving
from tests.graphs.pipelines import Crash

db = pytest.fixture(params=DATABASE_KINDS)(database)


def test_older_code_leaves_a_thread_the_newer_code_rewound_alone(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    workflow = asking_chain(runs, is_async=drive.is_async)
    old = ne.compile(workflow, checkpointer=saver)
    new = ne.compile(workflow, checkpointer=saver, versions={"t2": "v2"})
    drive.run(old, 1, config)  # waits on the question, under the old release
    assert "__interrupt__" in drive.run(new, None, config)  # t2 re-runs, asked again
    assert runs == Counter(t1=1, t2=2)
    for _ in range(3):  # workers of both releases keep taking the thread
        assert drive.plan(old, config).kind is ne.PlanKind.SUPERSEDED
        with pytest.raises(ne.ThreadSupersededError) as raised:
            drive.run(old, Command(resume="1"), config)
        assert raised.value.owner == new.neograph_ext_stamp.id
        assert drive.plan(new, config).kind is ne.PlanKind.CONTINUE
    assert runs == Counter(t1=1, t2=2)  # before: t2 ran once more per turn, each release
    assert drive.run(new, Command(resume="1"), config) == 4
    assert runs == Counter(t1=1, t2=2, t3=1)
    # A rollback takes the thread over, once, and the newer code must take it back.
    rollback = ne.ResumePolicy(take_over=True)
    assert drive.plan(old, config, resume=rollback).rerun == {"t2", "t3", "workflow"}
    assert "__interrupt__" in drive.run(old, None, config, resume=rollback)
    assert drive.run(old, Command(resume="1"), config) == 4
    assert runs == Counter(t1=1, t2=3, t3=2)
    assert drive.plan(new, config).kind is ne.PlanKind.SUPERSEDED


def test_a_pruned_thread_never_hands_a_stale_previous_to_the_new_code(
    db: Database, config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(saving(runs, is_async=False), checkpointer=db.saver)
    assert [ne.run(graph, x, config) for x in (1, 2, 3)] == [101, 203, 306]
    ne.prune(graph, apply=True, keep_last=1, thread_ids=[config["configurable"]["thread_id"]])
    runs.clear()
    # The save type changed: turn 3 started from a `previous` saved as a str.
    changed = ne.compile(saving(runs, is_async=False, save=int), checkpointer=db.saver)
    for policy in (ne.ResumePolicy(), ne.ResumePolicy(replay_turns=True)):
        # Before: planned as a rewind of turn 3 alone (or, replaying, from turn 3's
        # input), handing it the stale value.
        plan = ne.plan(changed, config, resume=policy)
        assert plan.blocker is not None and "pruned" in plan.blocker and not plan.replayed
        with pytest.raises(ne.CheckpointSchemaError, match="migrations"):
            ne.run(changed, 3, config, resume=policy)
    assert runs == Counter()
    convert = ne.ResumePolicy(migrations={int: int})
    assert ne.plan(changed, config, resume=convert).kind is ne.PlanKind.MIGRATE
    assert ne.run(changed, 3, config, resume=convert) == 306
    assert ne.run(changed, 4, config) == 410  # as a fresh run of the new code: 101+...+104
    assert runs == Counter(workflow=1, add=1)


def test_a_change_of_a_task_called_inside_a_task_reruns_its_caller(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    workflow, ran = crashed_in(drive, saver, config, runs, nesting, "last")
    assert ran == Counter(outer=1, inner=1, last=1)
    # ``inner``'s call is cached inside ``outer``'s: before, outer's cached result,
    # made from the old inner, was served and inner never ran again.
    graph = ne.compile(workflow, checkpointer=saver, versions={"inner": "v2"})
    plan = drive.plan(graph, config)
    assert (plan.kind, plan.invalidated_nodes) == ("rewind", {"outer"})
    assert plan.rerun == {"inner", "outer", "last", "workflow"} and plan.kept == frozenset()
    assert "outer > inner: changed" in str(plan)
    assert drive.run(graph, 1, config) == 3
    assert runs == Counter(outer=1, inner=1, last=1)
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_a_replay_of_turns_cut_short_replays_the_turns_still_owed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(saving(runs, is_async=drive.is_async), checkpointer=saver)
    assert [drive.run(graph, x, config) for x in (1, 2, 3)] == [101, 203, 306]
    crash = {"add"}
    changed = ne.compile(
        saving(runs, is_async=drive.is_async, save=int, crash=crash), checkpointer=saver
    )
    replay = ne.ResumePolicy(replay_turns=True)
    with pytest.raises(Crash):  # the replay dies in its first turn
        drive.run(changed, None, config, resume=replay)
    crash.clear()
    runs.clear()
    plan = drive.plan(changed, config)
    assert plan.kind is ne.PlanKind.CONTINUE and len(plan.replayed) == 2
    # Before: the first turn was finished alone (101) and turns 2 and 3 were lost.
    assert drive.run(changed, None, config) == 306
    assert runs == Counter(workflow=3, add=3)
    assert drive.plan(changed, config).kind is ne.PlanKind.UP_TO_DATE


def _asked_in_turn_two(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> Any:
    """``saving`` asking in its second turn: turn 1 done, turn 2 waiting on the question."""
    graph = ne.compile(saving(runs, is_async=drive.is_async, ask_at=2), checkpointer=saver)
    drive.run(graph, 1, config)
    assert "__interrupt__" in drive.run(graph, 2, config)
    return graph


def test_a_replay_stopped_by_a_question_replays_the_later_turns_once_answered(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = _asked_in_turn_two(drive, saver, config, runs)
    assert drive.run(graph, Command(resume="1000"), config) == 1203
    assert drive.run(graph, 3, config) == 1306
    runs.clear()
    changed = ne.compile(
        saving(runs, is_async=drive.is_async, save=int, ask_at=2), checkpointer=saver
    )
    replay = ne.ResumePolicy(replay_turns=True)
    assert "__interrupt__" in drive.run(changed, None, config, resume=replay)  # turn 2 asks
    assert len(drive.plan(changed, config).replayed) == 1
    # Before: the answer ended the thread with turn 2 (1203), turn 3 lost.
    assert drive.run(changed, Command(resume="1000"), config) == 1306
    assert runs == Counter(add=3, workflow=4)
    assert drive.plan(changed, config).kind is ne.PlanKind.UP_TO_DATE


def test_a_migrated_previous_of_a_turn_waiting_on_a_question_keeps_its_cached_calls(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    _asked_in_turn_two(drive, saver, config, runs)  # `add` finished, then it asks
    runs.clear()
    convert = ne.ResumePolicy(migrations={int: int})
    changed = ne.compile(
        saving(runs, is_async=drive.is_async, save=int, ask_at=2),
        checkpointer=saver,
        resume=convert,
    )
    plan = drive.plan(changed, config)
    assert (plan.kind, plan.migrated, plan.kept) == ("migrate", {"__previous__"}, {"add"})
    # Before: planned `migrate` again on the fork it wrote, and failed; the fork's copy
    # of `add`'s result was filed under the old call's id, so `add` ran again.
    assert drive.run(changed, Command(resume="1000"), config) == 1203
    assert runs == Counter(workflow=1)
    head = saver.get_tuple(config)
    assert head is not None and head.checkpoint["channel_values"]["__previous__"] == 1203
    assert drive.plan(changed, config).kind is ne.PlanKind.UP_TO_DATE


def test_accept_on_a_crashed_turn_keeps_its_cached_calls(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    workflow, _ = crashed_in(drive, saver, config, runs, chain, "t3")
    changed = ne.compile(workflow, checkpointer=saver, versions={"t2": "v2"})
    drive.accept(changed, config)  # handled by hand: t2's cached result stands
    assert drive.plan(changed, config).kept == {"t1", "t2"}
    # Before: the fork `accept` wrote held the cached results under the old call ids,
    # so t1 and t2 ran again.
    assert drive.run(changed, None, config) == 3
    assert runs == Counter(t3=1)


@pytest.mark.parametrize(
    ("changed", "asked_again", "ran"),
    [
        ("t1", True, Counter(t1=1, ask=2, t3=1)),  # upstream of the question: asked again
        ("ask", False, Counter(ask=1, t3=1)),  # the asking task itself: nothing cached
        ("t3", False, Counter(ask=1, t3=1)),  # after the question: not run yet
    ],
)
def test_a_question_asked_inside_a_task_after_a_deploy(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    changed: str,
    asked_again: bool,
    ran: Counter[str],
    runs: Counter[str],
) -> None:
    workflow = asking_task(runs, is_async=drive.is_async)
    assert "__interrupt__" in drive.run(ne.compile(workflow, checkpointer=saver), 1, config)
    runs.clear()
    graph = ne.compile(workflow, checkpointer=saver, versions={changed: "v2"})
    plan = drive.plan(graph, config)
    assert plan.kind is (ne.PlanKind.REWIND if asked_again else ne.PlanKind.CONTINUE)
    out = drive.run(graph, Command(resume="5"), config)
    if asked_again:  # the answer to the old question is set aside
        assert "__interrupt__" in out
        # Answered again, the question asked again is answered (on langgraph 1.1 the
        # rewind, run on the turn's input checkpoint itself, asked again forever).
        out = drive.run(graph, Command(resume="5"), config)
    assert out == 70  # as a fresh run of the new code answered 5: (1 + 1 + 5) * 10
    assert runs == ran
