"""What to invoke for a decision (``_steps.work_for``), on hand-made plans and heads: no
database, nothing invoked."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Interrupt
from xxhash import xxh3_128_hexdigest

import neograph_ext as ne
from neograph_ext.decision._decision import PlanKind, ResumePlan
from neograph_ext.decision._plan import ASKED_AGAIN
from neograph_ext.decision._policy import ResumePolicy
from neograph_ext.decision._reanswer import Reanswer
from neograph_ext.decision._stamp import RUN_KEY, STAMP_KEY, encode_run, input_digest, stamp_ref
from neograph_ext.decision._steps import Due, ReplayInput, work_for
from neograph_ext.drivers._thread import ThreadCall, at_checkpoint, thread_call

CONFIG: RunnableConfig = {"configurable": {"thread_id": "t"}}
INPUT = {"log": ["hello"]}


class State(TypedDict):
    log: list[str]


def _call() -> ThreadCall:
    builder = StateGraph(State)
    builder.add_node("a", lambda state: {"log": ["a"]})
    builder.add_node("b", lambda state: {"log": ["b"]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    return thread_call(ne.compile(builder, checkpointer=InMemorySaver()), CONFIG)


def _with(call: ThreadCall, **policy: Any) -> ThreadCall:
    """``call`` under ``ResumePolicy(**policy)``."""
    return call._replace(resume=ResumePolicy(**policy))


def _strict() -> ThreadCall:
    return _with(_call(), on_change="raise")


def _head(call: ThreadCall, *, given: Any = INPUT, interrupted: bool = False) -> CheckpointTuple:
    """A head checkpoint whose run started with ``given``, as ``run`` marks it."""
    mark = encode_run(call.stamp, PlanKind.CONTINUE, input_digest(given))
    checkpoint: Any = {
        "v": 4,
        "id": "1f0-head",
        "ts": "2026-12-01T00:00:00+00:00",
        "channel_values": {"log": ["a", "b"]},
        "channel_versions": {},
        "versions_seen": {},
    }
    writes: list[tuple[str, str, Any]] = [("task", "__interrupt__", [])] if interrupted else []
    metadata: Any = {"source": "loop", "step": 2, STAMP_KEY: stamp_ref(call.stamp), RUN_KEY: mark}
    return CheckpointTuple(at_checkpoint(CONFIG, "1f0-head"), checkpoint, metadata, None, writes)


def _plan(kind: PlanKind, **fields: Any) -> ResumePlan:
    return ResumePlan(kind, "t", head_id="1f0-head", **fields)


def test_a_new_thread_is_one_invocation_of_the_input_marked_fresh() -> None:
    call = _call()
    work = work_for(call, ResumePlan(PlanKind.FRESH, "t"), None, INPUT, {})
    (step,) = work.invocations
    assert step.input == INPUT and step.config == CONFIG and step.when is Due.ALWAYS
    assert step.mark == encode_run(call.stamp, PlanKind.FRESH, input_digest(INPUT))
    assert work.kwargs == {"durability": "sync"}


def test_an_answer_to_a_thread_with_no_checkpoint_raises_before_anything_runs() -> None:
    with pytest.raises(ne.GraphError, match="has no checkpoint"):
        work_for(_call(), ResumePlan(PlanKind.FRESH, "t"), None, Command(resume=1), {})


def test_a_blocked_plan_raises_naming_the_blocker() -> None:
    plan = _plan(PlanKind.REWIND, blocker="nothing to fork from")
    with pytest.raises(ne.CheckpointSchemaError, match="nothing to fork from") as raised:
        work_for(_call(), plan, None, None, {})
    assert raised.value.plan is plan


@pytest.mark.parametrize("kind", [PlanKind.REWIND, PlanKind.MIGRATE])
def test_strict_mode_raises_for_a_rewind_or_a_migration(kind: PlanKind) -> None:
    plan = _plan(kind, invalidated_nodes=frozenset({"b"}), checkpoint_id="1f0-a")
    with pytest.raises(ne.CheckpointSchemaError, match="Invalidated nodes: b"):
        work_for(_strict(), plan, None, None, {})


def test_an_unverified_thread_raises_only_when_asked_to() -> None:
    call, plan = _call(), _plan(PlanKind.UNVERIFIED, next_nodes=frozenset({"b"}))
    head = _head(call)
    assert work_for(call, plan, head, None, {}).invocations
    with pytest.raises(ne.CheckpointSchemaError, match="cannot be verified"):
        work_for(_with(call, on_unverified="raise"), plan, head, None, {})


def test_carried_values_are_carried_before_anything_is_invoked() -> None:
    plan = _plan(PlanKind.MIGRATE, migrated=frozenset({"log"}))
    work = work_for(_call(), plan, None, None, {})
    assert work.carry is plan and work.invocations == ()


def test_an_incomplete_head_is_resumed_where_it_stands_whatever_the_input() -> None:
    call = _call()
    plan = _plan(PlanKind.CONTINUE, next_nodes=frozenset({"b"}))
    (step,) = work_for(call, plan, _head(call), {"log": ["other"]}, {}).invocations
    assert step.input is None and step.config == CONFIG
    assert step.mark == encode_run(call.stamp, PlanKind.CONTINUE, input_digest(INPUT))


def test_a_complete_head_given_its_input_again_returns_its_stored_result() -> None:
    call = _call()
    work = work_for(call, _plan(PlanKind.UP_TO_DATE), _head(call), dict(INPUT), {})
    assert work.invocations == () and work.stored == ({"log": ["a", "b"]},)


def test_a_complete_head_given_another_input_starts_a_new_turn_on_the_newest() -> None:
    call = _call()
    other = {"log": ["again"]}
    (step,) = work_for(call, _plan(PlanKind.UP_TO_DATE), _head(call), other, {}).invocations
    assert step.input == other and step.config == at_checkpoint(CONFIG, None)


def test_a_rewind_forks_from_its_target_and_keeps_finished_tasks_on_the_fork() -> None:
    call = _call()
    plan = _plan(PlanKind.REWIND, checkpoint_id="1f0-a", kept_tasks=frozenset({"a"}))
    (step,) = work_for(call, plan, _head(call), None, {}).invocations
    assert step.config == at_checkpoint(CONFIG, None) and step.input is None
    assert step.keep == (at_checkpoint(CONFIG, "1f0-a"), frozenset({"a"}))
    (plain,) = work_for(call, _without_kept(plan), _head(call), None, {}).invocations
    assert plain.config == at_checkpoint(CONFIG, "1f0-a") and plain.keep is None


def _without_kept(plan: ResumePlan) -> ResumePlan:
    return ResumePlan(plan.kind, plan.thread_id, head_id=plan.head_id, checkpoint_id="1f0-a")


def test_a_rewind_of_a_paused_thread_asks_again_and_applies_the_answer_only_if_asked() -> None:
    call = _call()
    plan = _plan(PlanKind.REWIND, checkpoint_id="1f0-a", notes=(ASKED_AGAIN,))
    head = _head(call, interrupted=True)
    answer: Command[Any] = Command(resume="yes")
    (asked,) = work_for(call, plan, head, answer, {}).invocations
    assert asked.input is None and ".ask_again." in asked.mark
    reanswer = _with(call, reanswer=True)
    asked_by_b = Interrupt("b?", id=xxh3_128_hexdigest(b"b:task"))
    known = head._replace(pending_writes=[("task", "__interrupt__", [asked_by_b])])
    _, applied = work_for(reanswer, plan, known, answer, {}).invocations
    assert applied.input == Reanswer({"b": ("yes",)}, known.config, "1f0-a")
    assert applied.when is Due.INTERRUPTED
    # A question no node of this code asks (one removed, or a subgraph's): the answer
    # is set aside, never sent to whichever question the rewind asks first.
    work = work_for(reanswer, plan, head, answer, {})
    assert len(work.invocations) == 1 and "set aside" in " ".join(work.warnings)


OLD_ID = "0f" * 16
"""An interrupt id, as LangGraph makes them (32 hex digits)."""


def test_a_rewind_of_the_step_a_question_waits_in_applies_the_answer_when_not_asked_again() -> None:
    """Only a finished sibling of the asking task changed (no ``ASKED_AGAIN`` note): the
    fork asks the same question under a new id, and the answer given is its answer."""
    call = _call()
    plan = _plan(PlanKind.REWIND, checkpoint_id="1f0-head")
    head = _head(call, interrupted=True)
    keyed = {OLD_ID: "yes"}
    # A dict that is not keyed by interrupt ids is the answer itself, as LangGraph reads it.
    cases = [("yes", "yes"), (keyed, "yes"), ({"1": 1, "2": 2}, None), ({"ok": True}, None)]
    for given, applied in cases:
        fork, answer = work_for(call, plan, head, Command(resume=given), {}).invocations
        assert fork.keep is not None and ".ask_again." not in fork.mark
        assert answer.when is Due.INTERRUPTED
        assert answer.input.resume == (applied or given)
    # Two questions waiting: a bare value would answer neither; it stays keyed.
    two = head._replace(pending_writes=[*(head.pending_writes or ()), ("t2", "__interrupt__", [])])
    _, answer = work_for(call, plan, two, Command(resume=keyed), {}).invocations
    assert answer.input.resume == keyed


def test_a_rewind_into_an_earlier_turn_replays_each_later_turn_once_complete() -> None:
    call = _call()
    plan = _plan(PlanKind.REWIND, checkpoint_id="1f0-a", replayed=("1f0-t2", "1f0-t3"))
    first, *replays = work_for(call, plan, _head(call), None, {}).invocations
    assert first.config == at_checkpoint(CONFIG, "1f0-a")
    assert [step.input for step in replays] == [
        ReplayInput(at_checkpoint(CONFIG, cp), "1f0-head") for cp in ("1f0-t2", "1f0-t3")
    ]
    assert all(step.when is Due.COMPLETE for step in replays)


def test_a_caller_durability_is_kept() -> None:
    work = work_for(_call(), ResumePlan(PlanKind.FRESH, "t"), None, INPUT, {"durability": "exit"})
    assert work.kwargs == {"durability": "exit"}


def test_a_replay_stopped_by_a_question_answers_it_then_replays_the_turns_owed() -> None:
    call = _call()
    plan = _plan(PlanKind.CONTINUE, next_nodes=frozenset({"b"}), replayed=("1f0-t3",))
    answer: Command[Any] = Command(resume="yes")
    first, replay = work_for(call, plan, _head(call, interrupted=True), answer, {}).invocations
    assert first.input == answer and first.config == CONFIG
    assert isinstance(replay.input, ReplayInput) and replay.when is Due.COMPLETE
    (again,) = work_for(call, plan, _head(call, interrupted=True), None, {}).invocations[:1]
    assert again.input is None  # no answer given: the question is asked again


def test_a_new_thread_is_invoked_with_a_copy_of_the_callers_input() -> None:
    """LangGraph's reducers change what they are given in place (``add_messages`` sets
    ids): the caller's input must keep its digest."""
    given = {"log": ["first"]}
    (step,) = work_for(_call(), _plan(PlanKind.FRESH), None, given, {}).invocations
    assert step.input == given and step.input is not given
    assert step.input["log"] is not given["log"]
