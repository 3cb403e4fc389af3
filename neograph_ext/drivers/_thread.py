"""The thread a call works on: its graph, saver and config, checked once.

Rules:
- Every public call on a thread starts here (``thread_call``): a graph compiled by
  neograph-ext, with a checkpointer, and a config that names a thread that is not one
  of neograph-ext's own.
- Configs are never mutated: ``at_checkpoint`` returns a new one.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.pregel import Pregel
from langgraph.types import Command

from neograph_ext.decision._carrying import Carrying, carrying
from neograph_ext.decision._errors import GraphError
from neograph_ext.decision._policy import Asked, LockPolicy, ResumePolicy, resolve
from neograph_ext.decision._stamp import Stamp, input_digest
from neograph_ext.drivers._graph import StampedGraph
from neograph_ext.storage._stamp_store import is_store_thread, reserved

__all__ = [
    "GRAPHS",
    "ThreadCall",
    "at_checkpoint",
    "checkpointer_of",
    "named_checkpoint",
    "stamped",
    "thread_call",
    "thread_of",
    "whole_thread",
]


class ThreadCall(NamedTuple):
    """What one call works on, checked once (``thread_call``)."""

    graph: StampedGraph
    config: RunnableConfig
    """The caller's config: names the thread, and maybe a checkpoint to start from."""
    stamp: Stamp
    """The graph's stamp: the current code's fingerprints."""
    saver: BaseCheckpointSaver[Any]
    thread_id: str
    resume: ResumePolicy = ResumePolicy()
    """What the call does about changes (``_policy.resolve``)."""
    lock: LockPolicy = LockPolicy()
    """How the call waits for the thread's lock."""
    carrying: Carrying = Carrying()
    """``resume``'s ``keep_compatible`` and ``migrations``, per channel of the graph."""
    given: str | None = None
    """The digest of the input the call was given (``_stamp.input_digest``); None for
    none (``None``, a ``Command``) or a call that only plans without one."""
    unmatched: int | None = None
    """For an entrypoint: the position of a call of the head's turn found, as it was
    made, not to match the result cached there (``_call_match``): it and every later
    cached call run again."""


GRAPHS = Asked()
"""What a call that gives no options asks for: the graph's policies."""


def thread_call(
    graph: Pregel[Any, Any, Any, Any],
    config: RunnableConfig,
    asked: Asked = GRAPHS,
    input: Any = None,
) -> ThreadCall:
    """The call on ``config``'s thread with ``graph``, checked, under the policies it was
    ``asked`` for (``_policy.resolve``: the call's own, else the graph's), given
    ``input`` (``ThreadCall.given``).

    Raises:
        GraphError: The graph was not compiled by neograph-ext or has no checkpointer,
            or the config names no thread or a thread reserved for neograph-ext.
    """
    checked = stamped(graph)
    saver, thread_id = checkpointer_of(checked), thread_of(config)
    resume, lock = resolve(asked, checked.neograph_ext_resume, checked.neograph_ext_lock)
    carried = carrying(
        checked.neograph_ext_channel_types, resume.keep_compatible, resume.migrations
    )
    stamp = checked.neograph_ext_stamp
    given = None if input is None or isinstance(input, Command) else input_digest(input)
    return ThreadCall(checked, config, stamp, saver, thread_id, resume, lock, carried, given)


def whole_thread(config: RunnableConfig, namespace: str = "") -> RunnableConfig:
    """The whole root namespace of the thread (or a subgraph's ``namespace``): every
    branch, not one checkpoint."""
    configurable = config.get("configurable") or {}
    return {"configurable": {"thread_id": configurable["thread_id"], "checkpoint_ns": namespace}}


def at_checkpoint(config: RunnableConfig, checkpoint_id: str | None) -> RunnableConfig:
    """``config`` naming ``checkpoint_id``, or (None) the thread's newest checkpoint."""
    configurable = {**(config.get("configurable") or {})}
    configurable.pop("checkpoint_id", None)
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {**config, "configurable": configurable}


def named_checkpoint(config: RunnableConfig) -> str | None:
    """The checkpoint id ``config`` names, if any: a run from there is time travel."""
    named = (config.get("configurable") or {}).get("checkpoint_id")
    return str(named) if named else None


def stamped(graph: Pregel[Any, Any, Any, Any]) -> StampedGraph:
    """``graph``, checked to be one ``compile`` made.

    Raises:
        GraphError: It was compiled by plain LangGraph (or is an ``@entrypoint`` not
            compiled by ``compile``).
    """
    if isinstance(graph, StampedGraph):
        return graph
    raise GraphError(
        "this graph carries no neograph-ext stamp: build it with "
        "neograph_ext.compile(builder, checkpointer=...) instead of builder.compile(...) "
        "(an @entrypoint: neograph_ext.compile(workflow, checkpointer=...))"
    )


def checkpointer_of(graph: Pregel[Any, Any, Any, Any]) -> BaseCheckpointSaver[Any]:
    """The saver ``graph`` reads its checkpoints from.

    Raises:
        GraphError: It has none.
    """
    saver = graph.checkpointer
    if not isinstance(saver, BaseCheckpointSaver):
        raise GraphError(
            "this graph has no checkpointer to resume from: "
            "compile it with neograph_ext.compile(builder, checkpointer=saver)"
        )
    return saver


def thread_of(config: RunnableConfig) -> str:
    """The thread id ``config`` names.

    Raises:
        GraphError: It names none, or a stamp description's (``_stamp_store.reserved``).
    """
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if thread_id is None:
        raise GraphError('config names no thread: pass {"configurable": {"thread_id": "..."}}')
    if is_store_thread(thread_id):
        raise GraphError(reserved(thread_id))
    return str(thread_id)
