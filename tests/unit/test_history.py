"""A thread's lineage from raw checkpoint tuples (an in-memory saver, no database)."""

from __future__ import annotations

import random
from collections import Counter
from itertools import pairwise

import pytest
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver

import neograph_ext as ne
from neograph_ext.decision._claim import Claim
from neograph_ext.decision._history import Record, lineage, resolved
from neograph_ext.decision._stamp import StampRef
from tests.graphs.pipelines import linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


@pytest.fixture
def forked() -> tuple[list[CheckpointTuple], str]:
    """A thread a -> b -> c -> d, rewound once before c: two branches; its listing and
    its head."""
    saver, config = InMemorySaver(), {"configurable": {"thread_id": "t"}}
    ne.run(ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver), {"log": []}, config)
    ne.run(ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver), None, config)
    head = saver.get_tuple(config)
    assert head is not None
    return list(saver.list(config)), head.checkpoint["id"]


def test_lineage_follows_parents_and_skips_the_old_branch(
    forked: tuple[list[CheckpointTuple], str],
) -> None:
    tuples, head = forked
    records = lineage(tuples, head)
    assert records[-1].checkpoint_id == head
    assert len(records) < len(tuples)
    assert [r.source for r in records][:2] == ["input", "loop"]
    for parent, child in pairwise(records):
        assert child.parent_id == parent.checkpoint_id
    assert [sorted(r.ran) for r in records if r.ran] == [["a"], ["b"], ["c"], ["d"]]


def test_lineage_does_not_depend_on_the_listing_order(
    forked: tuple[list[CheckpointTuple], str],
) -> None:
    tuples, head = forked
    expected = lineage(tuples, head)
    for seed in range(5):
        shuffled = tuples[:]
        random.Random(seed).shuffle(shuffled)
        assert lineage(shuffled, head) == expected


def test_unknown_head_is_a_key_error(forked: tuple[list[CheckpointTuple], str]) -> None:
    tuples, _ = forked
    with pytest.raises(KeyError):
        lineage(iter(tuples), "missing")


def test_resolving_a_reference_keeps_every_other_field() -> None:
    """``resolved`` rebuilds records field by field: a field it forgot would be lost."""
    stamp = ne.compile(linear(Counter(), {"c": V1}), checkpointer=None).neograph_ext_stamp
    values = {
        name: frozenset({f"{name}-value"}) if name != "stamp" else StampRef(stamp.id)
        for name in Record._fields
    }
    values["claims"] = (Claim(StampRef("f" * 64), None, frozenset({"t-c"}), frozenset({"c"})),)
    record = Record(**values)  # type: ignore[arg-type]
    (found,) = resolved([record], {stamp.id: stamp})
    assert found == record._replace(stamp=stamp)
