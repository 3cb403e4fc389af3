"""What a script may ask of a compiled graph without running it.

Rules:
- Pure: nothing here reads a checkpoint. What the public calls check of the graph and
  config they are given is ``_thread``'s.
"""

from __future__ import annotations

from typing import Any

from langgraph.pregel import Pregel

from neograph_ext._graph import StampedGraph
from neograph_ext._thread import stamped

__all__ = ["is_stamped", "unrevivable_types"]


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
    ``ResumePolicy(on_change="raise")``): LangGraph's serializer would hand a resumed node a plain
    ``dict`` instead. ``neograph-ext check`` fails on any.

    Args:
        graph: A graph made by ``neograph_ext.compile``.

    Returns:
        One description per such class; empty when every declared type reads back.

    Raises:
        GraphError: The graph was not compiled by neograph-ext.
    """
    return tuple(f.describe() for f in stamped(graph).neograph_ext_revival.findings)
