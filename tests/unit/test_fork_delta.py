"""``_fork`` and ``DeltaChannel`` state (LangGraph 1.2 and later): a fork holds a snapshot
of each DeltaChannel's value at its base, whose own ``channel_values`` hold none."""

from __future__ import annotations

from collections import Counter
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from neograph_ext.decision._langgraph import COUNTERS_KEY, delta_channels
from neograph_ext.flows._fork import Fork, address, forked_checkpoint, snapshotted
from tests.graphs.delta import Far, fan
from tests.unit.test_fork import METADATA, _at_step, _ran, _thread, forked, saver

__all__ = ["saver"]  # the fixture, shared with test_fork


def test_a_delta_channel_gets_a_snapshot_of_its_value_at_the_base(
    saver: BaseCheckpointSaver[Any],
) -> None:
    config = _thread()
    graph = fan(Far, Counter()).compile(checkpointer=saver)
    _ran(graph, config)
    base = _at_step(saver, config, 2)
    at_base = graph.get_state(base.config).values
    assert at_base == {"log": ["a1", "b1", "c1"]}
    assert "log" not in base.checkpoint["channel_values"]  # rebuilt from its ancestors
    metadata = {**METADATA, "step": 2, COUNTERS_KEY: {"log": 3, "other": 1}}
    fork = Fork(address(base), forked_checkpoint(base), metadata, {}, ())  # type: ignore[arg-type]

    written = forked(graph, saver, fork, graph.get_state(base.config).tasks)

    stored = saver.get_tuple(written)
    assert stored is not None
    assert graph.get_state(written).values == at_base
    assert "log" in stored.checkpoint["channel_values"]
    assert stored.checkpoint["channel_versions"]["log"] > max(
        base.checkpoint["channel_versions"].values()
    )
    # The counter of the snapshotted channel starts again; the others' stay.
    assert stored.metadata[COUNTERS_KEY] == {"other": 1}


def test_a_channel_the_fork_sets_itself_is_not_snapshotted() -> None:
    saver = InMemorySaver()
    config = _thread()
    graph = fan(Far, Counter()).compile(checkpointer=saver)
    _ran(graph, config)
    base = _at_step(saver, config, 2)
    carried = Fork(address(base), forked_checkpoint(base), METADATA, {"log": "9"}, ())  # type: ignore[arg-type]
    values = graph.get_state(base.config).values

    kept = snapshotted(carried, base, values, delta_channels(graph), saver.get_next_version)

    assert kept is carried
