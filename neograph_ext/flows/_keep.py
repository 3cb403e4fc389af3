"""Keeping the finished work of a rewound superstep: only its invalidated tasks run again.

Rules:
- A rewind that keeps work forks the target checkpoint T as LangGraph's own time travel
  does (a child of T at T's step, ``source="fork"``), through ``_fork``, stamped with
  the current stamp. On the fork it saves, under the fork's task ids, the writes the
  kept tasks left on T when they ran on the old branch (T's pending writes), then
  resumes the thread's newest checkpoint, the fork: LangGraph hands saved writes back
  to their tasks instead of running them.
- A task kept is one that finished: it left an output (beside an error or a question
  of an earlier try, which are not kept). Of a task of a kept node still waiting on a
  question, the answers it was given are kept: it runs again and asks the rest.
- The writes are saved before the fork that holds them (``_fork.put_fork``): the fork
  appears with all of them, and a process killed in between leaves T's branch as it was.
- The fork records how many tasks it keeps (``KEEP_KEY``; so does a fork carrying a
  head's pending writes, ``_migrate``). Version 0.2 wrote the fork first: a fork of it
  holding the writes of fewer tasks was left by a process killed between the fork and
  its writes, and the next run plans from T again (``incomplete``) and forks anew; the
  bare fork stays in the history, like every abandoned branch.
- Pure parts (``forked``, ``kept_writes``, ``incomplete``) do no I/O; ``keep`` is a
  flow of reads and writes (``_operations``) for either driver.

Checked on langgraph 1.2.24 (checkpoint 4.3.2): a resume of the thread's newest
checkpoint reapplies its pending writes to their tasks, while a resume addressed by
``checkpoint_id`` is time travel and re-runs them; ``tests/integration/test_keep.py``
fails loudly if either changes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
)
from langgraph.pregel import Pregel
from langgraph.types import PregelTask

from neograph_ext.decision._errors import GraphError
from neograph_ext.decision._langgraph import NULL_TASK
from neograph_ext.decision._langgraph_renames import renamed_writes, stored_tasks
from neograph_ext.decision._operations import Flow, Put, ReadTasks, ReadTuple
from neograph_ext.decision._stamp import RUN_KEY, STAMP_KEY, Stamp, stamp_ref
from neograph_ext.flows._fork import Fork, Writes, address, forked_checkpoint, put_fork

__all__ = [
    "KEEP_KEY",
    "TaskKey",
    "fork_inside",
    "forked",
    "found_target",
    "incomplete",
    "keep",
    "kept_writes",
]

KEEP_KEY = "neograph_ext_keep"
"""Fork metadata: how many tasks' writes the fork was made to hold."""

_ERROR = "__error__"
"""A task that wrote an interrupt and nothing else did not finish, nor did one that wrote
an error and nothing else: it runs again. One that failed (or asked) and then finished
when the thread was resumed left its output beside the error (or the question and its
answer): LangGraph hands it its output (``read_task_statuses``), and so does the fork,
without the failed try's error, the question or the answer."""
_RESUME = "__resume__"
"""The answers a task was given (the values its ``interrupt()`` calls return, in order):
kept for a task that asks again, so it asks only the questions not answered yet."""
_STATUS = frozenset({_ERROR, "__interrupt__", "__error_source_node__", _RESUME})
"""Writes that say what happened to a task, not what it produced (``CONTROL_WRITES``)."""
_NOT_CARRIED = frozenset({"__interrupt__", "__resume__"})
"""Writes that time travel drops from the checkpoint it forks, and so does a keep."""

TaskKey = tuple[str, tuple[Any, ...]]
"""A task across checkpoints: its node's name and its path."""


def kept_writes(
    old_tasks: Sequence[PregelTask],
    writes: Sequence[PendingWrite],
    nodes: frozenset[str],
    answering: Mapping[str, Any] | None = None,
) -> dict[TaskKey | None, list[tuple[str, Any]]]:
    """The writes to carry from the target onto its fork, grouped by task.

    Args:
        old_tasks: The target's tasks (ids derived from the target's checkpoint id).
        writes: The target's pending writes: what its tasks wrote on the old branch.
        nodes: The nodes whose finished tasks are kept (``ResumePlan.kept_tasks``).
        answering: Per node whose kept task waits on a question, its answer, kept after
            the answers the task was given.

    Returns:
        Per kept task (by name and path), its writes in order; under ``None``, the
        writes that belong to no task, which time travel applies too.
    """
    by_id = {task.id: (task.name, tuple(task.path)) for task in old_tasks}
    grouped: dict[TaskKey | None, list[tuple[str, Any]]] = defaultdict(list)
    for task_id, channel, value in writes:
        if task_id == NULL_TASK:
            if channel not in _NOT_CARRIED:
                grouped[None].append((channel, value))
            continue
        key = by_id.get(task_id)
        if key is None or key[0] not in nodes or channel in (_ERROR, "__interrupt__"):
            if key is not None and key[0] in nodes and channel == "__interrupt__":
                grouped[key]  # a task asking its first question: kept if answered now
            continue
        grouped[key].append((channel, value))
    kept: dict[TaskKey | None, list[tuple[str, Any]]] = {}
    for key, found in grouped.items():
        output = [write for write in found if write[0] not in _STATUS]
        # A task that finished keeps its output alone; one still asking, its answers.
        carried = output or [write for write in found if write[0] == _RESUME]
        if not output and key is not None and key[0] in (answering or {}):
            given = [a for _, v in carried for a in (v if isinstance(v, list) else [v])]
            carried = [(_RESUME, [*given, (answering or {})[key[0]]])]
        if key is None or carried:
            kept[key] = found if key is None else carried
    return kept


def forked(
    target: CheckpointTuple, stamp: Stamp, mark: str, kept: int
) -> tuple[Checkpoint, CheckpointMetadata]:
    """The fork of ``target`` to save as its child: same values and step, a new id.

    Args:
        target: The checkpoint to fork.
        stamp: The current stamp, which the fork carries.
        mark: The run mark (``_stamp.encode_run``) of the run making it.
        kept: How many tasks' writes the fork will hold.
    """
    step = target.metadata.get("step", -1)
    metadata: dict[str, Any] = {
        "source": "fork",
        "step": step,
        "parents": target.metadata.get("parents", {}),
        STAMP_KEY: stamp_ref(stamp),
        RUN_KEY: mark,
        KEEP_KEY: kept,
    }
    return forked_checkpoint(target), metadata  # type: ignore[return-value]


def fork_inside(configs: Sequence[RunnableConfig], stamp: Stamp, mark: str) -> Flow[None]:
    """Fork each subgraph checkpoint ``configs`` name, in its own namespace: the fork is
    its namespace's newest, which LangGraph resumes the subgraph from when the parent
    resumes its task (``_inside``). One ``put`` each, the parent untouched: a kill after
    any of them leaves a thread the next run plans again (a fork nothing ran after is
    forked again).

    Raises:
        GraphError: A checkpoint to fork is gone.
    """
    for config in configs:
        target = found_target((yield ReadTuple(config)), config)
        checkpoint, metadata = forked(target, stamp, mark, 0)
        yield Put(address(target), checkpoint, metadata, {})


def incomplete(head: CheckpointTuple | None) -> RunnableConfig | None:
    """The checkpoint to plan from instead of ``head``, when ``head`` is a keeping fork
    missing some of its writes (its run was killed); else None."""
    if head is None or head.parent_config is None or not isinstance(head.metadata, Mapping):
        return None
    expected = head.metadata.get(KEEP_KEY)
    if head.metadata.get("source") != "fork" or not isinstance(expected, int):
        return None
    held = {task for task, _, _ in head.pending_writes or () if task != NULL_TASK}
    return head.parent_config if len(held) < expected else None


def keep(
    graph: Pregel[Any, Any, Any, Any],
    saver: BaseCheckpointSaver[Any],
    target_config: RunnableConfig,
    nodes: frozenset[str],
    stamp: Stamp,
    mark: str,
    answering: Mapping[str, Any] | None = None,
) -> Flow[RunnableConfig]:
    """Fork the target and save on the fork the writes of the kept tasks; a kept task
    waiting on a question, with the answer ``answering`` gives its node after its own.

    The caller then resumes the thread without a ``checkpoint_id``: the fork is its
    newest checkpoint.

    Raises:
        GraphError: The target checkpoint does not exist.
    """
    target = found_target((yield ReadTuple(target_config)), target_config)
    old = _stored(graph, target, (yield ReadTasks(target.config)), stamp)
    fork = _fork(target, old, nodes, stamp, mark, answering or {})
    return (yield from put_fork(graph, saver, fork, old))


def _stored(
    graph: Pregel[Any, Any, Any, Any],
    target: CheckpointTuple,
    tasks: Sequence[PregelTask],
    stamp: Stamp,
) -> Sequence[PregelTask]:
    """The target's tasks under the ids their writes are stored by: a node renamed since
    they ran (``renames``) wrote them under its old name's."""
    if not stamp.renames:
        return tasks
    triggers = {name: tuple(node.triggers) for name, node in graph.nodes.items()}
    return stored_tasks(tasks, target, triggers, stamp.renames)


def _fork(
    target: CheckpointTuple,
    old: Sequence[PregelTask],
    nodes: frozenset[str],
    stamp: Stamp,
    mark: str,
    answering: Mapping[str, Any],
) -> Fork:
    """The fork of ``target`` holding the kept tasks' writes, under the target's task ids."""
    carried = kept_writes(old, target.pending_writes or (), nodes, answering)
    if stamp.renames:
        carried = {k: renamed_writes(found, stamp.renames) for k, found in carried.items()}
    checkpoint, metadata = forked(target, stamp, mark, len(carried.keys() - {None}))
    return Fork(address(target), checkpoint, metadata, {}, _by_old_id(old, carried))


def _by_old_id(
    old: Sequence[PregelTask], carried: Mapping[TaskKey | None, list[tuple[str, Any]]]
) -> Writes:
    """The carried writes under the target's task ids, those of no task first: a fork
    holding every kept task's writes (``incomplete``) then holds all of them."""
    ids = {(task.name, tuple(task.path)): task.id for task in old}
    found = tuple((ids[key], tuple(writes)) for key, writes in carried.items() if key is not None)
    if None in carried:
        found = ((NULL_TASK, tuple(carried[None])), *found)
    return found


def found_target(target: CheckpointTuple | None, config: RunnableConfig) -> CheckpointTuple:
    """The checkpoint ``config`` names to rewind to, read as ``target``.

    Raises:
        GraphError: It is gone.
    """
    if target is None:
        checkpoint_id = (config.get("configurable") or {}).get("checkpoint_id")
        raise GraphError(
            f"checkpoint {checkpoint_id!r} to rewind to is gone: plan the thread again"
        )
    return target
