"""A node reading a channel whose class the serializer cannot rebuild is handed the
declared type, validated from the stored data.

Rules:
- Only the channels of ``Revival.validated``: their declared type holds a class
  LangGraph's serializer imports but cannot rebuild from its data (a pydantic
  ``RootModel``, revived as ``cls(**data)``), so a value read back from a checkpoint is
  its data. Such a value that does not read back as declared (``_misread.mismatch``)
  and that the declared type validates is handed to the node validated, in memory, on
  every read: nothing is written, so resuming the same checkpoint twice reads the same.
- A value that does not validate is handed as it is: the plan blames it on its writer
  (``_misread``), as for any value that does not read back.
- Set as the node's input mapper (``PregelNode.mapper``, LangGraph's own hook that
  coerces a node's input to a pydantic or dataclass schema, applied only when the task
  executes), composed before a mapper LangGraph set. Checked on langgraph 1.2.24:
  ``tests/integration/test_root_models.py`` fails loudly if nodes stop being handed it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from langgraph.pregel import Pregel
from pydantic import TypeAdapter, ValidationError

from neograph_ext.decision._misread import mismatch
from neograph_ext.decision._validation import adapter

__all__ = ["validating_reads"]


def validating_reads(graph: Pregel[Any, Any, Any, Any], channels: Mapping[str, object]) -> None:
    """Make each node of ``graph`` reading one of ``channels`` (channel -> declared type)
    be handed its stored data validated into the declared type."""
    adapters = {ch: found for ch, tp in channels.items() if (found := adapter(tp)) is not None}
    if not adapters:
        return
    for name, node in graph.nodes.items():
        if name.startswith("__") or not isinstance(node.channels, list):
            continue
        read = {ch: found for ch, found in adapters.items() if ch in node.channels}
        if not read:
            continue
        node.mapper = _Validated(read, {ch: channels[ch] for ch in read}, node.mapper)
        # LangGraph caches a node's input under its mapper: key it by the new one.
        vars(node).pop("input_cache_key", None)


@dataclass(frozen=True, eq=False)  # hashed by identity: LangGraph keys input caches by it
class _Validated:
    """A node's input mapper: the channels' values validated, then LangGraph's own."""

    adapters: Mapping[str, TypeAdapter[Any]]
    types: Mapping[str, object]
    then: Callable[[Any], Any] | None

    def __call__(self, values: dict[str, Any]) -> Any:
        for channel, found in self.adapters.items():
            if channel in values and mismatch(self.types[channel], values[channel]) is not None:
                # One that does not validate is handed as it is; the plan blames its writer.
                with suppress(ValidationError):
                    values = {**values, channel: found.validate_python(values[channel])}
        return values if self.then is None else self.then(values)
