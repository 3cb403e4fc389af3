"""What a thread's head checkpoint says, read from its raw tuple.

Rules:
- Pure: only the graph's definition and the head tuple are consulted, never the saver.
- Which nodes the head waits to run is LangGraph's own rule (``_owed.waiting``) on
  the graph's triggers and channels, ``__start__`` included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.channels.base import BaseChannel
from langgraph.checkpoint.base import CheckpointTuple, copy_checkpoint
from langgraph.errors import EmptyChannelError
from langgraph.pregel import Pregel

from neograph_ext.decision._claim import CLAIM, CONTROL, unclaimed
from neograph_ext.decision._decision import HeadStep, PlanKind
from neograph_ext.decision._langgraph import NULL_TASK, delta_channels, head_tasks
from neograph_ext.decision._langgraph_renames import renamed
from neograph_ext.decision._owed import pulled, waiting
from neograph_ext.decision._stamp import Stamp, read_marks

__all__ = [
    "called_namespaces",
    "has_interrupt",
    "head_step",
    "is_paused",
    "output_of",
    "rewind_cut_short",
    "started_input",
    "stored_result",
    "waiting_nodes",
]


def waiting_nodes(graph: Pregel[Any, Any, Any, Any], head: CheckpointTuple) -> frozenset[str]:
    # ``__start__`` counts: a head that is the input checkpoint (a process killed
    # before the first step was saved) still waits to run the whole graph.
    checkpoint = head.checkpoint
    stamp = getattr(graph, "neograph_ext_stamp", None)
    renames = stamp.renames if isinstance(stamp, Stamp) else None
    if renames:  # as LangGraph will run it: with the renamed nodes' new names
        checkpoint = copy_checkpoint(checkpoint)
        renamed(checkpoint, renames)
    return waiting(checkpoint, _triggers(graph), graph.channels)


def head_step(graph: Pregel[Any, Any, Any, Any], head: CheckpointTuple) -> HeadStep | None:
    """The head's own superstep as far as it ran: which of its tasks finished, by task id.

    A task finished when it left an output, whatever it asked or raised before (as
    LangGraph's ``read_task_statuses`` tells it). None when no task left an output, or a
    write's task id is none of the head's tasks (another LangGraph version): then the
    decision counts every task waited on as a writer of what they wrote."""
    writes = [w for w in head.pending_writes or () if w[0] not in (NULL_TASK, CLAIM)]
    done = {task for task, channel, _ in writes if channel not in CONTROL}
    if not done:
        return None
    step = head.metadata.get("step", -1)
    triggers = _triggers(graph)
    due = {name: triggers[name] for name in pulled(head.checkpoint, triggers, graph.channels)}
    tasks = head_tasks(head.checkpoint, step if isinstance(step, int) else -1, due)
    if tasks is None or not {task for task, _, _ in writes} <= tasks.keys():
        return None
    answered = {task for task, channel, _ in writes if channel == "__resume__"} - done
    return HeadStep(
        frozenset(
            (channel, tasks[task])
            for task, channel, _ in unclaimed(head.pending_writes or ())
            if task in done and not channel.startswith(("__", "branch:", "join:"))
        ),
        frozenset(tasks[task] for task in done),
        frozenset(name for task, name in tasks.items() if task not in done),
        frozenset(tasks[task] for task in answered),
        frozenset(tasks[task] for task, channel, _ in writes if channel == "__interrupt__"),
    )


def _triggers(graph: Pregel[Any, Any, Any, Any]) -> Mapping[str, tuple[str, ...]]:
    return {name: tuple(node.triggers) for name, node in graph.nodes.items()}


def started_input(head: CheckpointTuple | None) -> str | None:
    """The digest of the input the head's run started with, where it was recorded."""
    if head is None:
        return None
    return read_marks(head.metadata or {})[1].input


def has_interrupt(head: CheckpointTuple) -> bool:
    return any(channel == "__interrupt__" for _, channel, _ in head.pending_writes or ())


def is_paused(graph: Pregel[Any, Any, Any, Any], head: CheckpointTuple) -> bool:
    """Whether the head waits on a question: an ``interrupt()`` or a static breakpoint."""
    if has_interrupt(head):
        return True
    before = graph.interrupt_before_nodes
    if not before:
        return False
    waits = waiting_nodes(graph, head)
    return bool(waits) and (before == "*" or bool(waits & set(before)))


def rewind_cut_short(graph: Pregel[Any, Any, Any, Any], head: CheckpointTuple | None) -> bool:
    """Whether ``head`` was left by a rewind that did not finish (its process died, or the
    process continuing it did): written under a ``rewind`` run mark, with nodes left to
    run, and not waiting on a question (a rewind that reached one is as far as it goes)."""
    if head is None or read_marks(head.metadata or {})[1].decision != PlanKind.REWIND:
        return False
    return bool(waiting_nodes(graph, head)) and not is_paused(graph, head)


def stored_result(
    graph: Pregel[Any, Any, Any, Any], head: CheckpointTuple | None
) -> tuple[Any] | None:
    """What ``invoke`` returns for a finished head, rebuilt from it as LangGraph rebuilds
    channels from a checkpoint (each channel's ``from_checkpoint``); None when an output
    channel is a ``DeltaChannel``, whose value lives in its ancestors' writes: then only
    LangGraph can rebuild it (``get_state``)."""
    if head is None:
        return None
    channels = graph.output_channels
    names = [channels] if isinstance(channels, str) else list(channels)
    if not delta_channels(graph).keys().isdisjoint(names):
        return None
    stored = head.checkpoint.get("channel_values", {})
    values: dict[str, Any] = {}
    for name in names:
        spec = graph.channels.get(name)
        if name in stored and isinstance(spec, BaseChannel):
            try:
                values[name] = spec.from_checkpoint(stored[name]).get()
            except EmptyChannelError:
                continue
    return (output_of(graph, values),)


def output_of(graph: Pregel[Any, Any, Any, Any], values: Mapping[str, Any]) -> Any:
    """What ``invoke`` returns for a finished checkpoint holding ``values``: its output
    channels."""
    channels = graph.output_channels
    if isinstance(channels, str):
        return values.get(channels)
    return {key: values[key] for key in channels if key in values}


_STOPPED = frozenset({"__interrupt__", "__error__"})
"""The writes of a task that stopped part-way: it asked a question, or raised."""


def called_namespaces(graph: Pregel[Any, Any, Any, Any], head: CheckpointTuple) -> dict[str, str]:
    """Per node the head waits on that stopped part-way and whose stamp describes no
    graph inside it, the namespace (``<node>:<task id>``) under which a graph its code
    called, unseen at compile time, kept its checkpoints (as LangGraph keeps a called
    graph's with a checkpointer): whether one did, only the saver can tell."""
    stamp = getattr(graph, "neograph_ext_stamp", None)
    writes = head.pending_writes or ()
    stopped = sorted({task for task, channel, _ in writes if channel in _STOPPED})
    if not isinstance(stamp, Stamp) or not stopped:
        return {}
    step = head.metadata.get("step", -1)
    triggers = _triggers(graph)
    due = {name: triggers[name] for name in pulled(head.checkpoint, triggers, graph.channels)}
    tasks = head_tasks(head.checkpoint, step if isinstance(step, int) else -1, due) or {}
    found: dict[str, str] = {}
    for task in stopped:
        node = stamp.nodes.get(tasks.get(task, ""))
        if node is not None and not node.sub:
            found[tasks[task]] = f"{tasks[task]}:{task}"
    return found
