"""The entrypoint decision (``_calls.decide_calls``), on hand-made turns: no graph run,
no saver. Stamps come from real entrypoints compiled with other options."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from neograph_ext.decision._calls import decide_calls, kept_prefix
from neograph_ext.decision._decision import Carry, HeadFacts, PlanKind
from neograph_ext.decision._entrypoint import entrypoint_stamp
from neograph_ext.decision._history import Record
from neograph_ext.decision._stamp import StampRef, Unreadable
from neograph_ext.decision._turn import EntrypointTurn, TurnCall, turn_base, turn_of
from tests.graphs.functional import chain, saving

WORKFLOW = chain(Counter(), set(), is_async=False)
OLD = entrypoint_stamp(WORKFLOW)[0]
CALLS = (TurnCall(0, "t1"), TurnCall(1, "t2"), TurnCall(2, "t3"))
RUNNING = HeadFacts("head", frozenset({"workflow"}))
PAUSED = HeadFacts("head", frozenset({"workflow"}), paused=True)
DONE = HeadFacts("head", frozenset())


def _turn(calls: tuple[TurnCall, ...] = CALLS, **fields: object) -> EntrypointTurn:
    return replace(EntrypointTurn("workflow", "base", -1, OLD, calls), **fields)  # type: ignore[arg-type]


def test_nothing_changed_continues_a_running_turn_and_keeps_every_call() -> None:
    plan = decide_calls(_turn(), OLD, "t", RUNNING)
    assert (plan.kind, plan.kept, plan.rerun) == (PlanKind.CONTINUE, {"t1", "t2", "t3"}, set())
    assert decide_calls(_turn(ended=OLD, complete=True), OLD, "t", DONE).kind is PlanKind.UP_TO_DATE


def test_a_changed_task_is_cut_with_every_later_call_the_earlier_kept() -> None:
    new = entrypoint_stamp(WORKFLOW, output_types={"t2": float})[0]
    plan = decide_calls(_turn(), new, "t", RUNNING)
    assert plan.kind is PlanKind.REWIND
    assert (plan.checkpoint_id, plan.step) == ("base", -1)
    assert plan.invalidated_nodes == {"t2"}
    assert plan.kept == plan.kept_tasks == {"t1"}
    assert plan.rerun == {"t2", "t3", "workflow"}
    assert [(s.node, s.step, s.kept) for s in plan.steps] == [
        ("t1", 0, True),
        ("t2", 1, False),
        ("t3", 2, False),
    ]
    assert "t2" in str(plan) and "int -> float" in str(plan)


def test_a_task_called_again_after_the_cut_is_rerun_there_and_kept_before() -> None:
    calls = (TurnCall(0, "t1"), TurnCall(1, "t2"), TurnCall(2, "t1"))
    new = entrypoint_stamp(WORKFLOW, versions={"t2": "v2"})[0]
    plan = decide_calls(_turn(calls), new, "t", RUNNING)
    assert plan.kept_tasks == {"t1"} and "t1" in plan.rerun and "t1" not in plan.kept
    assert kept_prefix(calls, plan.kept_tasks) == (TurnCall(0, "t1"),)


def test_an_unknown_call_is_dropped_once_something_before_it_changed() -> None:
    calls = (TurnCall(0, "t1"), TurnCall(1, "t2"), TurnCall(40, None))
    assert decide_calls(_turn(calls), OLD, "t", RUNNING).kind is PlanKind.CONTINUE
    plan = decide_calls(
        _turn(calls), entrypoint_stamp(WORKFLOW, versions={"t2": "v"})[0], "t", RUNNING
    )
    assert any("not seen" in note for note in plan.notes)
    assert kept_prefix(calls, frozenset({"t1", "t2"})) == calls[:2]


def test_a_finished_turn_whose_entrypoint_changed_keeps_every_cached_call() -> None:
    new = entrypoint_stamp(WORKFLOW, output_types={"workflow": str})[0]
    plan = decide_calls(_turn(ended=OLD, complete=True), new, "t", DONE)
    assert plan.kind is PlanKind.REWIND and plan.invalidated_nodes == {"workflow"}
    assert plan.kept_tasks == {"t1", "t2", "t3"} and plan.rerun == {"workflow"}


def test_a_missing_description_changes_every_call_and_no_stamp_is_unverified() -> None:
    plan = decide_calls(_turn(base_stamp=StampRef("0" * 64)), OLD, "t", RUNNING)
    assert plan.kind is PlanKind.REWIND and plan.kept_tasks == frozenset()
    assert decide_calls(_turn(base_stamp=None), OLD, "t", RUNNING).kind is PlanKind.UNVERIFIED
    bad = Unreadable("format", "garbage")
    assert decide_calls(_turn(base_stamp=bad), OLD, "t", RUNNING).kind is PlanKind.UNVERIFIED


def test_a_question_asked_after_a_changed_task_is_asked_again() -> None:
    new = entrypoint_stamp(WORKFLOW, versions={"t1": "v"})[0]
    plan = decide_calls(_turn(), new, "t", PAUSED)
    assert plan.kind is PlanKind.REWIND and any("asked again" in n for n in plan.notes)


def test_a_previous_saved_under_another_save_type_blocks_unless_turns_replay() -> None:
    old = entrypoint_stamp(saving(Counter(), is_async=False))[0]
    new = entrypoint_stamp(saving(Counter(), is_async=False, save=int))[0]
    turn = EntrypointTurn(
        "workflow",
        "base2",
        1,
        new,
        (TurnCall(0, "add"),),
        previous=old,
        earlier=True,
        first_turn="base1",
        later_inputs=("base2",),
    )
    blocked = decide_calls(turn, new, "t", RUNNING)
    assert blocked.blocker is not None and "replay_turns" in blocked.blocker
    replayed = decide_calls(turn, new, "t", RUNNING, replay_turns=True)
    assert replayed.blocker is None
    assert (replayed.checkpoint_id, replayed.replayed) == ("base1", ("base2",))
    same = decide_calls(replace(turn, previous=new), new, "t", RUNNING)
    assert same.kind is PlanKind.CONTINUE


def _record(checkpoint_id: str, source: str, step: int) -> Record:
    return Record(
        checkpoint_id, None, step, source, None, None, frozenset(), frozenset(), 1, 0, frozenset()
    )


def test_the_base_of_a_turn_is_before_its_entrypoints_step_whatever_forks_follow() -> None:
    running = (_record("b", "input", -1),)
    assert turn_base(running, complete=False) == "b"
    rewound = (_record("b", "input", -1), _record("f", "fork", 0), _record("l", "loop", 1))
    assert turn_base(rewound, complete=True) == "f"
    accepted = (_record("b", "input", -1), _record("l", "loop", 0), _record("a", "fork", 0))
    assert turn_base(accepted, complete=True) == "b"


def test_a_turn_verified_against_the_current_stamp_after_its_base_is_settled() -> None:
    new = entrypoint_stamp(WORKFLOW, versions={"t1": "v"})[0]
    turn = _turn(ended=OLD, complete=True, verified=frozenset({new.id}))
    assert decide_calls(turn, new, "t", DONE).kind is PlanKind.UP_TO_DATE
    older = _turn(ended=OLD, complete=True, verified=frozenset({OLD.id}))
    assert decide_calls(older, new, "t", DONE).kind is PlanKind.REWIND


def test_a_carried_previous_makes_a_migrate_plan_when_the_save_type_alone_changed() -> None:
    old = entrypoint_stamp(saving(Counter(), is_async=False))[0]
    new = entrypoint_stamp(saving(Counter(), is_async=False, save=int))[0]
    turn = EntrypointTurn("workflow", "b", 1, new, (TurnCall(0, "add"),), ended=old, complete=True)
    turn = replace(turn, previous=old, earlier=True)
    carried = decide_calls(turn, new, "t", DONE, carry=lambda found: Carry(migrated=found))
    assert (carried.kind, carried.migrated) == (PlanKind.MIGRATE, {"__previous__"})
    refused = decide_calls(turn, new, "t", DONE, carry=lambda found: Carry())
    assert refused.blocker is not None


MISREAD = "cached result of task `t2` does not read back as `Draft`: got `dict`"


def test_a_cached_result_that_does_not_read_back_cuts_where_it_would_be_served() -> None:
    calls = (TurnCall(0, "t1"), TurnCall(1, "t2", MISREAD), TurnCall(2, "t3"))
    plan = decide_calls(_turn(calls), OLD, "t", RUNNING)
    assert plan.kind is PlanKind.REWIND and plan.invalidated_nodes == {"t2"}
    assert plan.kept_tasks == {"t1"} and plan.rerun == {"t2", "t3", "workflow"}
    assert MISREAD in str(plan)
    # A finished turn serves its results to no one, unless a rewind keeps them.
    assert decide_calls(_turn(calls, ended=OLD, complete=True), OLD, "t", DONE).kind is (
        PlanKind.UP_TO_DATE
    )
    new = entrypoint_stamp(WORKFLOW, versions={"workflow": "v2"})[0]
    rewound = decide_calls(_turn(calls, ended=OLD, complete=True), new, "t", DONE)
    assert rewound.invalidated_nodes == {"t2", "workflow"} and rewound.kept_tasks == {"t1"}


def test_a_misread_result_drops_every_call_of_its_task() -> None:
    # Calls are kept by task: an earlier call of the same task is not kept either.
    calls = (TurnCall(0, "t1"), TurnCall(1, "t2"), TurnCall(2, "t2", MISREAD))
    plan = decide_calls(_turn(calls), OLD, "t", RUNNING)
    assert plan.kept_tasks == {"t1"}
    assert kept_prefix(calls, plan.kept_tasks) == (TurnCall(0, "t1"),)


def test_a_rewind_names_the_task_whose_call_failed_among_those_that_run() -> None:
    calls = (TurnCall(0, "t1"), TurnCall(1, "t2"))
    new = entrypoint_stamp(WORKFLOW, versions={"t2": "v2"})[0]
    plan = decide_calls(_turn(calls, failed=frozenset({"t3"})), new, "t", RUNNING)
    assert plan.rerun == {"t2", "t3", "workflow"} and plan.kept == {"t1"}
    # Nothing changed: the resume continues, as LangGraph runs the failed call again.
    unchanged = decide_calls(_turn(calls, failed=frozenset({"t3"})), OLD, "t", RUNNING)
    assert (unchanged.kind, unchanged.rerun) == (PlanKind.CONTINUE, set())


def test_older_code_leaves_a_thread_newer_code_wrote_alone_unless_it_takes_over() -> None:
    new = entrypoint_stamp(WORKFLOW, versions={"t2": "v2"})[0]
    records = [_record("b", "input", -1)._replace(stamp=new)]
    order = (OLD.id, new.id)  # the database stored the old release's stamp first
    head = replace(RUNNING, stamp_order=order)
    turn = _turn(base_stamp=new)
    assert decide_calls(turn, OLD, "t", head).kind is PlanKind.REWIND  # without the lineage
    plan = decide_calls(turn, OLD, "t", head, records=records)
    assert (plan.kind, plan.owner, plan.rerun) == (PlanKind.SUPERSEDED, new.id, set())
    taken = decide_calls(turn, OLD, "t", head, records=records, take_over=True)
    assert (taken.kind, taken.taken_from) == (PlanKind.REWIND, new.id)
    assert taken.rerun == {"t2", "t3", "workflow"}
    # The newer code resumes its own thread as before.
    assert decide_calls(turn, new, "t", head, records=records).kind is PlanKind.CONTINUE


def test_a_replay_starts_only_from_the_threads_own_first_turn() -> None:
    whole = (
        _record("i1", "input", -1),
        _record("l1", "loop", 0),
        _record("i2", "input", 1)._replace(parent_id="l1"),
    )
    turn = turn_of(whole, "workflow", ("i2", 1), (), complete=False)
    assert (turn.first_turn, turn.later_inputs, turn.earlier) == ("i1", ("i2",), True)
    # Pruned: the oldest checkpoint stored is not the thread's start, whose turn began
    # from no ``previous``; a replay from the oldest stored turn would start stale.
    pruned = (whole[1]._replace(parent_id="i1"), whole[2])
    assert turn_of(pruned, "workflow", ("i2", 1), (), complete=False).first_turn is None
    old = entrypoint_stamp(saving(Counter(), is_async=False))[0]
    new = entrypoint_stamp(saving(Counter(), is_async=False, save=int))[0]
    stale = EntrypointTurn(
        "workflow", "i2", 1, new, (TurnCall(0, "add"),), previous=old, earlier=True
    )
    plan = decide_calls(stale, new, "t", RUNNING, replay_turns=True)
    assert plan.blocker is not None and "pruned" in plan.blocker and not plan.replayed


def test_a_replay_cut_short_finishes_the_turn_then_replays_the_turns_owed() -> None:
    owing = replace(RUNNING, owed=("i2", "i3"), verified=True)
    plan = decide_calls(_turn(), OLD, "t", owing)
    assert (plan.kind, plan.replayed) == (PlanKind.CONTINUE, ("i2", "i3"))
    finished = replace(DONE, owed=("i3",), verified=True)
    done = decide_calls(_turn(ended=OLD, complete=True), OLD, "t", finished)
    assert (done.kind, done.replayed) == (PlanKind.CONTINUE, ("i3",))
    # Waiting on a question a replayed turn asked, the replay goes on once it is answered.
    waiting = replace(PAUSED, owed=("i2",), verified=True)
    assert decide_calls(_turn(), OLD, "t", waiting).replayed == ("i2",)


def test_a_carrying_fork_of_a_running_turn_counts_as_verified() -> None:
    fork = _record("f", "fork", 1)._replace(parent_id="i2", verified="v")
    records = (
        _record("i1", "input", -1),
        _record("l1", "loop", 0),
        _record("i2", "input", 1)._replace(verified="old"),
        fork,
    )
    # The fork carried the turn's `previous` on: the turn is settled against its stamp.
    assert turn_of(records, "workflow", ("f", 1), (), complete=False).verified == {"v"}
    ran = fork._replace(ran=frozenset({"workflow"}))  # a fork a node wrote proves nothing
    assert not turn_of((*records[:3], ran), "workflow", ("f", 1), (), complete=False).verified


def test_a_call_the_code_makes_otherwise_is_cut_with_every_later_call() -> None:
    calls = (TurnCall(0, "t1"), TurnCall(1, "t1", matched=False), TurnCall(2, "t2"))
    plan = decide_calls(_turn(calls), OLD, "t", RUNNING)
    assert (plan.kind, plan.invalidated_nodes) == (PlanKind.REWIND, {"t1"})
    # ``t1``'s first call is kept: the rewind's fork keeps calls by position.
    assert (
        plan.kept_tasks == {"t1"} and plan.kept == set() and plan.rerun == {"t1", "t2", "workflow"}
    )
    assert [(s.step, s.kept) for s in plan.steps] == [(0, True), (1, False), (2, False)]
    assert "call 1: the code now makes it to another task or with other arguments" in str(plan)


def test_a_call_found_unmatched_as_it_was_made_is_cut_there() -> None:
    plan = decide_calls(_turn(), OLD, "t", RUNNING, unmatched_at=1)
    assert (plan.kind, plan.kept, plan.rerun) == (PlanKind.REWIND, {"t1"}, {"t2", "t3", "workflow"})


def test_calls_the_code_does_not_tell_are_matched_when_made_not_kept() -> None:
    calls = (TurnCall(0, "t1"), TurnCall(1, "t2", matched=None), TurnCall(2, "t3"))
    plan = decide_calls(_turn(calls), OLD, "t", RUNNING)
    assert (plan.kind, plan.kept) == (PlanKind.CONTINUE, {"t1"})
    assert plan.matched_when_made == ("t2 (call 1)", "t3 (call 2)")
    assert "calls are matched when they are made: t2 (call 1), t3 (call 2)" in str(plan)
    # A finished turn serves no cached result: nothing to match.
    done = decide_calls(_turn(calls, ended=OLD, complete=True), OLD, "t", DONE)
    assert (done.kind, done.matched_when_made) == (PlanKind.UP_TO_DATE, ())


def test_every_call_the_code_makes_otherwise_is_named() -> None:
    calls = (
        TurnCall(0, "t1"),
        TurnCall(1, "t2", matched=False),
        TurnCall(2, "t3", matched=False),
        TurnCall(3, "t2", matched=False),
    )
    plan = decide_calls(_turn(calls), OLD, "t", RUNNING)
    assert {c.node: c.diff for c in plan.changes} == {
        "t2": (
            "call 1: the code now makes it to another task or with other arguments, or makes "
            "no call there",
            "call 3: the code now makes it to another task or with other arguments, or makes "
            "no call there",
        ),
        "t3": (
            "call 2: the code now makes it to another task or with other arguments, or makes "
            "no call there",
        ),
    }
    assert plan.kept == {"t1"}
