"""What pruning removes, decided without a graph or a database (``_prune``)."""

from __future__ import annotations

import pytest

from neograph_ext.storage._prune import Pruning, Stored, doomed, doomed_namespaces, unreferenced
from neograph_ext.storage._prune_sql import Cut

DEFAULT = Pruning()


def chain(*ids: str, parent: str | None = None, forked_first: bool = False) -> list[Stored]:
    """Checkpoints written one after the other, from ``parent``."""
    made = []
    for i, checkpoint in enumerate(ids):
        made.append(Stored(checkpoint, parent, "loop", forked=forked_first and i == 0))
        parent = checkpoint
    return made


def test_a_branch_a_rewind_forked_away_from_goes_with_everything_after_it() -> None:
    # 1 -> 2 -> 3 -> 4 ran; a rewind forked 5 off 2: 3 and 4 are abandoned.
    stored = chain("1", "2", "3", "4") + chain("5", "6", parent="2", forked_first=True)
    assert doomed(stored, "6", DEFAULT) == {"3", "4"}


def test_the_head_lineage_and_a_users_own_fork_stay_by_default() -> None:
    # The user time-travelled from 2 (5 is no fork of neograph-ext's): nothing goes...
    stored = chain("1", "2", "3", "4") + chain("5", "6", parent="2")
    assert doomed(stored, "6", DEFAULT) == frozenset()
    # ...unless every branch off the lineage is asked for.
    assert doomed(stored, "6", Pruning(all_branches=True)) == {"3", "4"}


def test_a_fork_abandons_only_the_older_siblings() -> None:
    # 2's children: 3 (old run), 5 (a rewind), then 7 (the user's fork, the head's).
    stored = (
        chain("1", "2", "3")
        + chain("5", "6", parent="2", forked_first=True)
        + chain("7", parent="2")
    )
    # 3 is older than the fork 5; 5 and 6 were left by the user's fork, and stay.
    assert doomed(stored, "7", DEFAULT) == {"3"}


def test_a_branch_holding_the_head_is_never_pruned() -> None:
    # The head went back onto the old branch (4) after a rewind wrote 5.
    stored = (
        chain("1", "2", "3", "4")
        + chain("5", parent="2", forked_first=True)
        + [Stored("9", "4", "loop", forked=False)]
    )
    assert doomed(stored, "9", DEFAULT) == frozenset()


def test_the_old_head_a_replay_reads_stays_with_its_lineage() -> None:
    stored = [
        *chain("1", "2", "3", "4"),
        Stored("5", "2", "fork", forked=True),
        Stored("6", "5", "loop", forked=True, refers="4"),
    ]
    assert doomed(stored, "6", DEFAULT) == frozenset()


def test_a_delta_channel_keeps_the_ancestors_its_value_is_rebuilt_from() -> None:
    # Cutting the lineage to its last checkpoint must keep 1..3: 4 rebuilds ``log``
    # from their writes, and 1 stores the snapshot the walk stops at.
    stored = [
        Stored("1", None, "loop", False, stores=frozenset({"log"})),
        Stored("2", "1", "loop", False, rebuilt=frozenset({"log"})),
        Stored("3", "2", "loop", False, rebuilt=frozenset({"log"})),
        Stored("4", "3", "loop", False, rebuilt=frozenset({"log"})),
    ]
    options = Pruning(keep_last=1)
    assert doomed(stored, "4", options) == frozenset()
    # With a snapshot at 3, the walk from 4 stops there: 1 and 2 may go.
    snap = [*stored[:2], Stored("3", "2", "loop", False, stores=frozenset({"log"})), stored[3]]
    assert doomed(snap, "4", options) == {"1", "2"}


def test_a_kept_branch_keeps_the_delta_ancestors_under_an_abandoned_fork() -> None:
    # all_branches would drop 3, but the kept fork child... is itself dropped; a
    # checkpoint kept on the lineage never needs an abandoned sibling.
    stored = [
        Stored("1", None, "input", False, stores=frozenset({"log"})),
        Stored("2", "1", "loop", False, rebuilt=frozenset({"log"})),
        Stored("3", "2", "loop", False, rebuilt=frozenset({"log"})),
        Stored("4", "2", "fork", True, stores=frozenset({"log"})),
    ]
    assert doomed(stored, "4", DEFAULT) == {"3"}


def test_keep_last_stops_at_the_heads_turn_and_at_each_channels_last_writer() -> None:
    turns = [
        Stored("1", None, "input", False),
        Stored("2", "1", "loop", False, wrote=frozenset({"msgs", "topic"})),
        Stored("3", "2", "input", False),
        Stored("4", "3", "loop", False, wrote=frozenset({"msgs"})),
        Stored("5", "4", "input", False),
        Stored("6", "5", "loop", False, wrote=frozenset({"msgs"})),
        Stored("7", "6", "loop", False, wrote=frozenset({"msgs"})),
    ]
    # ``topic`` was last written at 2, whose parent 1 is a rewind's target: all stay.
    assert doomed(turns, "7", Pruning(keep_last=1)) == frozenset()
    without_topic = [
        t if t.checkpoint_id != "2" else Stored("2", "1", "loop", False, frozenset({"msgs"}))
        for t in turns
    ]
    # The head's turn starts at 5; ``msgs`` was last written at 7: 1..4 go.
    assert doomed(without_topic, "7", Pruning(keep_last=1)) == {"1", "2", "3", "4"}
    assert doomed(without_topic, "7", Pruning(keep_last=5)) == {"1", "2"}
    # Accumulating, ``msgs`` still holds the item step 2 appended: nothing before its
    # writer goes, or a later deploy could not see who wrote it.
    assert doomed(without_topic, "7", Pruning(keep_last=1), frozenset({"msgs"})) == set()
    assert doomed(without_topic, "7", Pruning(keep_last=1), frozenset({"topic"})) == {
        "1",
        "2",
        "3",
        "4",
    }


@pytest.mark.parametrize("bad", [0, -3])
def test_keep_last_below_one_is_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="keep_last must be 1 or more"):
        Pruning(keep_last=bad)


def test_keep_last_must_be_an_int() -> None:
    with pytest.raises(TypeError, match="keep_last must be an int"):
        Pruning(keep_last=True)


def test_a_description_goes_only_when_nothing_names_its_stamp() -> None:
    a, b = "a" * 64, "b" * 64
    stored = {f"neograph-ext-stamp:{a}": 10, f"neograph-ext-stamp:{b}": 20}
    (gone,) = unreferenced(stored, {f"2:{a}"})
    assert (gone.stamp_id, gone.bytes) == (b, 20)
    assert unreferenced(stored, {f"2:{a}", f"2:{b}"}) == ()


def test_the_order_of_stamps_is_no_description_and_never_goes() -> None:
    a = "a" * 64
    stored = {f"neograph-ext-stamp:{a}": 10, "neograph-ext-stamp:order": 30}
    assert [gone.thread_id for gone in unreferenced(stored, ())] == [f"neograph-ext-stamp:{a}"]


def test_an_unknown_head_prunes_nothing() -> None:
    assert doomed(chain("1", "2"), "9", DEFAULT) == frozenset()


def test_a_subgraph_namespace_goes_with_the_checkpoints_its_results_went_into() -> None:
    # 2's task ran a subgraph (namespace "old"); its result went into 3, which a rewind's
    # fork 4 off 2 abandoned. The fork re-ran the task under a new id ("new").
    stored = [
        *chain("1", "2", "3"),
        Stored("4", "2", "fork", forked=True),
        Stored("5", "4", "loop", forked=True),
    ]
    going = doomed(stored, "5", DEFAULT)
    assert going == {"3"}
    roots = {"old": frozenset({"2"}), "new": frozenset({"4"}), "unnamed": None}
    assert doomed_namespaces(stored, going, roots) == {"old"}
    # Nothing of 2's went: its subgraph stays.
    assert doomed_namespaces(stored, frozenset(), roots) == frozenset()


def test_the_subgraph_a_head_waits_in_stays() -> None:
    # The head 2 has no child yet: its task's subgraph is still running.
    assert doomed_namespaces(chain("1", "2"), frozenset(), {"sub": frozenset({"2"})}) == frozenset()


def test_a_long_cut_is_chunked_under_sqlites_parameter_limit() -> None:
    ids = tuple(f"{i:04d}" for i in range(1_200))
    found = Cut("sqlite", "t", ids, namespaces=("sub:1", "sub:2"))
    measuring = found.measuring()
    # Three chunks of ids, two tables each, and the namespaces' two tables.
    assert [tag for tag, _ in measuring] == ["writes", "checkpoints"] * 3 + [
        "writes",
        "subgraphs",
    ]
    assert all(len(args) <= 501 for _, (_, args) in measuring)
    named = [arg for _, (_, args) in measuring[:6:2] for arg in args[1:]]
    assert tuple(named) == ids
    assert [sql.split()[0] for sql, _ in found.deleting()] == ["DELETE"] * 8


def test_postgresql_cuts_in_one_statement_per_table() -> None:
    found = Cut("postgres", "t", ("1", "2"), blobs=(("log", "3"),), namespaces=("sub:1",))
    tags = [tag for tag, _ in found.measuring()]
    assert tags == ["writes", "checkpoints", "blobs", "writes", "blobs", "subgraphs"]
    # Writes go before the checkpoints they are filed under.
    tables = [sql.split()[2] for sql, _ in found.deleting()]
    assert tables.index("checkpoint_writes") < tables.index("checkpoints")


def test_keep_last_keeps_the_checkpoint_that_saved_an_entrypoints_previous() -> None:
    # An entrypoint's turns: the input checkpoint of turn 2 and 3 holds the ``previous``
    # the turn before saved; planning compares the save type of the one that saved it.
    turns = [
        Stored("1", None, "input", False),
        Stored("2", "1", "loop", False),
        Stored("3", "2", "input", False, stores=frozenset({"__previous__"})),
        Stored("4", "3", "loop", False),
        Stored("5", "4", "input", False, stores=frozenset({"__previous__"})),
        Stored("6", "5", "loop", False),
    ]
    assert doomed(turns, "6", Pruning(keep_last=1)) == {"1", "2", "3"}
    plain = [Stored(s.checkpoint_id, s.parent_id, s.source, False) for s in turns]
    assert doomed(plain, "6", Pruning(keep_last=1)) == {"1", "2", "3", "4"}
