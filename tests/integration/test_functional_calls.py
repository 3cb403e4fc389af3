"""A cached ``@task`` result answers only the call that made it, across a deploy that
moves calls: LangGraph names a call by its task and position alone.

Each case crashes release 1 of an entrypoint in its last call, resumes the thread with
release 2 (its own code, compiled on the same saver), and counts task executions; each
has a control, release 1 again, whose cached results are all served. ``literal``
releases name their arguments in their code, so ``plan`` knows every call; the others
loop over the input, so ``plan`` says their calls are matched when they are made.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from tests.cli.support import program_report
from tests.drive import Drive, Saver
from tests.graphs.calls import SUMMARIES, drafts, summaries
from tests.graphs.pipelines import Crash

ALPHA_BETA = "first=summary of alpha, second=summary of beta"
BETA_ALPHA = "first=summary of beta, second=summary of alpha"


def _crashed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, **release: Any
) -> Counter[str]:
    """Release 1 of ``summaries``, crashed in ``join``: its ``summ`` results cached."""
    runs: Counter[str] = Counter()
    workflow = summaries(runs, {"join"}, is_async=drive.is_async, **release)
    with pytest.raises(Crash):
        drive.run(ne.compile(workflow, checkpointer=saver), SUMMARIES, config)
    return runs


@pytest.mark.parametrize("literal", [True, False], ids=["literal", "looped"])
def test_swapped_calls_of_one_task_each_get_their_own_result(
    drive: Drive, saver: Saver, config: RunnableConfig, literal: bool, runs: Counter[str]
) -> None:
    assert _crashed(drive, saver, config, literal=literal) == Counter(summ=2, join=1)
    swapped = summaries(runs, set(), swapped=True, literal=literal, is_async=drive.is_async)
    graph = ne.compile(swapped, checkpointer=saver)
    plan = drive.plan(graph, config)
    if literal:
        assert (plan.kind, plan.invalidated_nodes, plan.kept) == ("rewind", {"summ"}, set())
        assert "call 0: the code now makes it to another task or with other arguments" in str(plan)
    else:
        assert (plan.kind, plan.kept) == ("continue", set())
        assert plan.matched_when_made == ("summ (call 0)", "summ (call 1)")
        assert "calls are matched when they are made: summ (call 0)" in str(plan)
    # Before: each call was served the other's cached result (alpha, beta).
    assert drive.run(graph, None, config) == BETA_ALPHA
    assert runs == Counter(summ=2, join=1)
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


@pytest.mark.parametrize("literal", [True, False], ids=["literal", "looped"])
def test_unchanged_calls_are_served_their_cached_results(
    drive: Drive, saver: Saver, config: RunnableConfig, literal: bool, runs: Counter[str]
) -> None:
    _crashed(drive, saver, config, literal=literal)
    graph = ne.compile(
        summaries(runs, set(), literal=literal, is_async=drive.is_async), checkpointer=saver
    )
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.CONTINUE
    assert plan.kept == ({"summ"} if literal else set())
    assert drive.run(graph, None, config) == ALPHA_BETA
    assert runs == Counter(join=1)


@pytest.mark.parametrize("literal", [True, False], ids=["literal", "looped"])
def test_a_removed_call_hands_no_later_call_of_another_task_its_result(
    drive: Drive, saver: Saver, config: RunnableConfig, literal: bool, runs: Counter[str]
) -> None:
    crashed = _crashed(drive, saver, config, cleaned=True, literal=literal)
    assert crashed == Counter(clean=1, summ=2, join=1)
    graph = ne.compile(
        summaries(runs, set(), literal=literal, is_async=drive.is_async), checkpointer=saver
    )
    plan = drive.plan(graph, config)
    # Before: ``continue``, with ``clean`` listed as kept though no longer called.
    if literal:
        assert (plan.kind, plan.kept) == ("rewind", set())
        assert plan.rerun == {"summ", "join", "summaries"}
    else:
        assert (plan.kind, plan.kept) == ("continue", set())
        # ``clean`` is no task of this release: its call is none the code can make.
        assert plan.matched_when_made == ("summ (call 1)", "summ (call 2)")
    # Before: summ("beta") was served summ("alpha")'s result: alpha, alpha.
    assert drive.run(graph, None, config) == ALPHA_BETA
    assert runs == Counter(summ=2, join=1)


@pytest.mark.parametrize("literal", [True, False], ids=["literal", "looped"])
def test_a_kept_first_call_is_served_when_nothing_moved(
    drive: Drive, saver: Saver, config: RunnableConfig, literal: bool, runs: Counter[str]
) -> None:
    _crashed(drive, saver, config, cleaned=True, literal=literal)
    graph = ne.compile(
        summaries(runs, set(), cleaned=True, literal=literal, is_async=drive.is_async),
        checkpointer=saver,
    )
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.CONTINUE
    assert plan.kept == ({"clean", "summ"} if literal else {"clean"})
    assert drive.run(graph, None, config) == ALPHA_BETA
    assert runs == Counter(join=1)


def _drafted(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> None:
    runs: Counter[str] = Counter()
    workflow = drafts(runs, {"publish"}, outlined=False, is_async=drive.is_async)
    with pytest.raises(Crash):
        drive.run(ne.compile(workflow, checkpointer=saver), "tides", config)
    assert runs == Counter(research=1, write=1, publish=1)


def test_an_inserted_first_call_is_planned_as_it_runs(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    _drafted(drive, saver, config)
    graph = ne.compile(
        drafts(runs, set(), outlined=True, is_async=drive.is_async), checkpointer=saver
    )
    plan = drive.plan(graph, config)
    # Before: ``continue``, research and write listed as kept, though both ran again.
    assert (plan.kind, plan.kept) == ("rewind", set())
    assert {"research", "write", "publish"} <= plan.rerun
    assert drive.run(graph, None, config) == "published: NOTES ON TIDES"
    assert runs == Counter(outline=1, research=1, write=1, publish=1)


def test_an_unchanged_draft_keeps_its_research_and_writing(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    _drafted(drive, saver, config)
    graph = ne.compile(
        drafts(runs, set(), outlined=False, is_async=drive.is_async), checkpointer=saver
    )
    plan = drive.plan(graph, config)
    assert (plan.kind, plan.kept, plan.matched_when_made) == (
        "continue",
        {"research", "write"},
        (),
    )
    assert drive.run(graph, None, config) == "published: NOTES ON TIDES"
    assert runs == Counter(publish=1)


def _worker(db: str, thread: str, release: str) -> dict[str, Any]:
    return dict(program_report("-m", "tests.integration.calls_worker", db, thread, release))


# One way: the subject is a process boundary, one release per process.
@pytest.mark.slow
def test_a_release_in_another_process_serves_each_call_its_own_result(
    where: str, tmp_path: Path
) -> None:
    swapped, control = str(uuid.uuid4()), str(uuid.uuid4())
    for thread in (swapped, control):
        first = _worker(where, thread, "1")
        assert (first["result"], first["runs"]) == ("crashed in join", {"summ": 2, "join": 1})
    moved = _worker(where, swapped, "2")
    assert (moved["plan"], moved["kept"]) == ("rewind", [])
    assert (moved["result"], moved["runs"]) == (BETA_ALPHA, {"summ": 2, "join": 1})
    again = _worker(where, control, "1-again")
    assert (again["plan"], again["kept"]) == ("continue", ["summ"])
    assert (again["result"], again["runs"]) == (ALPHA_BETA, {"join": 1})


def test_a_plain_call_of_an_auto_resuming_entrypoint_serves_each_call_its_own_result(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    # As under LangGraph Server: the plan says ``continue`` (the looped calls are matched
    # when made), so the call is LangGraph's own until a call is made otherwise.
    _crashed(drive, saver, config, literal=False)
    swapped = summaries(runs, set(), swapped=True, literal=False, is_async=drive.is_async)
    graph = ne.compile(swapped, checkpointer=saver, attach=[ne.AutoResume()])
    assert drive.invoke(graph, None, config) == BETA_ALPHA
    assert runs == Counter(summ=2, join=1)
    control: RunnableConfig = {"configurable": {"thread_id": f"{uuid.uuid4()}"}}
    _crashed(drive, saver, control, literal=False)
    runs.clear()
    same = summaries(runs, set(), literal=False, is_async=drive.is_async)
    assert drive.invoke(
        ne.compile(same, checkpointer=saver, attach=[ne.AutoResume()]), None, control
    )
    assert runs == Counter(join=1)


def test_strict_mode_raises_for_a_call_found_made_otherwise_before_any_task_runs(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    _crashed(drive, saver, config, literal=False)
    swapped = summaries(runs, set(), swapped=True, literal=False, is_async=drive.is_async)
    graph = ne.compile(swapped, checkpointer=saver, resume=ne.ResumePolicy(on_change="raise"))
    with pytest.raises(ne.CheckpointSchemaError) as raised:
        drive.run(graph, None, config)
    assert raised.value.invalidated_nodes == {"summ"}
    assert "call 0: the code now makes it to another task" in str(raised.value)
    assert runs == Counter()
