"""Rolling deploys: workers of an old and a new release serve the same threads, and the
old code never undoes the new code's work; a rollback takes a thread over deliberately.

Counted as the issue measured it: a thread waiting for approval (or crashed, or
complete) served by old and new workers taking turns six times. Before, every turn was
a rewind (``summarize``, an LLM call, ran 6 times and the human was asked 6 times).
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import StateGraph
from langgraph.types import Command, interrupt
from pydantic import BaseModel

import neograph_ext
from neograph_ext import PlanKind, ResumePolicy, ThreadSupersededError
from tests.drive import Drive, Saver
from tests.graphs.deploys import Release, SummaryV1, SummaryV2, SummaryV3
from tests.graphs.pipelines import Crash, deployed, wire

SHAPES = ("waiting", "crashed", "complete")
"""The thread the old code left: at an interrupt, after a crash, or complete."""


def _started(drive: Drive, old: Release, shape: str, config: RunnableConfig) -> Any:
    """The thread as the old release's workers left it; the input of its turn."""
    given = {"doc": shape}
    if shape == "crashed":
        old.failing.add("publish")
        with pytest.raises(Crash):
            drive.run(old.serving(), given, config)
        old.failing.clear()
    else:
        drive.run(old.serving(), given, config)
    return given if shape == "complete" else None


def _questions(result: Any) -> set[str]:
    """The ids of the questions a run returned: a question asked again has a new one."""
    return {found.id for found in (result or {}).get("__interrupt__", ())}


@pytest.mark.parametrize("shape", SHAPES)
def test_after_the_new_code_took_a_thread_the_old_code_runs_nothing_on_it(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, shape: str
) -> None:
    ask = shape == "waiting"
    old = Release(SummaryV1, saver, ask=ask)
    new = Release(SummaryV2, saver, ask=ask)
    given = _started(drive, old, shape, config)
    before = sum(old.runs.values())
    asked: set[str] = set()
    for turn in range(6):
        if turn % 2 == 0:
            asked |= _questions(drive.run(new.serving(), given, config))
            continue
        with pytest.raises(ThreadSupersededError) as refused:
            drive.run(old.serving(), given, config)
        assert refused.value.owner == new.graph.neograph_ext_stamp.id
        assert isinstance(refused.value, ValueError)  # a server passes its message on
        assert "take_over=True" in str(refused.value)
        assert new.graph.neograph_ext_stamp.id[:16] in str(refused.value)
    assert sum(old.runs.values()) == before  # the old code ran nothing
    assert new.runs["summarize"] == 1  # was 6: once per turn
    assert new.runs["draft"] == 0  # upstream work kept
    if ask:
        assert len(asked) == 1  # the human was asked once (was 6 times)
    else:
        assert new.runs["publish"] == 1
    decided = drive.plan(old.serving(), config)
    assert decided.kind is PlanKind.SUPERSEDED
    assert decided.owner == new.graph.neograph_ext_stamp.id
    assert decided.invalidated_nodes == {"summarize"}


def test_a_served_graph_of_the_old_code_leaves_the_new_codes_thread_alone(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    old = Release(SummaryV1, saver, auto_resume=True)
    new = Release(SummaryV2, saver, auto_resume=True)
    drive.invoke(old.serving(), {"doc": "served"}, config)
    drive.invoke(new.serving(), None, config)
    assert new.runs["summarize"] == 1
    before = dict(old.runs)
    with pytest.raises(ThreadSupersededError):
        drive.invoke(old.serving(), None, config)
    assert dict(old.runs) == before
    drive.invoke(new.serving(), None, config)
    assert new.runs["summarize"] == 1


def test_a_rollback_takes_the_thread_over_and_then_the_new_code_must_take_it_back(
    drive: Drive, saver: Saver, config: RunnableConfig, caplog: pytest.LogCaptureFixture
) -> None:
    old = Release(SummaryV1, saver)
    new = Release(SummaryV2, saver)
    drive.run(old.serving(), {"doc": "rollback"}, config)
    drive.run(new.serving(), None, config)
    taking = ResumePolicy(take_over=True)
    shown = drive.plan(old.serving(), config, resume=taking)
    assert shown.kind is PlanKind.REWIND
    assert shown.taken_from == new.graph.neograph_ext_stamp.id
    with caplog.at_level(logging.WARNING, logger="neograph_ext"):
        drive.run(old.serving(), None, config, resume=taking)
    assert any("takes it over" in r.getMessage() for r in caplog.records)
    assert old.runs["summarize"] == 2  # its own first run, and the take-over's
    # The old code owns the thread now: it runs on, and nothing re-runs.
    drive.run(old.serving(), None, config)
    assert old.runs["summarize"] == 2
    # Now the new code is the one that must take the thread over: no ping-pong.
    with pytest.raises(ThreadSupersededError) as refused:
        drive.run(new.serving(), None, config)
    assert refused.value.owner == old.graph.neograph_ext_stamp.id
    assert new.runs["summarize"] == 1
    drive.run(new.serving(), None, config, resume=taking)
    assert new.runs["summarize"] == 2
    with pytest.raises(ThreadSupersededError):
        drive.run(old.serving(), None, config)
    assert old.runs["summarize"] == 2


def test_accept_takes_the_thread_over_without_running_anything(
    drive: Drive, saver: Saver, config: RunnableConfig, caplog: pytest.LogCaptureFixture
) -> None:
    old = Release(SummaryV1, saver, ask=False)
    new = Release(SummaryV2, saver, ask=False)
    given = {"doc": "accepted"}
    drive.run(old.serving(), given, config)
    drive.run(new.serving(), given, config)
    with caplog.at_level(logging.WARNING, logger="neograph_ext"):
        drive.accept(old.serving(), config)
    assert any("taken over from newer code" in r.getMessage() for r in caplog.records)
    runs = (dict(old.runs), dict(new.runs))
    assert drive.plan(old.serving(), config).kind is PlanKind.UP_TO_DATE
    drive.run(old.serving(), given, config)
    with pytest.raises(ThreadSupersededError):
        drive.run(new.serving(), given, config)
    assert (dict(old.runs), dict(new.runs)) == runs


def test_a_release_after_a_rollback_takes_the_thread_as_any_newer_code_does(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    old = Release(SummaryV1, saver)
    new = Release(SummaryV2, saver)
    drive.run(old.serving(), {"doc": "later"}, config)
    drive.run(new.serving(), None, config)
    drive.run(old.serving(), None, config, resume=ResumePolicy(take_over=True))
    later = Release(SummaryV3, saver)
    # The take-over ranks the old code above the new one on this thread, not above a
    # release neither had seen: the fix after a rollback rolls forward as usual.
    drive.run(later.serving(), None, config)
    assert later.runs["summarize"] == 1
    for earlier in (old, new):
        with pytest.raises(ThreadSupersededError):
            drive.run(earlier.serving(), None, config)


def test_switching_a_branch_back_in_development(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    """As docs/deploys.md tells it: switching back is a rollback, which the database
    cannot tell from a worker of the old release; development graphs say so once, with
    ``compile(..., resume=ResumePolicy(take_over=True))``."""
    main = Release(SummaryV1, saver)
    branch = Release(SummaryV2, saver)
    drive.run(main.serving(), {"doc": "dev"}, config)
    drive.run(branch.serving(), None, config)
    with pytest.raises(ThreadSupersededError, match="take_over=True"):
        drive.run(main.serving(), None, config)
    developing = ResumePolicy(take_over=True)
    main_dev = Release(SummaryV1, saver, resume=developing)
    branch_dev = Release(SummaryV2, saver, resume=developing)
    for switch in range(4):
        drive.run((main_dev if switch % 2 == 0 else branch_dev).serving(), None, config)
    # Each switch re-runs the changed node once, and nothing else.
    assert (main_dev.runs["summarize"], branch_dev.runs["summarize"]) == (2, 2)
    assert main_dev.runs["draft"] == branch_dev.runs["draft"] == 0


def _checked(
    drive: Drive, graph: Any, config: RunnableConfig
) -> list[neograph_ext.types.ThreadCheck]:
    """``check_threads`` (or its async twin) of the config's thread."""
    thread = [config["configurable"]["thread_id"]]
    if not drive.is_async:
        return list(neograph_ext.check_threads(graph, thread))

    async def checked() -> list[neograph_ext.types.ThreadCheck]:
        return [found async for found in neograph_ext.acheck_threads(graph, thread)]

    return drive.wait(checked())


def _two_questions(
    saver: BaseCheckpointSaver[Any],
    answer: type[BaseModel],
    runs: Counter[str],
    *,
    auto_resume: bool = False,
) -> Any:
    """``(first | second) -> join``: both branches ask in one step; ``first`` stores its
    answer as ``answer`` (the releases differ in it)."""
    state = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "Asked", {"first": answer, "second": str, "out": str}, total=False
    )

    def first(s: Any) -> dict[str, Any]:
        runs["first"] += 1
        return {"first": answer(text=str(interrupt("first?")))}

    def second(s: Any) -> dict[str, Any]:
        runs["second"] += 1
        return {"second": str(interrupt("second?"))}

    def join(s: Any) -> dict[str, Any]:
        runs["join"] += 1
        return {"out": f"{s['first'].text} {s['second']}"}

    builder = StateGraph(state)
    for name, fn in (("first", first), ("second", second), ("join", join)):
        builder.add_node(name, fn)
    wire(builder, ["first", "second"], "join")
    served = {"attach": [neograph_ext.AutoResume()]} if auto_resume else {}
    return neograph_ext.compile(builder, checkpointer=saver, **served)


@pytest.mark.parametrize("served", [False, True], ids=["run", "served"])
def test_old_code_is_refused_a_step_whose_other_question_the_new_code_answered(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, served: bool
) -> None:
    """The step stays where it is (no checkpoint is written while a question is open):
    the new code's claim on it refuses the old code, and every question keeps its id.
    A served graph (``auto_resume=True``, LangGraph Server) claims it alike."""
    old_runs, new_runs = Counter[str](), Counter[str]()
    old = _two_questions(saver, SummaryV1, old_runs, auto_resume=served)
    new = _two_questions(saver, SummaryV2, new_runs, auto_resume=served)
    call = drive.invoke if served else drive.run
    deployed(SummaryV1)
    asked = {found.value: found.id for found in call(old, {}, config)["__interrupt__"]}
    deployed(SummaryV2)
    waiting = call(new, Command(resume={asked["first?"]: "yes"}), config)
    assert _questions(waiting) == {asked["second?"]}  # the open question kept its id
    assert new_runs["first"] == 1
    deployed(SummaryV1)
    decided = drive.plan(old, config)
    assert decided.kind is PlanKind.SUPERSEDED  # was "continue": join on new output
    assert decided.owner == new.neograph_ext_stamp.id
    (checked,) = _checked(drive, old, config)
    assert checked.written_by == new.neograph_ext_stamp.id  # what ``check`` counts
    assert checked.plan.kind is PlanKind.SUPERSEDED
    with pytest.raises(ThreadSupersededError):
        call(old, Command(resume={asked["second?"]: "no"}), config)
    assert old_runs == Counter({"first": 1, "second": 1})  # the old code ran nothing more
    deployed(SummaryV2)
    assert drive.plan(new, config).kind is PlanKind.CONTINUE
    done = call(new, Command(resume={asked["second?"]: "no"}), config)
    assert done["out"] == "yes no"
    # ``second`` runs at each resume until answered, as LangGraph runs it.
    assert new_runs == Counter({"first": 1, "second": 2, "join": 1})
    assert old_runs["join"] == 0


def test_a_rollback_of_a_claimed_step_re_runs_what_the_new_code_finished(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    """Taking over a step the new code claimed counts what its tasks finished as the new
    code's: the old code asks their question again rather than reuse their output; the
    new code is then refused until it takes the thread back."""
    old_runs, new_runs = Counter[str](), Counter[str]()
    old = _two_questions(saver, SummaryV1, old_runs)
    new = _two_questions(saver, SummaryV2, new_runs)
    deployed(SummaryV1)
    asked = {found.value: found.id for found in drive.run(old, {}, config)["__interrupt__"]}
    deployed(SummaryV2)
    drive.run(new, Command(resume={asked["first?"]: "yes"}), config)
    deployed(SummaryV1)
    taking = ResumePolicy(take_over=True)
    decided = drive.plan(old, config, resume=taking)
    assert decided.kind is PlanKind.REWIND
    assert decided.taken_from == new.neograph_ext_stamp.id
    assert "first" in decided.invalidated_nodes
    again = drive.run(old, None, config, resume=taking)
    assert {found.value for found in again["__interrupt__"]} >= {"first?"}
    assert old_runs["join"] == 0  # the new code's ``first`` never reached ``join``
    deployed(SummaryV2)
    assert drive.plan(new, config).kind is PlanKind.SUPERSEDED


def _asking_twice(
    saver: BaseCheckpointSaver[Any], answer: type[BaseModel], runs: Counter[str]
) -> Any:
    """``ask -> finish``: ``ask`` asks two questions in turn; the releases differ in
    what it stores."""
    state = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "Twice", {"asked": answer, "out": str}, total=False
    )

    def ask(s: Any) -> dict[str, Any]:
        runs["ask"] += 1
        first, second = interrupt("first?"), interrupt("second?")
        return {"asked": answer(text=f"{first} {second}")}

    def finish(s: Any) -> dict[str, Any]:
        runs["finish"] += 1
        return {"out": s["asked"].text}

    builder = StateGraph(state)
    builder.add_node("ask", ask)
    builder.add_node("finish", finish)
    wire(builder, "ask", "finish")
    return neograph_ext.compile(builder, checkpointer=saver)


def test_old_code_is_refused_a_node_the_new_code_asked_again(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    """One node asking twice: the new code answered the first question, so the node runs
    under the new code; the old code would run it again with both answers."""
    old_runs, new_runs = Counter[str](), Counter[str]()
    old = _asking_twice(saver, SummaryV1, old_runs)
    new = _asking_twice(saver, SummaryV2, new_runs)
    deployed(SummaryV1)
    drive.run(old, {}, config)
    deployed(SummaryV2)
    second = drive.run(new, Command(resume="yes"), config)
    assert [found.value for found in second["__interrupt__"]] == ["second?"]
    deployed(SummaryV1)
    assert drive.plan(old, config).kind is PlanKind.SUPERSEDED  # was "continue"
    with pytest.raises(ThreadSupersededError):
        drive.run(old, Command(resume="no"), config)
    assert old_runs == Counter({"ask": 1})
    deployed(SummaryV2)
    assert drive.run(new, Command(resume="no"), config)["out"] == "yes no"
    assert new_runs == Counter({"ask": 2, "finish": 1})


def test_a_fixture_of_a_claimed_step_plans_offline_as_live(tmp_path: Path) -> None:
    """The offline gate reads the claim too: it names code, so an export keeps it."""
    config: RunnableConfig = {"configurable": {"thread_id": "asked"}}
    with SqliteSaver.from_conn_string(str(tmp_path / "threads.sqlite")) as saver:
        old = _two_questions(saver, SummaryV1, Counter())
        new = _two_questions(saver, SummaryV2, Counter())
        deployed(SummaryV1)
        asked = {
            found.value: found.id for found in neograph_ext.run(old, {}, config)["__interrupt__"]
        }
        deployed(SummaryV2)
        neograph_ext.run(new, Command(resume={asked["first?"]: "yes"}), config)
        neograph_ext.export_threads(new, tmp_path / "fixtures", threads=["asked"])
        (fixture,) = neograph_ext.testing.read_fixtures(tmp_path / "fixtures")
        deployed(SummaryV1)
        offline = neograph_ext.testing.plan_fixture(old, fixture)
        assert offline.kind is PlanKind.SUPERSEDED
        assert offline == neograph_ext.plan(old, config)
