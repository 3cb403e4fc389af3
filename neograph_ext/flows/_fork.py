"""Forking a checkpoint: writing a child of it at its step, with pending writes re-filed.

Rules:
- A fork is the base's checkpoint under a new id (``forked_checkpoint``), written through
  the saver's public ``put`` as the base's child (``address``); its caller states its
  metadata (source ``fork``, the current stamp, a run mark) and the values it changes.
  Nothing is deleted or overwritten.
- Pending writes copied onto a fork are re-filed under the fork's own task ids, matched to
  the base's tasks by node name and path (a ``Send``'s position), both read through
  LangGraph's public ``get_state(...).tasks`` (``task_ids``). Writes of an id no task of
  the base has (LangGraph's null task, a ``Command``'s update) keep their id.
- A fork holds exactly its base's values: each ``DeltaChannel`` the base holds or its
  pending writes touch gets a snapshot of its value at the base (read through
  ``get_state``), as LangGraph's own loop snapshots the first checkpoint of a branch.
  Without one, the fork's value would be rebuilt by replaying the base's pending
  writes, which belong to the branch the fork replaces (or, when they are copied onto
  the fork, would then be applied twice).
- The writes are saved before the fork (its task ids are read from a scratch copy of
  it): the fork appears with every write it owes, so a kill between any two of these
  writes leaves the thread as it was. Savers key writes by checkpoint id alone.
- ``forked_checkpoint``, ``address``, ``task_ids`` and ``snapshotted`` do no I/O;
  ``put_fork`` is a flow of reads and writes (``_operations``) for either driver. Used
  by ``_keep`` (a rewind keeping finished tasks) and ``_migrate`` (carrying values on,
  and ``accept``).

What this relies on in LangGraph, checked on langgraph 1.2.24 (checkpoint 4.3.2);
``tests/unit/test_keep.py``, ``tests/integration/test_keep.py`` and
``tests/integration/test_long_lived.py`` fail loudly if it changes:
- The fork keeps the base's checkpoint format ``v`` and ``updated_channels``.
  ``create_checkpoint`` would stamp the checkpoint library's format version (2), older
  than what LangGraph writes (4): read as version 2, its consumed edge channels wake the
  nodes of two steps back (measured: in a -> b -> (c | d), b ran again).
- LangGraph derives task ids from the checkpoint id, so the same task has another id on
  the fork, and writes filed under the base's ids would belong to no task there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    copy_checkpoint,
)
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.pregel import Pregel
from langgraph.types import PregelTask

from neograph_ext.decision._langgraph import COUNTERS_KEY, delta_channels, delta_snapshot
from neograph_ext.decision._operations import Flow, Put, PutWrites, ReadTuple, ReadValues

__all__ = [
    "Fork",
    "Writes",
    "address",
    "forked_checkpoint",
    "put_fork",
    "snapshotted",
    "task_ids",
]

Writes = tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
"""Pending writes per task id, in order: ``(task id, ((channel, value), ...))``."""


@dataclass(frozen=True)
class Fork:
    """One checkpoint to write: a child of the base, and the writes to save on it."""

    parent: RunnableConfig
    """Names the base checkpoint, the new one's parent (``address``)."""
    checkpoint: Checkpoint
    """The base's checkpoint under a new id (``forked_checkpoint``), values as carried."""
    metadata: CheckpointMetadata
    """The fork's metadata, stamped with the current stamp and a run mark."""
    versions: dict[str, Any]
    """The new versions of the channels it changes (``put``'s ``new_versions``)."""
    writes: Writes
    """The base's pending writes to save on the fork, under the base's task ids."""


def forked_checkpoint(base: CheckpointTuple) -> Checkpoint:
    """A copy of ``base``'s checkpoint under a new id and time, at the base's step.

    Copied, not rebuilt: the format ``v`` and ``updated_channels`` stay the base's.
    """
    checkpoint = copy_checkpoint(base.checkpoint)
    step = (base.metadata or {}).get("step", -1)
    checkpoint["id"] = str(uuid6(clock_seq=step if isinstance(step, int) else -1))
    checkpoint["ts"] = datetime.now(UTC).isoformat()
    return checkpoint


def address(base: CheckpointTuple) -> RunnableConfig:
    """The base's full address: some savers return configs without the namespace, and
    every saver's ``put`` needs it."""
    configurable = base.config.get("configurable") or {}
    return {
        "configurable": {
            "thread_id": configurable["thread_id"],
            "checkpoint_ns": configurable.get("checkpoint_ns", ""),
            "checkpoint_id": base.checkpoint["id"],
        }
    }


def task_ids(old: Iterable[PregelTask], new: Iterable[PregelTask]) -> dict[str, str]:
    """Old task id -> the same task's id on the fork, matched by node name and path."""
    now = {(task.name, tuple(task.path)): task.id for task in new}
    return {
        task.id: now[(task.name, tuple(task.path))]
        for task in old
        if (task.name, tuple(task.path)) in now
    }


def snapshotted(
    fork: Fork,
    base: CheckpointTuple,
    values: Mapping[str, Any],
    channels: Mapping[str, Any],
    next_version: Callable[[Any, None], Any],
) -> Fork:
    """``fork`` with a snapshot of each of ``channels`` (the graph's DeltaChannels) that
    the base holds or its pending writes touch, unless the fork carries a value of its
    own for it.

    Args:
        fork: The fork to write.
        base: The checkpoint it forks.
        values: The base's values as LangGraph rebuilds them (``get_state(...).values``).
        channels: The graph's DeltaChannels by name (``_langgraph.delta_channels``).
        next_version: The saver's ``get_next_version``: ``put`` stores a value only
            for a channel whose version moved.
    """
    touched = {channel for _, channel, _ in base.pending_writes or ()}
    versions = fork.checkpoint["channel_versions"]
    wanted = [
        name
        for name in channels
        if (name in versions or name in touched) and name not in fork.versions
    ]
    if not wanted:
        return fork
    checkpoint = copy_checkpoint(fork.checkpoint)
    new_versions = dict(fork.versions)
    # Above every version of the checkpoint, as LangGraph's own loop bumps a channel.
    version = next_version(max(versions.values(), default=None), None)
    for name in wanted:
        # A channel the base's own writes touch first has no value at the base yet.
        value = values[name] if name in values else channels[name].from_checkpoint(None).get()
        checkpoint["channel_values"][name] = delta_snapshot(value)
        checkpoint["channel_versions"][name] = version
        new_versions[name] = version
    metadata: dict[str, Any] = dict(fork.metadata)
    stale: Mapping[str, Any] = metadata.get(COUNTERS_KEY) or {}
    counters = {k: v for k, v in stale.items() if k not in wanted}
    metadata.pop(COUNTERS_KEY, None)
    if counters:
        metadata[COUNTERS_KEY] = counters
    return replace(
        fork,
        checkpoint=checkpoint,
        metadata=metadata,  # type: ignore[arg-type]
        versions=new_versions,
    )


def put_fork(
    graph: Pregel[Any, Any, Any, Any],
    saver: BaseCheckpointSaver[Any],
    fork: Fork,
    old: Iterable[PregelTask],
) -> Flow[RunnableConfig]:
    """Write the fork's writes under its own task ids, then the fork.

    Args:
        graph: The graph, whose ``get_state`` names the fork's tasks.
        saver: The thread's saver, whose versions and serializer the fork takes.
        fork: What to write.
        old: The base's tasks (``get_state(fork.parent).tasks``), read by the caller
            before anything is written: if the state cannot be read, nothing is (so
            are the base's DeltaChannel values, for ``snapshotted``).

    Returns:
        The config of the checkpoint written.
    """
    channels = delta_channels(graph)
    base = (yield ReadTuple(fork.parent)) if channels else None
    if base is not None:
        values = yield ReadValues(fork.parent)
        fork = snapshotted(fork, base, values, channels, saver.get_next_version)
    at = _at(fork)
    for task_id, writes, path in _refiled(graph, saver, fork, old):
        yield PutWrites(at, writes, task_id, path)
    written: RunnableConfig = yield Put(fork.parent, fork.checkpoint, fork.metadata, fork.versions)
    return written


def _at(fork: Fork) -> RunnableConfig:
    """Where the fork's writes go: the fork's own address, before the fork is stored."""
    configurable = fork.parent["configurable"]
    return {"configurable": {**configurable, "checkpoint_id": fork.checkpoint["id"]}}


def _refiled(
    graph: Pregel[Any, Any, Any, Any],
    saver: BaseCheckpointSaver[Any],
    fork: Fork,
    old: Iterable[PregelTask],
) -> tuple[tuple[str, tuple[tuple[str, Any], ...], Sequence[Any]], ...]:
    """The fork's writes under the fork's own task ids, with each task's path, known
    before the fork is stored.

    Its tasks are named by ``get_state`` of the fork held in a scratch in-memory saver
    (the thread's serializer, nothing shared): the writes are then saved before the
    fork, which appears with all of them at once. A kill before the fork is stored
    leaves writes no checkpoint names, and the thread as it was.
    """
    if not fork.writes:
        return ()
    scratch = InMemorySaver(serde=saver.serde)
    versions = fork.checkpoint["channel_versions"]
    held = scratch.put(fork.parent, fork.checkpoint, fork.metadata, versions)
    tasks = graph.copy(update={"checkpointer": scratch}).get_state(held).tasks
    ids, paths = task_ids(old, tasks), {task.id: task.path for task in tasks}
    refiled = []
    for task_id, writes in fork.writes:
        now = ids.get(task_id, task_id)
        refiled.append((now, writes, paths.get(now, ())))
    return tuple(refiled)
