"""The compiled graph ``compile`` returns: LangGraph's own, stamping what it writes.

Rules:
- ``compile`` is ``StateGraph.compile`` plus a stamp: the compiled object is the one
  LangGraph built, its class swapped for a subclass that carries the stamp. Nothing
  is copied, so whatever LangGraph sets on a compiled graph (today or in a later
  version) stays; ``copy`` and ``with_config`` keep the class, so the stamp survives
  them and a checkpointer injected at run time (a server, a parent graph).
- Every checkpoint the graph writes carries its own stamp reference, whatever a
  caller or an enclosing graph put into the config's metadata.
- Before the graph first writes through a saver, the stamp's description is stored
  there (``_stamp_store``), once per saver.
- The run mark (``_stamp.RUN_KEY``) comes from ``run()``, through a context variable
  bound to the stamp it was made for, or else from the graph itself, recording only
  the digest of the input a plain call starts with: a caller's metadata cannot forge
  a mark, and a graph invoked inside a node of a run does not inherit one.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from neograph_ext._migrate import Carrying, Migration, carrying
from neograph_ext._stamp import (
    PLAIN_CALL,
    RUN_KEY,
    STAMP_KEY,
    Stamp,
    _channel_types,
    build_stamp,
    encode_run,
    input_digest,
    stamp_ref,
)
from neograph_ext._stamp_store import asave, save

__all__ = ["StampedGraph", "compile", "marking"]

_RUN_MARK: ContextVar[tuple[str, str] | None] = ContextVar("neograph_ext_run_mark", default=None)
"""``(stamp id, run mark)`` while ``run()`` invokes a graph of that stamp."""


class StampedGraph(CompiledStateGraph[Any, Any, Any, Any]):
    """A LangGraph compiled graph whose checkpoints carry its stamp.

    ``compile`` makes one subclass per compiled graph, holding that graph's stamp.
    """

    neograph_ext_stamp: ClassVar[Stamp]
    """The fingerprints of this graph's types."""
    _neograph_ext_saved: ClassVar[weakref.WeakSet[BaseCheckpointSaver[Any]]]
    """Savers already holding the stamp's description, in this process."""
    neograph_ext_carrying: ClassVar[Carrying] = Carrying()
    """Which stored values may be kept or migrated instead of re-running their nodes."""

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """LangGraph's ``stream``, stamped; ``invoke`` goes through it."""
        saver = self._unsaved()
        if saver is not None:
            save(saver, self.neograph_ext_stamp)
            self._neograph_ext_saved.add(saver)
        yield from super().stream(input, self._stamped(input, config), **kwargs)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """LangGraph's ``astream``, stamped; ``ainvoke`` and event streams go through it."""
        saver = self._unsaved()
        if saver is not None:
            await asave(saver, self.neograph_ext_stamp)
            self._neograph_ext_saved.add(saver)
        async for chunk in super().astream(input, self._stamped(input, config), **kwargs):
            yield chunk

    def _unsaved(self) -> BaseCheckpointSaver[Any] | None:
        saver = self.checkpointer
        if isinstance(saver, BaseCheckpointSaver) and saver not in self._neograph_ext_saved:
            return saver
        return None

    def _stamped(self, input: Any, config: RunnableConfig | None) -> RunnableConfig:
        stamp = self.neograph_ext_stamp
        metadata: dict[str, Any] = {STAMP_KEY: stamp_ref(stamp)}
        mark = _RUN_MARK.get()
        given = None if input is None or isinstance(input, Command) else input_digest(input)
        if mark is not None and mark[0] == stamp.id:
            metadata[RUN_KEY] = mark[1]
        elif given is not None:
            metadata[RUN_KEY] = encode_run(stamp, PLAIN_CALL, given)
        elif RUN_KEY in _metadata(config) or RUN_KEY in _metadata(var_child_runnable_config.get()):
            metadata[RUN_KEY] = ""  # not ours to carry: blank it rather than pass it on
        merged: RunnableConfig = {**(config or {})}
        merged["metadata"] = {**_metadata(config), **metadata}
        return merged


def _metadata(config: RunnableConfig | None) -> dict[str, Any]:
    return dict((config or {}).get("metadata") or {})


@contextmanager
def marking(stamp: Stamp, mark: str) -> Iterator[None]:
    """Within the block, invocations of graphs of ``stamp`` write ``mark`` as run mark."""
    token = _RUN_MARK.set((stamp.id, mark))
    try:
        yield
    finally:
        _RUN_MARK.reset(token)


def compile(
    builder: StateGraph[Any, Any, Any, Any],
    *,
    checkpointer: Any = None,
    output_types: Mapping[str, object] | None = None,
    versions: Mapping[str, str] | None = None,
    keep_compatible: bool | Iterable[type | str] = False,
    migrations: Mapping[type | str, Migration] | None = None,
    **compile_kwargs: Any,
) -> StampedGraph:
    """Compile a StateGraph whose checkpoints carry the fingerprints of its types.

    Args:
        builder: Any LangGraph ``StateGraph``.
        checkpointer: Passed to ``StateGraph.compile``; ``run`` needs one. ``None``
            suits a subgraph added as a node of a parent graph, and a graph whose
            server injects one.
        output_types: Per node, the type its results have; overrides the return
            annotation of the node's callable.
        versions: Per node, an opaque string to bump after a prompt or logic change
            that leaves the types alone.
        keep_compatible: True, or the types and channel names it covers: when such a
            channel's type changed and its live stored value still validates under the
            new type, the value is kept (converted) instead of re-running its node.
        migrations: Per type or channel name, a function from the stored value (a
            model instance or a plain dict) to a value of the new type, applied to the
            live stored value instead of re-running its node.
        **compile_kwargs: Every other keyword of ``StateGraph.compile``.

    Returns:
        LangGraph's compiled graph (a ``CompiledStateGraph``); all of its API works
        as usual, and what neograph-ext adds to any metadata is at most 256 bytes.

    Raises:
        ValueError: ``output_types`` or ``versions`` names an unknown node, or
            ``keep_compatible`` or ``migrations`` an unknown channel or type.
    """
    stamp = build_stamp(builder, output_types, versions)
    carried = carrying(_channel_types(builder), keep_compatible, migrations)
    graph = builder.compile(checkpointer=checkpointer, **compile_kwargs)
    # In place, not with_config(): a copy would lose what compile() set afterwards.
    graph.config = {
        **(graph.config or {}),
        "metadata": {**_metadata(graph.config), STAMP_KEY: stamp_ref(stamp)},
    }
    graph.__class__ = type(
        "StampedGraph",
        (StampedGraph,),
        {
            "__module__": __name__,
            "neograph_ext_stamp": stamp,
            "neograph_ext_carrying": carried,
            "_neograph_ext_saved": weakref.WeakSet(),
        },
    )
    return graph  # type: ignore[return-value]
