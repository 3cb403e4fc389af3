"""A node that writes a value of another type than it declares: logged once per node.

A node's fingerprint covers the output type it declares (``output_types``, else its
return annotation), not what it returns. A node annotated ``-> Reply`` that returns
``{"draft": {...}}`` where ``Reply.draft`` is a ``Draft`` gets a stamp describing a
``Draft``: a later change of ``Draft`` rewinds it, a change of what it really writes
does not.

Rules:
- Every stamped graph checks, not only with ``WriteChecks.readback``: the check sees the updates
  LangGraph itself reads from the node's output, in the node's task, through the mapper
  of the writer ``StateGraph.compile`` gave the node (``_langgraph.watch_updates``): no
  runnable, trace, event, write or checkpoint is added, and a plain call behaves as
  LangGraph's.
- Only nodes that declare per-key types (a TypedDict, model, dataclass or NamedTuple
  output) are watched, only those keys, and not the keys of a pydantic state schema
  (validated into their types when read). A value is judged by its class alone
  (``_misread.class_mismatch``, one cached lookup); with ``readback`` also by the
  items it holds (``_misread.mismatch``, as the resume check judges stored values), on
  keys that store what is written (``LastValue``): a reducer's update (a message, a
  tuple for ``add_messages``) is not its channel's value. ``Overwrite`` is unwrapped.
- Logged once per node of a compiled graph and its copies (``with_config``, a server's
  injected checkpointer) in a process; after that the node's writes are not looked at.
- It never raises: a wrong annotation is the user's to fix, and the value itself is
  stored as LangGraph stores it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph.channels.last_value import LastValue
from langgraph.pregel import Pregel
from langgraph.types import Overwrite

from neograph_ext.decision._langgraph import watch_updates
from neograph_ext.decision._misread import class_mismatch, mismatch
from neograph_ext.decision._revive import declared_fields

__all__ = ["watching"]

logger = logging.getLogger("neograph_ext")

_Judge = Callable[[object, object], "tuple[str, str] | None"]
"""``(declared, found)`` type names where a value is not of a type, or None."""


def watching(
    graph: Pregel[Any, Any, Any, Any],
    outputs: Mapping[str, object],
    coerced: frozenset[str],
    deep: bool,
) -> None:
    """Make each node of ``graph`` that declares per-key output types log, once, a value
    it writes to such a key that is not of the declared type.

    Args:
        graph: The freshly compiled graph (changed in place).
        outputs: Each node's declared output type.
        coerced: The keys of a pydantic state schema: never judged.
        deep: Judge the items a value holds too (``WriteChecks.readback``), not only its class.
    """
    declared: dict[str, dict[str, tuple[object, _Judge]]] = {}
    for node, key, tp in declared_fields(outputs):
        if key not in coerced:
            stores = type(graph.channels.get(key)) is LastValue
            declared.setdefault(node, {})[key] = (
                tp,
                mismatch if deep and stores else class_mismatch,
            )
    watch_updates(graph, {node: _Watch(node, keys) for node, keys in declared.items()})


class _Watch:
    """What one node's writer shows the updates it takes; logs the first mismatch."""

    __slots__ = ("_done", "_keys", "_lock", "_node")

    def __init__(self, node: str, keys: Mapping[str, tuple[object, _Judge]]) -> None:
        self._node = node
        self._keys = keys
        self._done = False
        self._lock = threading.Lock()  # parallel tasks of one node (Send) log it once

    def __call__(self, updates: Sequence[tuple[str, Any]]) -> None:
        if self._done:
            return
        for key, value in updates:
            if key not in self._keys:
                continue
            tp, judge = self._keys[key]
            try:
                miss = judge(tp, value.value if isinstance(value, Overwrite) else value)
            except Exception:  # a diagnostic must never fail the node's task
                miss = None
            if miss is None:
                continue
            with self._lock:
                if self._done:
                    return
                self._done = True
            logger.warning(
                "node `%s` declares `%s` for `%s` but wrote a `%s`: the fingerprint stamped "
                "for it describes the declared type, not what is stored; fix the annotation "
                "(or output_types) or the value (logged once per node and process)",
                self._node,
                miss[0],
                key,
                miss[1],
            )
            return
