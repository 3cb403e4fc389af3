"""The resume decision on hand-made lineages: no graph, no database."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph

from neograph_ext.decision._changes import ChangeReason
from neograph_ext.decision._decision import HeadStep
from neograph_ext.decision._history import Record
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._plan import (
    ASKED_AGAIN,
    HeadFacts,
    PlanKind,
    TaskStep,
    decide,
    needs_lineage,
    verified_head,
)
from neograph_ext.decision._stamp import Stamp, Unreadable
from tests.graphs.lineages import LOG, V1, V2, record, stamp
from tests.graphs.pipelines import State, linear


def thread(old: Stamp | Unreadable | None, ran: str = "abcd", **extra: Any) -> list[Record]:
    records = [record(-1, stamp=old, source="input", wrote=()), record(0, stamp=old, wrote=())]
    records += [record(i + 1, node, LOG, stamp=old) for i, node in enumerate(ran)]
    if extra:
        records[-1] = record(len(ran), ran[-1], LOG, stamp=old, **extra)
    return records


def test_no_checkpoint_is_fresh() -> None:
    assert decide([], stamp(), "t").kind is PlanKind.FRESH


@pytest.mark.parametrize(
    ("next_nodes", "kind"), [((), PlanKind.UP_TO_DATE), (("d",), PlanKind.CONTINUE)]
)
def test_nothing_changed(next_nodes: tuple[str, ...], kind: PlanKind) -> None:
    s = stamp(c=V1)
    plan = decide(thread(s, next_nodes=next_nodes), s, "t")
    assert plan.kind is kind and not plan.changes and plan.blocker is None


def test_rewind_targets_the_parent_of_the_earliest_affected_task() -> None:
    records = thread(stamp(c=V1))
    plan = decide(records, stamp(c=V2), "t")
    assert plan.kind is PlanKind.REWIND
    assert plan.checkpoint_id == records[3].checkpoint_id  # after b, before c
    assert plan.step == 2
    assert plan.rerun == {"c", "d"} and plan.kept == {"a", "b"}
    (change,) = plan.changes
    assert change.reason is ChangeReason.OUTPUT_TYPE and change.old != change.new
    assert "score" in "\n".join(change.diff)


def test_a_none_written_to_a_cleared_channel_is_no_value_of_its_type() -> None:
    """create_agent's model call writes None to ``structured_response`` on every call
    without a response: of a changed response type, only the call that wrote one counts."""
    old = stamp()
    retyped = {**old.channels, "log": "0" * 64}
    new = old.model_copy(update={"id": "f" * 64, "channels": retyped})
    records = [record(-1, stamp=old, source="input"), record(0, stamp=old)]
    records += [record(1, "a", LOG, stamp=old, nulled=LOG), record(2, "b", LOG, stamp=old)]
    records += [record(3, "c", LOG, stamp=old, nulled=LOG)]
    assert decide(records, new, "t").step == 0  # the channel says nothing of None
    cleared = decide(records, new.model_copy(update={"clears": ("log",)}), "t")
    assert cleared.kind is PlanKind.REWIND and cleared.step == 1
    assert cleared.invalidated_nodes == {"b"}


def test_the_plan_names_each_step_of_a_node_that_ran_several_times() -> None:
    old = stamp()
    new = old.model_copy(
        update={"id": "f" * 64, "channels": {**old.channels, "log": "0" * 64}, "clears": LOG}
    )
    records = [record(-1, stamp=old, source="input"), record(0, stamp=old)]
    records += [record(i + 1, n, LOG, stamp=old, nulled=LOG) for i, n in enumerate("abab")]
    records += [record(5, "a", LOG, stamp=old)]
    plan = decide(records, new, "t")
    assert plan.step == 4
    assert plan.rerun == {"a"} and plan.kept == {"b"}  # node names: a's steps 1, 3 hidden
    assert [(t.node, t.step, t.kept) for t in plan.steps] == [
        ("a", 1, True),
        ("b", 2, True),
        ("a", 3, True),
        ("b", 4, True),
        ("a", 5, False),
    ]
    summary = "a (step 5 of 5) re-runs; a (steps 1, 3) kept; b (steps 2, 4) kept"
    assert plan.step_summary() == summary
    assert f"steps: {summary}" in str(plan)


def test_steps_of_a_crashed_superstep_and_of_a_plain_pipeline() -> None:
    records = thread(stamp(c=V1))
    plan = decide(records, stamp(c=V2), "t")
    assert [(t.node, t.kept) for t in plan.steps] == [
        ("a", True),
        ("b", True),
        ("c", False),
        ("d", False),
    ]
    assert plan.step_summary() == "" and "steps:" not in str(plan)
    crashed = thread(stamp(c=V1), ran="ab", next_nodes="c", pending=1)
    plan = decide(crashed, stamp(c=V2), "t")
    assert plan.steps[-1] == TaskStep("c", 3, False)


def test_unstamped_and_unreadable_checkpoints_never_count_as_changed() -> None:
    garbage = Unreadable("format", "stamp is not JSON")
    for old in (None, garbage):
        plan = decide(thread(old), stamp(c=V2), "t")
        assert plan.kind is PlanKind.UNVERIFIED and not plan.changes
        assert plan.notes


def test_change_after_unstamped_checkpoints_still_rewinds() -> None:
    records = [*thread(None, "ab"), record(3, "c", LOG, stamp=stamp(c=V1))]
    assert decide(records, stamp(c=V2), "t").invalidated_nodes == {"c"}


def test_change_in_an_earlier_turn_is_blocked_while_its_value_is_live() -> None:
    old = stamp(b=V1)
    turn_one = thread(old)
    turn_one[3] = record(2, "b", ("log", "value"), stamp=old)  # `value` is never rewritten
    turn_two = [record(5, stamp=old, source="input", wrote=()), record(6, "a", LOG, stamp=old)]
    plan = decide(turn_one + turn_two, stamp(b=V2), "t")
    assert plan.kind is PlanKind.REWIND and plan.blocker and "earlier turn" in plan.blocker


def test_collapsed_steps_from_exit_durability_are_blocked() -> None:
    old = stamp(c=V1)
    records = [
        record(-1, stamp=old, source="input", wrote=()),
        record(4, "abcd", LOG, stamp=old, span=5),
    ]
    plan = decide(records, stamp(c=V2), "t")
    assert plan.blocker and "durability='exit'" in plan.blocker


def test_finished_tasks_of_a_crashed_superstep_are_checked() -> None:
    old, new = stamp(c=V1), stamp(c=V2)
    records = thread(old, "ab", next_nodes=("c",), pending=1)
    plan = decide(records, new, "t")
    assert plan.kind is PlanKind.REWIND and plan.checkpoint_id == records[-1].checkpoint_id


def test_a_thread_of_another_graph_is_blocked_with_both_node_lists() -> None:
    plan = decide(thread(None, "xyz"), stamp(), "t")
    assert (
        plan.blocker
        and "['x', 'y', 'z']" in plan.blocker
        and "['a', 'b', 'c', 'd']" in plan.blocker
    )


def test_verified_head_needs_both_the_same_stamp_and_the_claim() -> None:
    s = stamp()
    assert verified_head(record(3, (), LOG, stamp=s, verified=s.id), s)
    assert not verified_head(record(3, (), LOG, stamp=s), s)
    assert not verified_head(record(3, (), LOG, stamp=stamp(c=V1), verified=s.id), s)


@pytest.mark.parametrize("next_nodes", [(), ("d",), ("__start__",)])
def test_a_verified_head_alone_plans_as_decide_does(next_nodes: tuple[str, ...]) -> None:
    s = stamp()
    head = record(3, "c", LOG, stamp=s, verified=s.id, next_nodes=next_nodes)
    facts = HeadFacts(head.checkpoint_id, head.next_nodes, verified=True)
    assert not needs_lineage(facts)
    plan = decide((), s, "t", head=facts)
    assert plan == decide([head], s, "t")
    assert plan.kind is (PlanKind.CONTINUE if next_nodes else PlanKind.UP_TO_DATE)


def test_removed_node_is_named_and_not_expected_to_rerun() -> None:
    from collections import Counter

    old = stamp()
    new = build_stamp(linear(Counter(), names="abd"))
    plan = decide(thread(old, "abc", next_nodes=()), new, "t")
    reasons: dict[str, set[ChangeReason]] = {}
    for change in plan.changes:
        reasons.setdefault(change.node, set()).add(change.reason)
    assert reasons == {"b": {ChangeReason.SUCCESSORS}, "c": {ChangeReason.REMOVED}}
    assert "c" not in plan.rerun


def test_plan_reads_as_text() -> None:
    text = str(decide(thread(stamp(c=V1)), stamp(c=V2), "t"))
    assert text.startswith("rewind: thread 't', fork from checkpoint")
    assert "node `c`: output type changed" in text and "re-runs: c, d" in text


def test_successors_cover_conditional_destinations() -> None:
    builder = StateGraph(State)
    builder.add_node("a", lambda s: {})
    builder.add_node("b", lambda s: {})
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", lambda s: "b", ["b"])
    declared = build_stamp(builder).nodes["a"].succ
    builder2 = StateGraph(State)
    builder2.add_node("a", lambda s: {})
    builder2.add_node("b", lambda s: {})
    builder2.add_edge(START, "a")
    builder2.add_conditional_edges("a", lambda s: "b")
    assert declared == ("b",)
    assert build_stamp(builder2).nodes["a"].succ == ("*",)


def test_an_input_checkpoint_waiting_on_start_is_continued_not_finished() -> None:
    current = stamp()
    for pending in (0, 1):
        head = record(-1, stamp=current, source="input", wrote=(), next_nodes={"__start__"})
        plan = decide([head._replace(pending_tasks=pending)], current, "t")
        assert plan.kind is PlanKind.CONTINUE, pending
        assert plan.changes == () and plan.rerun == frozenset()


def _pair(c: type) -> Stamp:
    """``b -> (c | d)``, channel ``c`` of type ``c``."""
    state = TypedDict("S", {"b": str, "c": c, "d": str}, total=False)  # type: ignore[misc]  # noqa: UP013
    builder = StateGraph(state)
    for name in "bcd":
        builder.add_node(name, lambda s: {})
    builder.add_edge(START, "b").add_edge("b", "c").add_edge("b", "d")
    return build_stamp(builder)


@pytest.mark.parametrize(
    ("pending_wrote", "kind", "invalidated"),
    [
        # The finished d wrote no retyped channel and c never finished: nothing stored
        # is stale; the thread continues and c runs under the new code.
        (frozenset("d"), PlanKind.CONTINUE, frozenset()),
        (frozenset("c"), PlanKind.REWIND, frozenset("cd")),
        (None, PlanKind.REWIND, frozenset("cd")),  # unknown: any channel may be theirs
    ],
    ids=["sibling-wrote-another-channel", "a-finished-task-wrote-it", "unknown"],
)
def test_a_crashed_step_blames_a_retyped_channel_on_the_tasks_that_wrote_it(
    pending_wrote: frozenset[str] | None, kind: PlanKind, invalidated: frozenset[str]
) -> None:
    old, new = _pair(str), _pair(bytes)
    records = [
        record(-1, stamp=old, source="input", wrote=()),
        record(0, "b", ("b",), stamp=old, next_nodes="cd", pending=1),
    ]
    records[-1] = records[-1]._replace(pending_wrote=pending_wrote)
    plan = decide(records, new, "t")
    assert (plan.kind, plan.invalidated_nodes) == (kind, invalidated), plan


def _step(c: type, versions: dict[str, str] | None = None) -> Stamp:
    """``b -> (c | d | e)``, channel ``c`` of type ``c``."""
    state = TypedDict("S", {"b": str, "c": c, "d": str, "e": str}, total=False)  # type: ignore[misc]  # noqa: UP013
    builder = StateGraph(state)
    for name in "bcde":
        builder.add_node(name, lambda s: {})
    builder.add_edge(START, "b").add_edge("b", "c").add_edge("b", "d").add_edge("b", "e")
    return build_stamp(builder, versions=versions)


_CRASHED = HeadStep(frozenset({("c", "c"), ("d", "d")}), frozenset("cd"), frozenset("e"))
"""The head's step: ``c`` and ``d`` finished (each wrote its channel), ``e`` did not."""


@pytest.mark.parametrize("new", [_step(bytes), _step(str, {"c": "v2"})], ids=["retyped", "version"])
def test_a_rewind_of_a_crashed_step_keeps_its_unchanged_finished_tasks_alone(new: Stamp) -> None:
    old = _step(str)
    records = [
        record(-1, stamp=old, source="input", wrote=()),
        record(0, "b", ("b",), stamp=old, next_nodes="cde", pending=2),
    ]
    records[-1] = records[-1]._replace(pending_wrote=frozenset("cd"))
    facts = HeadFacts(records[-1].checkpoint_id, frozenset("cde"), step=_CRASHED)
    plan = decide(records, new, "t", head=facts)
    assert plan.kind is PlanKind.REWIND and plan.checkpoint_id == records[-1].checkpoint_id
    assert plan.invalidated_nodes == {"c"}, plan
    assert (plan.kept_tasks, plan.rerun) == ({"d"}, {"c", "e"}), plan
    # Without the head's tasks told apart, every task waited on counts as a writer.
    unknown = decide(records, new, "t", head=replace(facts, step=None))
    assert "d" in unknown.rerun | unknown.kept_tasks and unknown.kept_tasks != {"d"}


@pytest.mark.parametrize(
    ("step", "asked"),
    [
        (_CRASHED, False),
        (replace(_CRASHED, answered=frozenset("e")), False),  # its answers are kept
        (replace(_CRASHED, unfinished=frozenset("ce")), True),  # the asking task changed
        (replace(_CRASHED, asked=frozenset("c")), True),  # a changed sibling asks first
        (None, True),
    ],
    ids=["beside-a-changed-sibling", "answered-before", "asker-changed", "sibling-asked", "none"],
)
def test_a_question_is_asked_again_unless_only_a_finished_sibling_changed(
    step: HeadStep | None, asked: bool
) -> None:
    old = _step(str)
    records = [
        record(-1, stamp=old, source="input", wrote=()),
        record(0, "b", ("b",), stamp=old, next_nodes="cde", pending=2),
    ]
    records[-1] = records[-1]._replace(pending_wrote=frozenset("cd"))
    facts = HeadFacts(records[-1].checkpoint_id, frozenset("cde"), paused=True, step=step)
    plan = decide(records, _step(bytes), "t", head=facts)
    assert plan.kind is PlanKind.REWIND
    assert (ASKED_AGAIN in plan.notes) is asked, plan


@pytest.mark.parametrize("paused", [False, True], ids=["cut-short", "stopped-at-a-question"])
def test_a_verified_head_owing_replayed_turns_replays_them(paused: bool) -> None:
    """A replay killed part-way, or stopped at a question of a replayed turn, still owes
    the later turns: the answer (or the retry) finishes the head's turn, then replays them."""
    s = stamp()
    head = record(3, "c", LOG, stamp=s, verified=s.id, next_nodes=("d",))
    facts = HeadFacts(
        head.checkpoint_id,
        head.next_nodes,
        paused=paused,
        verified=True,
        replaying="old-head",
        owed=("turn-3",),
    )
    assert needs_lineage(facts)
    plan = decide([head], s, "t", head=facts)
    assert plan.kind is PlanKind.CONTINUE and plan.replayed == ("turn-3",)


def _turns(old: Stamp, *later: Record) -> list[Record]:
    """Turn one, whose node ``b`` wrote ``value`` last, and the records of turn two."""
    turn_one = thread(old)
    turn_one[3] = record(2, "b", ("log", "value"), stamp=old)
    return [*turn_one, record(5, stamp=old, source="input", wrote=()), *later]


def test_a_value_each_turn_replaces_unread_does_not_block_the_turn_under_way() -> None:
    """``Stamp.replaced``: the turn under way writes ``value`` before any node reads it."""
    new = stamp(b=V2).model_copy(update={"replaced": ("value",)})
    started = _turns(stamp(b=V1), record(6, "a", LOG, stamp=stamp(b=V1), next_nodes="b"))
    plan = decide(started, new, "t")
    assert plan.kind is PlanKind.CONTINUE and plan.blocker is None
    assert any("replaced by the new turn" in note for note in plan.notes)
    assert decide(started, stamp(b=V2), "t").blocker  # not replaced: blocked as before


def test_an_edit_by_hand_in_the_turn_under_way_keeps_an_earlier_value_live() -> None:
    """``update_state`` may move the turn past the nodes that write ``value``."""
    new = stamp(b=V2).model_copy(update={"replaced": ("value",)})
    edited = _turns(stamp(b=V1), record(6, stamp=stamp(b=V1), source="update", wrote=LOG))
    plan = decide(edited, new, "t")
    assert plan.blocker and "earlier turn" in plan.blocker
