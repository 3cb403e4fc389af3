"""What a script may ask of a compiled graph without running it.

Rules:
- Pure: nothing here reads a checkpoint. What the public calls check of the graph and
  config they are given is ``_thread``'s.
- A stored value is judged as a resume judges it: by the read-back rule (``_misread``),
  then by validating it under its channel's current declared type (``_carrying``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.pregel import Pregel

from neograph_ext.decision._carrying import invalid
from neograph_ext.decision._misread import misread
from neograph_ext.decision._revive import expected
from neograph_ext.drivers._graph import StampedGraph
from neograph_ext.drivers._thread import stamped

__all__ = ["declared_classes", "is_stamped", "stale_values", "unrevivable_types"]


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


def stale_values(graph: Pregel[Any, Any, Any, Any], values: Mapping[str, Any]) -> dict[str, str]:
    """Per stored value the current code would not take as its channel's declared type,
    why: it read back as plain data (a ``dict`` where a class was declared), or it does
    not validate under the type now declared (a field now required is missing).

    Args:
        graph: A graph made by ``neograph_ext.compile``: the current code.
        values: A checkpoint's values as ``graph`` reads them (``get_state(...).values``).

    Returns:
        Per such channel, one sentence; empty when every value is current.

    Raises:
        GraphError: The graph was not compiled by neograph-ext.
    """
    revival = stamped(graph).neograph_ext_revival
    found = misread(revival, values)
    for channel, tp in revival.types.items():
        why = None if channel in found or channel not in values else invalid(tp, values[channel])
        if why is not None:
            found[channel] = f"stored value of `{channel}` does not validate as declared now: {why}"
    return found


def declared_classes(graph: Pregel[Any, Any, Any, Any]) -> frozenset[tuple[str, str]]:
    """The ``(module, name)`` of each class ``graph`` declares whose values its
    checkpoints store by path and that read back as themselves: its state's, its node
    outputs' (a ``response_format`` too), its subgraphs', and those of the graphs its
    nodes' code calls (their checkpoints, under the calling task's namespace, hold them).

    Give them to the saver's serializer as ``JsonPlusSerializer(allowed_msgpack_modules=
    ...)`` and they read back silently, also under ``LANGGRAPH_STRICT_MSGPACK``;
    ``neograph-ext`` reads through them.

    Args:
        graph: A graph made by ``neograph_ext.compile``.

    Raises:
        GraphError: The graph was not compiled by neograph-ext.
    """
    return expected(stamped(graph).neograph_ext_revival)
