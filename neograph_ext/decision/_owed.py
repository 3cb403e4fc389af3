"""What a thread's head still owes, computed from raw checkpoints.

Rules:
- ``waiting``: the nodes a checkpoint waits to run (its next superstep), by LangGraph's
  own rule, from the raw checkpoint alone: no state is validated, nothing is run.
- ``owed_turns``: the turns a replay (``run(..., replay_turns=True)``) has not started
  yet, from the two lineages (``_history.lineage``) of the replayed head and the branch
  replaying it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.channels.base import BaseChannel
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.types import Send

from neograph_ext.decision._history import lineage
from neograph_ext.decision._langgraph import STORED_IS_AVAILABLE, TASKS_CHANNEL

__all__ = ["owed_turns", "pulled", "waiting"]

_EMPTY: Mapping[str, Any] = {}


def waiting(
    checkpoint: Mapping[str, Any],
    triggers: Mapping[str, Sequence[str]],
    channels: Mapping[str, object],
) -> frozenset[str]:
    """Nodes a checkpoint waits to run: the next superstep, computed from raw data.

    LangGraph's own rule: a node is due when one of its trigger channels holds a value
    and moved past the version the node last saw, or when a ``Send`` to it is queued.

    Args:
        checkpoint: The raw checkpoint.
        triggers: Per current node, the channels that trigger it.
        channels: The graph's channel specs, which know when a value is available.
    """
    due = set(pulled(checkpoint, triggers, channels))
    queued = checkpoint.get("channel_values", _EMPTY).get(TASKS_CHANNEL)
    if queued:
        due.update(send.node for send in queued if isinstance(send, Send))
    return frozenset(due)


def pulled(
    checkpoint: Mapping[str, Any],
    triggers: Mapping[str, Sequence[str]],
    channels: Mapping[str, object],
) -> frozenset[str]:
    """The nodes of ``waiting`` due by their triggers (pull tasks), without the ``Send``s."""
    versions: Mapping[str, Any] = checkpoint.get("channel_versions", _EMPTY)
    seen_all: Mapping[str, Mapping[str, Any]] = checkpoint.get("versions_seen", _EMPTY)
    values: Mapping[str, Any] = checkpoint.get("channel_values", _EMPTY)
    due: set[str] = set()
    for name, names in triggers.items():  # plain loops: every resume runs this
        seen = seen_all.get(name, _EMPTY)
        for channel in names:
            if _newer(versions.get(channel), seen.get(channel)) and _available(
                channels.get(channel), values, channel
            ):
                due.add(name)
                break
    return frozenset(due)


def _available(spec: object, values: Mapping[str, Any], channel: str) -> bool:
    if channel not in values:
        return False
    if type(spec) in STORED_IS_AVAILABLE:  # most triggers: reviving one costs more
        return True
    return isinstance(spec, BaseChannel) and spec.from_checkpoint(values[channel]).is_available()


def _newer(version: object, seen: object) -> bool:
    if version is None:
        return False
    if seen is None or type(version) is not type(seen):
        return True
    return bool(version > seen)  # type: ignore[operator]


def owed_turns(tuples: Sequence[CheckpointTuple], head_id: str, source_id: str) -> tuple[str, ...]:
    """The input checkpoints of ``source_id``'s later turns that a replay of them has
    not started yet on ``head_id``'s branch, oldest first.

    A replay (``ResumePolicy(replay_turns=True)``) forks ``source_id``'s lineage, then feeds
    its later turns their inputs again, one invocation each; every checkpoint it writes
    names ``source_id`` (``RunMark.replaying``). The turns replayed are the source's
    ``input`` checkpoints after the fork; each one replayed wrote an ``input``
    checkpoint on the new branch. What is left is owed.

    Args:
        tuples: Every root-namespace checkpoint of the thread.
        head_id: The head of the replaying branch.
        source_id: The head whose turns are replayed.
    """
    try:
        old = lineage(tuples, source_id)
        new = lineage(tuples, head_id)
    except KeyError:  # the source is gone: nothing can be owed from it
        return ()
    common = 0
    for before, after in zip(old, new, strict=False):
        if before.checkpoint_id != after.checkpoint_id:
            break
        common += 1
    turns = [r.checkpoint_id for r in old[common:] if r.source == "input"]
    started = sum(1 for r in new[common:] if r.source == "input")
    return tuple(turns[started:])
