"""Which stored classes the command line revives: those GRAPH declares, as LangGraph says.

Rules:
- LangGraph's serializer revives a class named in a checkpoint by importing it and
  calling it. By default it revives any class, with a warning per class ("Deserializing
  unregistered type ..."); given ``allowed_msgpack_modules``, it revives those alone and
  hands back the stored fields of any other (with its "Blocked deserialization" warning).
- Given GRAPH, the command line reads through an allowlist of the classes GRAPH
  declares (its state, input, output and context schemas, each node's input, its
  subgraphs'), computed by LangGraph's own ``build_serde_allowlist``: the list
  ``StateGraph.compile`` applies under ``LANGGRAPH_STRICT_MSGPACK=true``. So the types
  the graph expects read back silently, and a database row cannot make the command line
  call a class the graph does not name.
- Once GRAPH is compiled, its saver also revives the classes neograph-ext finds it
  declares (``neograph_ext.declared_classes``: a ``create_agent``'s ``response_format``,
  held in a channel LangGraph types ``Any``), as the app's ``run`` does.
- Without GRAPH (``threads``, ``history`` without GRAPH), nothing the command line
  prints depends on a stored value: it reads with LangGraph's safe types alone.
- LangGraph's serializer logs nothing on the command line (``--debug`` aside): a class it
  declines to revive is heard as its event (``declined``), and the command says so in
  its own words and result.
- The one place the command line knows LangGraph's private allowlist builder
  (``langgraph._internal._serde``, checked on langgraph 1.2.24, checkpoint 4.3.2); a
  LangGraph without it (1.1, checkpoint 3.0) has no allowlist and no warning either, and
  is read as before. ``tests/cli/test_serde.py`` fails loudly if it moves.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel

from neograph_ext import declared_classes

try:  # LangGraph 1.2; absent from 1.1
    from langgraph._internal._serde import build_serde_allowlist
except ImportError:  # pragma: no cover - exercised on the oldest versions only
    build_serde_allowlist = None  # type: ignore[assignment]
try:  # langgraph-checkpoint 4; 3.0 has no allowlist, so no value is ever declined there
    from langgraph.checkpoint.serde.event_hooks import (
        SerdeEvent,
        emit_serde_event,
        register_serde_event_listener,
    )
except ImportError:  # pragma: no cover - exercised on the oldest versions only
    register_serde_event_listener = None  # type: ignore[assignment]

__all__ = ["Allowlist", "allowlist", "declined", "emit_declined", "reader", "widen"]

Allowlist = frozenset[tuple[str, ...]]


def allowlist(target: object) -> Allowlist | None:
    """The ``(module, class)`` pairs GRAPH declares, as ``StateGraph.compile`` gathers
    them under ``LANGGRAPH_STRICT_MSGPACK``, its subgraphs' included; None when the
    installed LangGraph has no allowlist, or ``target`` is no ``StateGraph`` graph."""
    builder = target.builder if isinstance(target, CompiledStateGraph) else target
    if build_serde_allowlist is None or not isinstance(builder, StateGraph):
        return None
    found: set[tuple[str, ...]] = set()
    _gather(builder, found, set())
    return frozenset(found)


def _gather(
    builder: StateGraph[Any, Any, Any, Any], found: set[tuple[str, ...]], seen: set[int]
) -> None:
    if id(builder) in seen:
        return
    seen.add(id(builder))
    schemas: list[Any] = [builder.state_schema, builder.input_schema, builder.output_schema]
    if builder.context_schema is not None:
        schemas.append(builder.context_schema)
    schemas += [node.input_schema for node in builder.nodes.values()]
    schemas += [
        branch.input_schema
        for branches in builder.branches.values()
        for branch in branches.values()
        if branch.input_schema is not None
    ]
    found |= build_serde_allowlist(schemas=schemas, channels=builder.channels)
    for node in builder.nodes.values():
        if isinstance(node.runnable, CompiledStateGraph):
            _gather(node.runnable.builder, found, seen)


def reader(target: object | None) -> SerializerProtocol | None:
    """The serializer the command line reads with: GRAPH's allowlist, or LangGraph's safe
    types alone without GRAPH (``target`` None); None: LangGraph's default, where the
    installed LangGraph has no allowlist or ``target`` is no ``StateGraph`` graph."""
    expected = allowlist(target) if target is not None else frozenset()
    if build_serde_allowlist is None or expected is None:
        return None
    return JsonPlusSerializer(allowed_msgpack_modules=tuple(sorted(expected)) or None)


def widen(saver: object, graph: Pregel[Any, Any, Any, Any]) -> None:
    """Let ``saver``'s serializer revive the classes ``graph`` declares, too."""
    serde = getattr(saver, "serde", None)
    if isinstance(serde, JsonPlusSerializer):
        saver.serde = serde.with_msgpack_allowlist(declared_classes(graph))  # type: ignore[attr-defined]


@contextmanager
def declined() -> Iterator[set[str]]:
    """The classes LangGraph's serializer declined to revive meanwhile (its events), as
    ``module.name``; it hands back their fields instead."""
    found: set[str] = set()

    def heard(event: SerdeEvent) -> None:
        if event["kind"] == "msgpack_blocked":
            found.add(f"{event['module']}.{event['name']}")

    if register_serde_event_listener is None:
        yield found
        return
    unregister = register_serde_event_listener(heard)
    try:
        yield found
    finally:
        unregister()


def emit_declined(classes: Iterable[str]) -> None:
    """Tell this process's listeners (``declined``) of classes another process's
    serializer declined (``module.name`` each), as that serializer told its own."""
    for path in classes:
        module, _, name = path.rpartition(".")
        emit_serde_event({"kind": "msgpack_blocked", "module": module, "name": name})
