"""What the public entry points check of the graph and config they are given, and what
a script may ask of a compiled graph without running it.

Rules:
- A graph is usable when ``compile`` made it (it carries a stamp) and it has a
  checkpointer; a config when it names a thread that is not a stamp description's.
  Each failure is a ``GraphError`` saying what to pass instead.
- Pure: nothing here reads a checkpoint.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel

from neograph_ext._errors import GraphError
from neograph_ext._graph import StampedGraph
from neograph_ext._stamp_store import is_store_thread, reserved

__all__ = ["checkpointer_of", "is_stamped", "stamped", "thread_of", "unrevivable_types"]


def is_stamped(graph: object) -> bool:
    """Whether ``graph`` was made by ``neograph_ext.compile`` and so stamps its checkpoints.

    A graph compiled by plain LangGraph (``builder.compile()``) carries no fingerprints:
    ``run``, ``plan``, ``accept`` and ``history`` refuse it. ``copy()`` and
    ``with_config()`` of a stamped graph are stamped too.

    Args:
        graph: Anything; a compiled graph, usually.

    Returns:
        True for a graph ``neograph_ext.compile`` made, False for anything else.
    """
    return isinstance(graph, StampedGraph)


def unrevivable_types(graph: Pregel[Any, Any, Any, Any]) -> tuple[str, ...]:
    """The declared classes of ``graph`` whose stored values will not read back from a
    checkpoint as themselves, one paragraph each: the class, what declares it, why, and
    the fix.

    These are what ``compile`` logs a warning about (and refuses with
    ``auto_resume=False``): LangGraph's serializer would hand a resumed node a plain
    ``dict`` instead. ``neograph-ext check`` fails on any.

    Args:
        graph: A graph made by ``neograph_ext.compile``.

    Returns:
        One description per such class; empty when every declared type reads back.

    Raises:
        GraphError: The graph was not compiled by neograph-ext.
    """
    return tuple(f.describe() for f in stamped(graph).neograph_ext_revival.findings)


def stamped(graph: Pregel[Any, Any, Any, Any]) -> StampedGraph:
    """``graph``, checked to be one ``compile`` made.

    Raises:
        GraphError: It was compiled by plain LangGraph or is a functional-API graph.
    """
    if isinstance(graph, StampedGraph):
        return graph
    if not isinstance(graph, CompiledStateGraph):
        raise GraphError(
            "this graph is built with LangGraph's functional API (@entrypoint), which "
            "neograph-ext does not support yet: build it as a StateGraph"
        )
    raise GraphError(
        "this graph carries no neograph-ext stamp: build it with "
        "neograph_ext.compile(builder, checkpointer=...) instead of builder.compile(...)"
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
