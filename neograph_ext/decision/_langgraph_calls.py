"""What the Functional API (``@entrypoint`` / ``@task``) keeps of a run, and how its
cached task results are named: LangGraph's private shapes, known here alone.

Rules:
- Read from LangGraph's source and checked on langgraph 1.2.24 (checkpoint 4.3.2):
  ``pregel/_algo.py`` (``prepare_single_task``, ``prepare_push_task_functional``),
  ``pregel/_runner.py`` (``_call``: a call whose task already wrote ``__return__`` is
  served that value instead of running), ``func/__init__.py`` (the entrypoint's one node
  writes ``__end__`` and ``__previous__``). ``tests/unit/test_langgraph_calls.py`` runs an
  entrypoint and fails loudly when any of it changes.
- An entrypoint turn has one checkpoint while it runs: its input checkpoint (or a fork
  of it), whose pending writes hold, per finished call, ``__return__`` under the call's
  task id. A task id hashes the checkpoint id, the namespace (the entrypoint's task),
  the step, the task's name and the call's index in its parent (the entrypoint's call
  counter, from 0). So ids are recomputed here from names and indices, never guessed:
  an id that matches no name (a task this package did not see, a task called from a
  task) stays unknown.
- Pure: no I/O.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from neograph_ext.decision._langgraph import hash_task_id

__all__ = [
    "CALL_CHANNEL",
    "END_CHANNEL",
    "ERROR",
    "INTERRUPT",
    "PREVIOUS_CHANNEL",
    "RETURN",
    "FinishedCall",
    "call_id",
    "entrypoint_task_id",
    "failed_tasks",
    "finished_calls",
    "recorded_digest",
    "returned",
]

CALL_CHANNEL = "__neograph_call__"
"""Not LangGraph's: where a call records its digest (``_call_match``), beside its result."""
RETURN = "__return__"
"""The write holding a finished call's result."""
ERROR = "__error__"
INTERRUPT = "__interrupt__"
END_CHANNEL = "__end__"
"""The channel an entrypoint's return value is written to."""
PREVIOUS_CHANNEL = "__previous__"
"""The channel an entrypoint's saved value (``previous`` of the next turn) is written to."""

_PULL = "__pregel_pull"
_PUSH = "__pregel_push"
_START = "__start__"


class FinishedCall(NamedTuple):
    """One call of a task that finished on a checkpoint: it left ``__return__``."""

    position: int
    """Its index among the entrypoint's calls (0 for the first call)."""
    task: str | None
    """The task's name; None when the id matches no task known."""
    task_id: str
    """Its task id on that checkpoint."""
    writes: tuple[tuple[str, Any], ...]
    """What it wrote, ``__return__`` included, in order."""


def _namespace(checkpoint_id: str) -> bytes | None:
    try:
        return binascii.unhexlify(checkpoint_id.replace("-", ""))
    except (binascii.Error, ValueError):
        return None


def entrypoint_task_id(checkpoint: Mapping[str, Any], step: int, entrypoint: str) -> str | None:
    """The id of the entrypoint's own task in the step after ``checkpoint`` (at ``step``).

    Args:
        checkpoint: The raw checkpoint the turn's calls wrote to.
        step: Its step (``-1`` for a thread's first input checkpoint).
        entrypoint: The entrypoint's name (its one node).
    """
    namespace = _namespace(str(checkpoint.get("id", "")))
    if namespace is None:
        return None
    version = int(checkpoint.get("v", 1))
    return hash_task_id(version, namespace, entrypoint, str(step + 1), entrypoint, _PULL, _START)


def call_id(
    checkpoint: Mapping[str, Any], step: int, entrypoint: str, task: str, index: int
) -> str | None:
    """The task id of the ``index``-th call of the entrypoint, to ``task``, on ``checkpoint``."""
    namespace = _namespace(str(checkpoint.get("id", "")))
    parent = entrypoint_task_id(checkpoint, step, entrypoint)
    if namespace is None or parent is None:
        return None
    return hash_task_id(
        int(checkpoint.get("v", 1)),
        namespace,
        f"{entrypoint}:{parent}|{task}",
        str(step + 1),
        task,
        _PUSH,
        f"~{_PULL}, {entrypoint}",
        str(index),
    )


def failed_tasks(
    checkpoint: Mapping[str, Any],
    step: int,
    entrypoint: str,
    tasks: Iterable[str],
    writes: Sequence[tuple[str, str, Any]],
) -> frozenset[str]:
    """The tasks of ``tasks`` with a call that failed on ``checkpoint`` and did not finish
    since (an error and no result): a resume runs them again. Arguments as for
    ``finished_calls``."""
    errored = {task_id for task_id, channel, _ in writes if channel == ERROR}
    failed = errored - {task_id for task_id, channel, _ in writes if channel == RETURN}
    failed.discard(entrypoint_task_id(checkpoint, step, entrypoint) or "")
    bound = 2 * len({task_id for task_id, _, _ in writes}) + 16
    placed = _placed(checkpoint, step, entrypoint, tasks, failed, bound)
    return frozenset(name for _, name in placed.values())


def _placed(
    checkpoint: Mapping[str, Any],
    step: int,
    entrypoint: str,
    tasks: Iterable[str],
    ids: set[str],
    bound: int,
) -> dict[str, tuple[int, str]]:
    """Per task id of ``ids`` that a call of ``tasks`` has, its call's index and task."""
    names = sorted(set(tasks))
    placed: dict[str, tuple[int, str]] = {}
    # Calls that never wrote leave gaps in the indices: look past them, boundedly.
    for index in range(bound):
        if len(placed) == len(ids):
            break
        for name in names:
            found_id = call_id(checkpoint, step, entrypoint, name, index)
            if found_id in ids and found_id not in placed:
                placed[found_id] = (index, name)
    return placed


def finished_calls(
    checkpoint: Mapping[str, Any],
    step: int,
    entrypoint: str,
    tasks: Iterable[str],
    writes: Sequence[tuple[str, str, Any]],
) -> tuple[FinishedCall, ...]:
    """The calls that finished on ``checkpoint``, in call order; those whose id matches
    no task of ``tasks`` last, with no name.

    Args:
        checkpoint: The raw checkpoint the turn's calls wrote to.
        step: Its step.
        entrypoint: The entrypoint's name.
        tasks: The names of the tasks known.
        writes: The checkpoint's pending writes, ``(task id, channel, value)``.
    """
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in writes:
        by_task.setdefault(task_id, []).append((channel, value))
    # A call that failed and then ran again on a resume holds both an error and its
    # result: the result is what a replay is served.
    finished = {
        task_id for task_id, found in by_task.items() if any(ch == RETURN for ch, _ in found)
    }
    own = entrypoint_task_id(checkpoint, step, entrypoint)
    finished.discard(own or "")
    bound = 2 * len(by_task) + 16
    placed = _placed(checkpoint, step, entrypoint, tasks, finished, bound)
    calls = [
        FinishedCall(index, name, task_id, tuple(by_task[task_id]))
        for task_id, (index, name) in placed.items()
    ]
    calls.sort(key=lambda call: call.position)
    unknown = sorted(finished - placed.keys())
    calls += [
        FinishedCall(bound + n, None, task_id, tuple(by_task[task_id]))
        for n, task_id in enumerate(unknown)
    ]
    return tuple(calls)


def recorded_digest(writes: Sequence[tuple[str, Any]]) -> str | None:
    """The digest a finished call recorded (``CALL_CHANNEL``); None when it recorded none."""
    found = [value for channel, value in writes if channel == CALL_CHANNEL]
    return str(found[-1]) if found else None


def returned(writes: Sequence[tuple[str, Any]]) -> Any:
    """What a finished call returned (its ``__return__`` write)."""
    return next((value for channel, value in writes if channel == RETURN), None)
