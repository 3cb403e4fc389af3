"""Keeping the cached results of an entrypoint's unchanged calls: a rewind of its turn.

Rules:
- As ``_keep`` does for a graph's tasks: the base checkpoint B (the turn's input
  checkpoint, or a fork of it) is forked at its step, stamped with the current stamp,
  and the kept calls' writes are saved on the fork under the ids those calls have
  there (``_langgraph_calls.call_id``: an id hashes the checkpoint id), before the
  fork itself (``_fork.put_fork``). The thread then resumes the fork: the entrypoint's
  body replays, each kept call is served its cached result, every other call runs.
- Kept are the finished calls before the first call whose task is not kept
  (``_calls.kept_prefix``) and before the position the plan cut at (a call made with
  other arguments may be of a task kept before it): the order is the base's.
- Nothing is deleted: B and its writes stay on the old branch. The fork records how
  many calls it holds (``_keep.KEEP_KEY``), so a fork a kill left without them is
  planned from B again (``_keep.incomplete``).
- A fork that carries a turn on (a migrated ``previous``, ``accept``) copies its cached
  results too, under the ids the calls have on it (``refiled_calls``).
- ``calls_fork`` does no I/O; ``keep_calls`` is a flow of reads and writes (``_operations``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.pregel import Pregel

from neograph_ext.decision._calls import kept_prefix
from neograph_ext.decision._entrypoint import EntrypointShape
from neograph_ext.decision._langgraph_calls import call_id, finished_calls
from neograph_ext.decision._operations import Flow, ReadTuple
from neograph_ext.decision._stamp import Stamp
from neograph_ext.decision._turn import TurnCall
from neograph_ext.drivers._thread import ThreadCall
from neograph_ext.flows._fork import Fork, address, put_fork
from neograph_ext.flows._keep import forked, found_target, keep

__all__ = ["calls_fork", "keep_calls", "kept", "refiled_calls"]


def calls_fork(
    target: CheckpointTuple,
    shape: EntrypointShape,
    kept: tuple[frozenset[str], int | None],
    stamp: Stamp,
    mark: str,
) -> Fork:
    """The fork of ``target`` holding the writes of the calls kept, under their new ids.

    Args:
        target: The turn's base checkpoint.
        shape: The entrypoint's name and tasks.
        kept: The tasks whose calls before the first changed one are kept, and the
            position before which they are (None: wherever the first changed one is).
        stamp: The current stamp, which the fork carries.
        mark: The run mark of the run making it.
    """
    step = target.metadata.get("step", -1)
    step = step if isinstance(step, int) else -1
    found = finished_calls(
        target.checkpoint, step, shape.name, shape.tasks, target.pending_writes or ()
    )
    tasks, upto = kept
    prefix = {
        c.index
        for c in kept_prefix(tuple(TurnCall(c.position, c.task) for c in found), tasks)
        if upto is None or c.index < upto
    }
    calls = [c for c in found if c.position in prefix]
    checkpoint, metadata = forked(target, stamp, mark, len(calls))
    writes = []
    for c in calls:
        new_id = call_id(checkpoint, step, shape.name, c.task or "", c.position)
        if new_id is not None:
            writes.append((new_id, c.writes))
    return Fork(address(target), checkpoint, metadata, {}, tuple(writes))


def refiled_calls(base: CheckpointTuple, fork: Fork, shape: EntrypointShape) -> Fork:
    """``fork`` of the turn's base ``base``, its copies of the base's finished calls filed
    under the ids those calls have on the fork (an id hashes the checkpoint id), so that
    they are served again rather than run; other writes stay as they were filed.
    """
    step = base.metadata.get("step", -1)
    step = step if isinstance(step, int) else -1
    writes = base.pending_writes or ()
    ids = {
        c.task_id: call_id(fork.checkpoint, step, shape.name, c.task, c.position)
        for c in finished_calls(base.checkpoint, step, shape.name, shape.tasks, writes)
        if c.task is not None
    }
    refiled = tuple((ids.get(task_id) or task_id, held) for task_id, held in fork.writes)
    return replace(fork, writes=refiled)


def keep_calls(
    graph: Pregel[Any, Any, Any, Any],
    saver: BaseCheckpointSaver[Any],
    target_config: RunnableConfig,
    shape: EntrypointShape,
    kept: tuple[frozenset[str], int | None],
    stamp: Stamp,
    mark: str,
) -> Flow[RunnableConfig]:
    """Fork the turn's base, keeping the cached results of the calls kept.

    Raises:
        GraphError: The base checkpoint does not exist.
    """
    target = found_target((yield ReadTuple(target_config)), target_config)
    return (yield from put_fork(graph, saver, calls_fork(target, shape, kept, stamp, mark), ()))


def kept(
    call: ThreadCall,
    target: RunnableConfig,
    nodes: frozenset[str],
    upto: int | None,
    mark: str,
    answering: Mapping[str, Any],
) -> Flow[RunnableConfig]:
    """Fork ``target``, keeping the finished work of ``nodes`` on it: an entrypoint's
    calls before ``upto`` (``keep_calls``), a graph's tasks (``_keep.keep``), and after
    the answers of a task waiting, the answer given now (``answering``)."""
    graph, saver, stamp = call.graph, call.saver, call.stamp
    shape = graph.neograph_ext_entrypoint
    if shape is not None:
        return (yield from keep_calls(graph, saver, target, shape, (nodes, upto), stamp, mark))
    return (yield from keep(graph, saver, target, nodes, stamp, mark, answering))
