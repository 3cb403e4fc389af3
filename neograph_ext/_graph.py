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

import hashlib
import json
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command

from neograph_ext._errors import GraphError
from neograph_ext._langgraph import compile_options, fold_cache_keys
from neograph_ext._stamp import (
    PLAIN_CALL,
    RUN_KEY,
    STAMP_KEY,
    Stamp,
    build_stamp,
    encode_run,
    input_digest,
    stamp_ref,
)
from neograph_ext._stamp_store import asave, save

__all__ = ["StampedGraph", "cache_salts", "compile", "marking"]

_KEEP: Any = object()
"""``compile``'s default checkpointer: none for a builder, its own for a compiled graph."""

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
    builder: StateGraph[Any, Any, Any, Any] | CompiledStateGraph[Any, Any, Any, Any],
    *,
    checkpointer: Any = _KEEP,
    output_types: Mapping[str, object] | None = None,
    versions: Mapping[str, str] | None = None,
    renames: Mapping[str, str] | None = None,
    **compile_kwargs: Any,
) -> StampedGraph:
    """Compile a StateGraph whose checkpoints carry the fingerprints of its types.

    Args:
        builder: Any LangGraph ``StateGraph``, or a graph already compiled from one
            (``builder.compile(...)``, a prebuilt agent such as ``create_react_agent``):
            it is compiled again from its builder with the options it was compiled with,
            and the keywords given here win.
        checkpointer: Passed to ``StateGraph.compile``; ``run`` needs one. ``None``
            suits a subgraph added as a node of a parent graph, and a graph whose
            server injects one. Left out: none, or a compiled graph's own.
        output_types: Per node, the type its results have; overrides the return
            annotation of the node's callable.
        versions: Per node, an opaque string to bump after a prompt or logic change
            that leaves the types alone.
        renames: Old node name -> new name, for nodes that were only renamed: their
            stored results are kept instead of counting as a topology change.
        **compile_kwargs: Every other keyword of ``StateGraph.compile``.

    Returns:
        LangGraph's compiled graph (a ``CompiledStateGraph``); all of its API works
        as usual, and what neograph-ext adds to any metadata is at most 256 bytes.
        Nodes with a ``cache_policy`` get cache keys that include their fingerprint,
        so a result cached by other code is never served.

    Raises:
        ValueError: ``output_types``, ``versions`` or ``renames`` names an unknown node.
        GraphError: ``builder`` is a graph of LangGraph's functional API (``@entrypoint``).
    """
    options: dict[str, Any] = {}
    config: RunnableConfig = {}
    if isinstance(builder, CompiledStateGraph):
        # A copy made by with_config() keeps its config (recursion_limit, tags, ...).
        options, config = compile_options(builder), builder.config or {}
        builder = builder.builder
    elif isinstance(builder, Pregel):
        raise GraphError(
            f"graph {builder.name!r} is built with LangGraph's functional API (@entrypoint), "
            "which neograph-ext does not support yet: build it as a StateGraph, or run it "
            "with LangGraph alone"
        )
    if checkpointer is not _KEEP:
        options["checkpointer"] = checkpointer
    options.update(compile_kwargs)
    stamp = build_stamp(builder, output_types, versions, renames)
    graph = builder.compile(**options)
    fold_cache_keys(graph, cache_salts(stamp))
    # In place, not with_config(): a copy would lose what compile() set afterwards.
    graph.config = {
        **config,
        **(graph.config or {}),
        "metadata": {**_metadata(config), **_metadata(graph.config), STAMP_KEY: stamp_ref(stamp)},
    }
    graph.__class__ = type(
        "StampedGraph",
        (StampedGraph,),
        {
            "__module__": __name__,
            "neograph_ext_stamp": stamp,
            "_neograph_ext_saved": weakref.WeakSet(),
        },
    )
    return graph  # type: ignore[return-value]


def cache_salts(stamp: Stamp) -> dict[str, str]:
    """Per node, what its cache key must include: its fingerprint and every channel's
    (an unannotated node is judged by the channels it writes, which are not known
    before it runs)."""
    channels = json.dumps(stamp.channels, sort_keys=True)
    return {
        name: hashlib.sha256(f"{node.fp}:{channels}".encode()).hexdigest()
        for name, node in stamp.nodes.items()
    }
