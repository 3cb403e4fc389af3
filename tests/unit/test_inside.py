"""Where a rewind inside a pending subgraph forks (``_inside.judged``), from records alone."""

from __future__ import annotations

from dataclasses import replace
from typing import TypedDict

from langgraph.graph import START, StateGraph

import neograph_ext
from neograph_ext.decision._history import Record
from neograph_ext.decision._inside import InnerLineage, dropped_edits, judged
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._stamp import Stamp, StampRef

INNER = ("prep", "draft", "review")


class State(TypedDict, total=False):
    doc: str
    prep: str
    draft: str
    review: str


def _root(version: str, depth: int = 1) -> Stamp:
    """``worker`` runs ``prep -> draft -> review`` (depth 1), or ``outline -> mid`` with
    ``mid`` running them (depth 2); ``draft`` has ``version``."""
    sub = StateGraph(State)
    for name in INNER:
        sub.add_node(name, lambda s: {})
    sub.add_edge(START, "prep")
    sub.add_edge("prep", "draft")
    sub.add_edge("draft", "review")
    inner = neograph_ext.compile(sub, versions={"draft": version})
    if depth == 2:
        mid = StateGraph(State)
        mid.add_node("outline", lambda s: {})
        mid.add_node("mid", inner)
        mid.add_edge(START, "outline")
        mid.add_edge("outline", "mid")
        inner = mid.compile()
    root = StateGraph(State)
    root.add_node("worker", inner)
    root.add_edge(START, "worker")
    return build_stamp(root)


def _records(
    stamp: Stamp | StampRef, ran: tuple[str, ...], *, forked: bool = False
) -> tuple[Record, ...]:
    """An inner lineage: the input checkpoint, one per node of ``ran``, then (``forked``)
    a fork of the last one."""
    found = [
        Record("c0", None, -1, "input", stamp, None, frozenset(), frozenset(), 1, 0, frozenset())
    ]
    for step, name in enumerate(("__start__", *ran)):
        ran_here = frozenset() if name.startswith("__") else frozenset({name})
        found.append(
            Record(
                f"c{step + 1}", found[-1].checkpoint_id, step, "loop", stamp, None,
                ran_here, ran_here, 1, 0, frozenset(),
            )
        )  # fmt: skip
    if forked:
        last = found[-1]
        found.append(last._replace(checkpoint_id="fork", parent_id=last.checkpoint_id,
                                   source="fork", ran=frozenset(), wrote=frozenset()))  # fmt: skip
    return tuple(found)


def test_an_upstream_change_forks_before_the_changed_node_keeping_those_before_it() -> None:
    old, new = _root("v1"), _root("v2")
    lineage = InnerLineage(
        ("worker",), "worker:t", _records(old, ("prep", "draft")), frozenset({"review"})
    )
    found = judged([lineage], new, frozenset({"worker"}), old)
    inside = found.forks["worker"]
    # c2 is the checkpoint prep's writes produced: the one whose pending task is draft.
    assert (inside.checkpoint_id, inside.changed) == ("c2", ("draft",))
    assert (inside.kept, inside.rerun) == (("prep",), ("draft", "review"))
    assert "worker > draft" in inside.describe()


def test_a_change_of_the_pending_node_rewinds_nothing_inside() -> None:
    old, new = _root("v1"), _root("v2")
    lineage = InnerLineage(("worker",), "worker:t", _records(old, ("prep",)), frozenset({"draft"}))
    found = judged([lineage], new, frozenset({"worker"}), old)
    assert found.settled == {"worker"} and not found.forks


def test_a_subgraph_compiled_by_neograph_ext_is_judged_by_the_parent_heads_stamp() -> None:
    # Its checkpoints carry its own stamp, whose description is not stored.
    old, new = _root("v1"), _root("v2")
    own = StampRef("0" * 64)
    lineage = InnerLineage(("worker",), "worker:t", _records(own, ("prep", "draft")), frozenset())
    assert judged([lineage], new, frozenset({"worker"}), old).forks["worker"].changed == ("draft",)
    found = judged([lineage], new, frozenset({"worker"}), None)
    assert "does not describe" in found.why_not["worker"]


def test_a_fork_nothing_ran_after_is_forked_again() -> None:
    # A kill after the fork, before the parent resumed: asked again, not answered.
    old, new = _root("v1"), _root("v2")
    records = _records(old, ("prep",))
    fork = records[-1]._replace(checkpoint_id="fork", parent_id="c2", source="fork", stamp=new)
    lineage = InnerLineage(("worker",), "worker:t", (*records, fork), frozenset({"draft"}))
    inside = judged([lineage], new, frozenset({"worker"}), old).forks["worker"]
    assert (inside.checkpoint_id, inside.kept, inside.rerun) == ("fork", ("prep",), ("draft",))


def test_what_the_current_code_ran_after_its_own_fork_is_not_judged_again() -> None:
    old, new = _root("v1"), _root("v2")
    records = _records(old, ("prep",))
    fork = records[-1]._replace(checkpoint_id="fork", parent_id="c2", source="fork", stamp=new)
    after = fork._replace(checkpoint_id="c9", parent_id="fork", source="loop",
                          stamp=StampRef("1" * 64), ran=frozenset({"draft"}))  # fmt: skip
    lineage = InnerLineage(("worker",), "worker:t", (*records, fork, after), frozenset({"review"}))
    assert judged([lineage], new, frozenset({"worker"}), old).settled == {"worker"}


def test_at_depth_two_the_innermost_namespace_is_forked() -> None:
    old, new = _root("v1", 2), _root("v2", 2)
    outer = InnerLineage(("worker",), "worker:t", _records(old, ("outline",)), frozenset({"mid"}))
    inner = InnerLineage(
        ("worker", "mid"), "worker:t|mid:u", _records(old, ("prep", "draft")), frozenset({"review"})
    )
    inside = judged([outer, inner], new, frozenset({"worker"}), old).forks["worker"]
    assert (inside.path, inside.namespace, inside.kept) == (
        ("worker", "mid"),
        "worker:t|mid:u",
        ("prep",),
    )
    assert "worker > mid > draft" in inside.describe()


def test_a_stamp_that_does_not_describe_nested_nodes_re_runs_the_parent() -> None:
    # An earlier release's stamp held no digests of the nodes two levels down.
    old, new = _root("v1", 2), _root("v2", 2)
    worker = old.nodes["worker"]
    inner = {
        k: v
        for k, v in (worker.inner or {}).items()
        if not k.startswith("mid/") or k.count("/") > 1 or "channel:" in k
    }
    earlier = old.model_copy(
        update={"nodes": {"worker": worker.model_copy(update={"inner": inner})}}
    )
    outer = InnerLineage(
        ("worker",), "worker:t", _records(earlier, ("outline",)), frozenset({"mid"})
    )
    deep = InnerLineage(
        ("worker", "mid"), "worker:t|mid:u", _records(earlier, ("prep",)), frozenset()
    )
    found = judged([outer, deep], new, frozenset({"worker"}), earlier)
    assert "does not describe" in found.why_not["worker"]


def test_a_subgraph_without_checkpoints_of_its_own_is_left_as_it_is() -> None:
    # It starts afresh when its task runs: the change re-runs it whole, as before.
    found = judged([], _root("v2"), frozenset({"worker"}), _root("v1"))
    assert (found.forks, found.settled, found.why_not) == ({}, frozenset(), {})


def _upstream_change(**fields: object) -> tuple[Stamp, Stamp, InnerLineage]:
    """A lineage that ran ``prep`` and ``draft`` under ``v1`` and waits on ``review``,
    with ``fields`` set; the stamps of ``v1`` and ``v2``."""
    old, new = _root("v1"), _root("v2")
    lineage = InnerLineage(
        ("worker",), "worker:t", _records(old, ("prep", "draft")), frozenset({"review"})
    )
    return old, new, replace(lineage, **fields)  # type: ignore[arg-type]


def test_a_node_with_several_tasks_re_runs_whole_even_when_nothing_finished_changed() -> None:
    # A Send each: one fork cannot cover them, and a finished send's result is stale.
    old, new = _root("v1"), _root("v2")
    sends = [
        InnerLineage(("worker",), f"worker:{t}", _records(old, ran), frozenset(), tasks=2)
        for t, ran in (("a", ("prep", "draft")), ("b", ("prep",)))
    ]
    found = judged(sends, new, frozenset({"worker"}), old)
    assert not found.forks and not found.settled
    assert "worker runs 2 tasks (a Send each)" in found.why_not["worker"]
    pending = [replace(sends[1], records=_records(old, ("prep",)))]
    assert "runs 2 tasks" in judged(pending, new, frozenset({"worker"}), old).why_not["worker"]


def test_an_answer_inside_refuses_a_fork_but_not_a_resume_where_it_is() -> None:
    old, new, lineage = _upstream_change(answered=True)
    assert "was answered" in judged([lineage], new, frozenset({"worker"}), old).why_not["worker"]
    waiting = replace(lineage, records=_records(old, ("prep",)), next_nodes=frozenset({"draft"}))
    assert judged([waiting], new, frozenset({"worker"}), old).settled == {"worker"}


def test_a_delta_channel_refuses_a_fork_of_its_own_namespace_only() -> None:
    old, new, lineage = _upstream_change(delta=frozenset({"items"}))
    found = judged([lineage], new, frozenset({"worker"}), old)
    assert "worker holds DeltaChannel `items`" in found.why_not["worker"]
    old2, new2 = _root("v1", 2), _root("v2", 2)
    outer = InnerLineage(
        ("worker",), "worker:t", _records(old2, ("outline",)), frozenset({"mid"}),
        delta=frozenset({"items"}),
    )  # fmt: skip
    inner = InnerLineage(
        ("worker", "mid"), "worker:t|mid:u", _records(old2, ("prep", "draft")), frozenset()
    )
    assert judged([outer, inner], new2, frozenset({"worker"}), old2).forks["worker"]


def test_an_edit_is_dropped_by_a_fork_before_it_and_by_a_whole_re_run() -> None:
    old, new, lineage = _upstream_change()
    records = lineage.records
    edit = records[-1]._replace(
        checkpoint_id="edit", parent_id=records[-1].checkpoint_id, source="update",
        ran=frozenset({"draft"}), wrote=frozenset({"draft"}),
    )  # fmt: skip
    edited = replace(lineage, records=(*records, edit))
    fork = judged([edited], new, frozenset({"worker"}), old).forks["worker"]
    assert [r.checkpoint_id for _, r in dropped_edits([edited], [fork])] == ["edit"]
    assert [r.checkpoint_id for _, r in dropped_edits([edited], None)] == ["edit"]
    # A fork after the edit keeps it: only the nodes after the fork point run again.
    later = replace(fork, checkpoint_id="edit")
    assert dropped_edits([edited], [later]) == ()


def test_sends_one_level_down_re_run_the_node_at_the_root_whole() -> None:
    old, new = _root("v1", 2), _root("v2", 2)
    outer = InnerLineage(("worker",), "worker:t", _records(old, ("outline",)), frozenset({"mid"}))
    records = _records(old, ("prep", "draft"))
    sends = [
        InnerLineage(("worker", "mid"), f"worker:t|mid:{t}", records, frozenset(), tasks=2)
        for t in "ab"
    ]
    found = judged([outer, *sends], new, frozenset({"worker"}), old)
    assert "worker > mid runs 2 tasks" in found.why_not["worker"] and not found.forks
