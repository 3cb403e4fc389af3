"""Claims on a waiting step, on hand-made pending writes and lineages: no graph, no
database. Which tasks are whose, who owns the step, and what a take-over re-runs."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from neograph_ext.decision._claim import CLAIM, Claim, claim_writes, claims_of, unclaimed
from neograph_ext.decision._decision import HeadFacts, PlanKind
from neograph_ext.decision._history import Record
from neograph_ext.decision._lineage_facts import pending_changes, verified_head
from neograph_ext.decision._ownership import outranks, owner
from neograph_ext.decision._plan import decide
from neograph_ext.decision._stamp import Stamp, StampRef
from neograph_ext.flows._migrate import fork
from tests.graphs.lineages import LOG, V1, V2, record, stamp

OLD, NEW = stamp(c=V1), stamp(c=V2)
NULL = "00000000-0000-0000-0000-000000000000"


def claimed(writes: list[tuple[str, str, Any]], by: Stamp, took: str | None = None) -> None:
    """Add ``by``'s claim to ``writes``, as the driver stores it."""
    writes += [(CLAIM, channel, value) for channel, value in claim_writes(by.id, took, writes)]


def test_a_claim_owns_the_tasks_that_finish_after_it() -> None:
    writes: list[tuple[str, str, Any]] = [
        ("t-a", "__interrupt__", "a?"),
        ("t-b", "b", 1),  # finished under the checkpoint's own code
        (NULL, "log", "input"),
    ]
    claimed(writes, NEW)
    writes += [("t-a", "__resume__", "yes"), ("t-a", "c", 2)]
    claims = claims_of(writes)
    assert len(claims) == 1
    assert claims[0].stamp == StampRef(NEW.id)
    assert (claims[0].tasks, claims[0].wrote) == ({"t-a"}, {"c"})
    assert {channel for _, channel, _ in unclaimed(writes)} == {"b", "log"}


def test_each_claim_owns_what_finished_until_the_next() -> None:
    writes: list[tuple[str, str, Any]] = [("t-a", "__interrupt__", "a?")]
    claimed(writes, NEW)
    writes += [("t-a", "c", 2)]
    claimed(writes, OLD, took=NEW.id)
    writes += [("t-d", "d", 3)]
    first, second = claims_of(writes)
    assert (first.stamp.id, first.wrote, first.took_from) == (NEW.id, {"c"}, None)
    assert (second.stamp.id, second.wrote, second.took_from) == (OLD.id, {"d"}, NEW.id[:16])
    assert unclaimed(writes) == []


def test_writes_without_a_claim_are_all_the_checkpoints_own() -> None:
    writes = [("t-b", "b", 1), ("t-a", "__interrupt__", "a?")]
    assert claims_of(writes) == ()
    assert unclaimed(writes) == [("t-b", "b", 1)]


def test_a_claim_that_does_not_read_back_is_no_claim() -> None:
    """Storage is data: a claim's value the saver gave back mangled names no owner."""
    writes = [(CLAIM, CLAIM, {"stamp": 7}), (CLAIM, CLAIM, None), ("t-b", "b", 1)]
    assert claims_of(writes) == ()
    assert unclaimed(writes) == [("t-b", "b", 1)]


def test_a_claim_of_the_right_shape_but_hostile_fields_is_no_claim() -> None:
    """Lists in ``before`` would be unhashable; a NUL byte in a stamp id would reach SQL."""
    hostile = [
        {"stamp": "a" * 64, "n": 0, "before": [["t"], {"t": 1}], "took_from": None},
        {"stamp": "a" * 63 + "\x00", "n": 0, "before": [], "took_from": None},
        {"stamp": "a" * 64, "n": 2**70, "before": [], "took_from": None},
        {"stamp": "a" * 64, "n": 0, "before": [], "took_from": "x\x00"},
    ]
    writes = [*((CLAIM, CLAIM, value) for value in hostile), ("t-b", "b", 1)]
    assert claims_of(writes) == ()
    assert unclaimed(writes) == [("t-b", "b", 1)]


def waiting(claims: list[tuple[Stamp, str | None, frozenset[str]]]) -> list[Record]:
    """``a``, ``b`` written by the old code; the head waits on ``c`` (its question), and
    each claim's tasks wrote those channels."""
    head = record(2, "b", LOG, stamp=OLD, verified=OLD.id)
    made = tuple(Claim(by, took, frozenset({"t-c"}), wrote) for by, took, wrote in claims)
    return [
        record(-1, stamp=OLD, source="input"),
        record(0, stamp=OLD),
        record(1, "a", LOG, stamp=OLD),
        head._replace(next_nodes=frozenset({"c"}), claims=made),
    ]


def test_the_claimant_owns_the_thread() -> None:
    records = waiting([(NEW, None, frozenset({"c"}))])
    assert owner(records) == NEW.id
    assert not verified_head(records[-1], OLD)  # the old code's own head, claimed away
    facts = HeadFacts(records[-1].checkpoint_id, frozenset({"c"}), stamp_order=(OLD.id, NEW.id))
    assert decide(records, OLD, "t", head=facts).kind is PlanKind.SUPERSEDED


def test_a_take_over_claim_outranks_the_code_it_took_from() -> None:
    records = waiting([(NEW, None, frozenset({"c"})), (OLD, NEW.id[:16], frozenset())])
    assert owner(records) == OLD.id
    assert outranks(OLD.id, NEW.id, records, (OLD.id, NEW.id))


def test_what_a_claimants_tasks_wrote_is_compared_with_the_claimants_code() -> None:
    records = waiting([(NEW, None, frozenset({"c"}))])
    assert pending_changes(records[-1], NEW) == ()  # the claimant's own: nothing changed
    assert {change.node for change in pending_changes(records[-1], OLD)} == {"c"}


def test_a_fork_carrying_a_claimed_step_leaves_the_claim_behind() -> None:
    """A migration's fork is its writer's alone: a claim copied onto it would name the
    base's claimant as the fork's owner."""
    checkpoint = empty_checkpoint()
    configurable = {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": checkpoint["id"]}
    writes: list[tuple[str, str, Any]] = [("t-a", "__interrupt__", "a?")]
    claimed(writes, OLD)
    base = CheckpointTuple({"configurable": configurable}, checkpoint, {}, None, writes)
    made = fork(InMemorySaver(), base, {}, NEW, "migrate", keep_writes=True)
    assert made.writes == (("t-a", (("__interrupt__", "a?"),)),)
