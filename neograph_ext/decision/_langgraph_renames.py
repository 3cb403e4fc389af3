"""A renamed node (``compile(renames=...)``) in a checkpoint its old name wrote: the
channels LangGraph names after nodes, known here alone.

Rules:
- Read from LangGraph's source and checked on langgraph 1.2.24 (checkpoint 4.3.2),
  ``graph/state.py``: a node reached by an edge or a branch is triggered by
  ``branch:to:<node>``; a join ``add_edge([a, b], c)`` by ``join:a+b:c``, whose value is
  the set of the names it has seen (with a flag, ``defer=True``); ``versions_seen`` is
  keyed by node; a queued ``Send`` names its node. A checkpoint the old name wrote holds
  those old names, which no node of the renamed graph reads: the node after a join never
  runs, a rewind to before the renamed node runs nothing.
- ``renamed`` is applied where LangGraph itself moves a checkpoint to a new channel
  layout (``_migrate_checkpoint``: as it loads one to run, show or update it), and where
  the head is read to plan (``_head_state.waiting_nodes``): the stored checkpoints are
  left as they are (history is never rewritten). ``tests/oracle/test_rows.py`` fails
  loudly when a shape changes.
- A task's id hashes its node's name and trigger channels (``_algo.prepare_single_task``):
  the writes a renamed node's task left on a checkpoint are filed under the id its old
  name had there (``stored_tasks``), and name the old channels (``renamed_writes``).
- Pure: no I/O.
"""

from __future__ import annotations

import binascii
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.types import PregelTask, Send

from neograph_ext.decision._langgraph import TASKS_CHANNEL, hash_task_id

__all__ = ["channel_nodes", "renamed", "renamed_writes", "stored_tasks"]

_BRANCH, _JOIN = "branch:to:", "join:"


def renamed(checkpoint: Mapping[str, Any], renames: Mapping[str, str]) -> None:
    """Give ``checkpoint``'s channels and their values the new names of renamed nodes.

    Args:
        checkpoint: A raw checkpoint (changed in place).
        renames: Old node name -> new name.
    """
    values: dict[str, Any] = checkpoint.get("channel_values", {})
    versions: dict[str, Any] = checkpoint.get("channel_versions", {})
    for old in [*versions.keys() | values.keys()]:
        new = _channel(old, renames)
        if new != old:
            if old in versions:
                versions[new] = versions.pop(old)
            if old in values:
                value = values.pop(old)
                values[new] = _barrier(value, renames) if new.startswith(_JOIN) else value
    seen: dict[str, dict[str, Any]] = checkpoint.get("versions_seen", {})
    for node in [*seen]:
        channels = seen.pop(node)
        seen[renames.get(node, node)] = {_channel(ch, renames): v for ch, v in channels.items()}
    if checkpoint.get("updated_channels"):
        checkpoint["updated_channels"] = [  # type: ignore[index]
            _channel(ch, renames) for ch in checkpoint["updated_channels"]
        ]
    sends = values.get(TASKS_CHANNEL)
    if sends:
        values[TASKS_CHANNEL] = [
            Send(renames[s.node], s.arg) if isinstance(s, Send) and s.node in renames else s
            for s in sends
        ]


def channel_nodes(name: str) -> frozenset[str]:
    """The nodes a channel LangGraph names after nodes names (none for another)."""
    if name.startswith(_BRANCH):
        return frozenset({name[len(_BRANCH) :]})
    if name.startswith(_JOIN) and name.count(":") == 2:
        _, starts, end = name.split(":")
        return frozenset({*starts.split("+"), end})
    return frozenset()


def _channel(name: str, renames: Mapping[str, str]) -> str:
    if name.startswith(_BRANCH):
        node = name[len(_BRANCH) :]
        return _BRANCH + renames.get(node, node)
    if name.startswith(_JOIN) and name.count(":") == 2:
        _, starts, end = name.split(":")
        joined = "+".join(renames.get(start, start) for start in starts.split("+"))
        return f"{_JOIN}{joined}:{renames.get(end, end)}"
    return name


def _barrier(value: Any, renames: Mapping[str, str]) -> Any:
    """A join's value (the names seen; with ``defer=True``, and a flag) renamed."""
    if isinstance(value, set):
        return {renames.get(name, name) for name in value}
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], set):
        return ({renames.get(name, name) for name in value[0]}, value[1])
    return value


def stored_tasks(
    tasks: Sequence[PregelTask],
    base: CheckpointTuple,
    triggers: Mapping[str, Sequence[str]],
    renames: Mapping[str, str],
) -> list[PregelTask]:
    """``tasks`` (LangGraph's, of ``base`` as renamed), a renamed node's under the id its
    old name's task had on ``base``, under which its writes there are stored.

    Args:
        tasks: ``base``'s tasks as the current graph reads it (``get_state(...).tasks``).
        base: The checkpoint its old name's tasks ran from.
        triggers: Per current node, its trigger channels.
        renames: Old node name -> new name.
    """
    was = {new: old for old, new in renames.items()}
    namespace = binascii.unhexlify(str(base.checkpoint["id"]).replace("-", ""))
    version = int(base.checkpoint.get("v", 1))
    step = str(int((base.metadata or {}).get("step", -1)) + 1)
    found = []
    for task in tasks:
        old = was.get(task.name, task.name)
        news = sorted(triggers.get(task.name, ()))
        olds = sorted(_channel(channel, was) for channel in news)
        # Renamed, or triggered by a join naming a renamed node: ids hash both.
        if (old != task.name or olds != news) and task.path[:1] == (_PULL,):
            task = task._replace(id=hash_task_id(version, namespace, old, step, old, _PULL, *olds))
        found.append(task)
    return found


def renamed_writes(
    writes: Sequence[tuple[str, Any]], renames: Mapping[str, str]
) -> list[tuple[str, Any]]:
    """A task's writes, stored by a renamed node's old name, as its new name writes them."""
    found = []
    for channel, value in writes:
        new = _channel(channel, renames)
        if new.startswith(_JOIN) and new != channel and isinstance(value, str):
            value = renames.get(value, value)
        found.append((new, value))
    return found


_PULL = "__pregel_pull"
"""The first part of a pull task's path (LangGraph's ``PULL``), and of its id's parts."""
