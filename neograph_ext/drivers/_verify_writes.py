"""``WriteChecks(readback=True)``: every value a node writes is round-tripped through
its checkpointer's own serializer as it is written.

Rules:
- The check runs inside the node's task, first among its writers: a difference raises
  ``WriteReadbackError`` there, so the step fails at once and none of that task's
  writes is taken or saved. (A check in the saver's ``put_writes`` would come too late:
  LangGraph saves writes in the background while the next step runs.)
- It uses the serializer of the checkpointer the graph runs with, so also one injected
  at run time; the checkpointer itself is left as it is.
- ``RunnableCallable`` is LangGraph's own untraced runnable (``langgraph._internal``,
  checked on langgraph 1.2.24): a verified graph's traces and events stay as they were.
- A value not of the type its node declares is logged by every stamped graph
  (``_written_types``); with this check on, the items it holds are judged too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from langgraph._internal._runnable import RunnableCallable
from langgraph.pregel import Pregel
from langgraph.types import Command
from pydantic import BaseModel

from neograph_ext.decision._errors import WriteReadbackError

__all__ = ["verifying"]


def verifying(graph: Pregel[Any, Any, Any, Any], channels: frozenset[str]) -> None:
    """Make every node of ``graph`` check what it returns before its writes are taken.

    Each value a node writes to a state channel is round-tripped through the serializer
    of the graph's checkpointer (the one it runs with, so also one injected at run time):
    the first that would read back as something else raises ``WriteReadbackError`` in
    the node's task, so the step fails at once and none of that task's writes is saved.
    """
    for name, node in graph.nodes.items():
        if name.startswith("__"):
            continue
        check = _Check(graph, name, channels)
        node.writers.insert(0, RunnableCallable(check, name="verify_writes", trace=False))
        for cached in ("flat_writers", "node"):  # built from ``writers``: build them again
            vars(node).pop(cached, None)


@dataclass(frozen=True)
class _Check:
    """What ``verifying`` runs on a node's output; returns it unchanged."""

    graph: Pregel[Any, Any, Any, Any]
    node: str
    channels: frozenset[str]

    def __call__(self, output: Any) -> Any:
        serde = getattr(self.graph.checkpointer, "serde", None)
        for channel, value in _written(output):
            if channel not in self.channels:
                continue
            if serde is None:
                continue
            diff = _difference(value, serde.loads_typed(serde.dumps_typed(value)))
            if diff is not None:
                raise WriteReadbackError(
                    f"node `{self.node}` wrote to channel `{channel}` a value that does not "
                    f"read back from the checkpoint as written: {diff}; the step failed "
                    "before its writes were saved. A resume would hand the next node that "
                    "instead. Fix: define the class at the top level of an importable "
                    "module (under LANGGRAPH_STRICT_MSGPACK, also declare it in the state "
                    "schema), or write plain data"
                )
        return output


def _written(output: Any) -> Iterator[tuple[str, Any]]:
    """The ``(channel, value)`` updates a node's output makes, as LangGraph reads them: a
    mapping's items, a model's or dataclass's fields, a ``Command``'s update, a list of
    those."""
    if isinstance(output, Command):
        output = output.update
    if isinstance(output, list | tuple) and not isinstance(output, str):
        for item in output:
            if isinstance(item, Mapping | BaseModel | Command):
                yield from _written(item)
        return
    if isinstance(output, Mapping):
        yield from ((k, v) for k, v in output.items() if isinstance(k, str))
    elif isinstance(output, BaseModel):
        yield from ((k, getattr(output, k)) for k in output.model_fields_set)
    elif dataclasses.is_dataclass(output) and not isinstance(output, type):
        yield from ((f.name, getattr(output, f.name)) for f in dataclasses.fields(output))


def _difference(written: object, back: object, depth: int = 0) -> str | None:
    """How ``back`` differs from ``written``: a class revived as another (``Draft`` came
    back as ``dict``), or a value that changed; None when it reads back as written.

    msgpack has one sequence type, so a tuple that reads back as a list of the same items
    counts as read back.
    """
    if isinstance(written, tuple) and not hasattr(written, "_fields") and isinstance(back, list):
        back = tuple(back)
    if type(written) is not type(back):
        return f"{type(written).__name__} came back as {type(back).__name__}"
    if depth > 50:
        return None
    if isinstance(written, Mapping) and isinstance(back, Mapping):
        for key, item in written.items():
            if key not in back:
                return f"key {key!r} came back missing"
            found = _difference(item, back[key], depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(written, list | tuple) and isinstance(back, list | tuple):
        for item, other in zip(written, back, strict=False):
            found = _difference(item, other, depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(written, BaseModel) and isinstance(back, BaseModel):
        for key in type(written).model_fields:
            found = _difference(getattr(written, key, None), getattr(back, key, None), depth + 1)
            if found is not None:
                return found
        return None
    if type(written).__eq__ is object.__eq__:
        return None  # identity equality: a revived copy is never equal, nor wrong
    try:
        return None if written == back else f"{type(written).__name__} came back changed"
    except Exception:
        return None
