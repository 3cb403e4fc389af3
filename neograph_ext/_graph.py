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
- ``compile(auto_resume=True | False)`` makes every plain root call (``invoke``,
  ``stream``, their async twins, event streams, and so a server's runs) plan first,
  exactly as ``run`` does (``False``: strict). The option lives on the per-compile
  class, since ``copy`` (how a server injects its checkpointer) rebuilds the graph
  through its constructor, which drops unknown keywords. A call ``run`` makes, a
  subgraph call and a call without a thread or saver stay plain.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, var_child_runnable_config
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

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

__all__ = ["StampedGraph", "compile", "marking"]

_RUN_MARK: ContextVar[tuple[str, str] | None] = ContextVar("neograph_ext_run_mark", default=None)
"""``(stamp id, run mark)`` while ``run()`` invokes a graph of that stamp."""


class StampedGraph(CompiledStateGraph[Any, Any, Any, Any]):
    """A LangGraph compiled graph whose checkpoints carry its stamp.

    ``compile`` makes one subclass per compiled graph, holding that graph's stamp.
    """

    neograph_ext_stamp: ClassVar[Stamp]
    """The fingerprints of this graph's types."""
    neograph_ext_auto_resume: ClassVar[bool | None] = None
    """``compile(auto_resume=...)``: None leaves plain calls plain; True or False plans
    them as ``run(auto_resume=...)`` does."""
    _neograph_ext_saved: ClassVar[weakref.WeakSet[BaseCheckpointSaver[Any]]]
    """Savers already holding the stamp's description, in this process."""

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """LangGraph's ``stream``, stamped; ``invoke`` goes through it."""
        if self._resumes(config):
            from neograph_ext._run import served  # here, not above: _run imports this module

            yield from served(self, input, config or {}, kwargs)
            return
        saver = self._unsaved()
        if saver is not None:
            save(saver, self.neograph_ext_stamp)
            self._neograph_ext_saved.add(saver)
        yield from super().stream(input, self._stamped(input, config), **kwargs)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """LangGraph's ``astream``, stamped; ``ainvoke`` and event streams go through it."""
        if self._resumes(config):
            from neograph_ext._run import aserved  # here, not above: _run imports this module

            async for chunk in aserved(self, input, config or {}, kwargs):
                yield chunk
            return
        saver = self._unsaved()
        if saver is not None:
            await asave(saver, self.neograph_ext_stamp)
            self._neograph_ext_saved.add(saver)
        async for chunk in super().astream(input, self._stamped(input, config), **kwargs):
            yield chunk

    def _resumes(self, config: RunnableConfig | None) -> bool:
        """Whether this call plans first: ``auto_resume`` is set and it is a root call
        of a thread on a saver that ``run`` did not make itself."""
        if self.neograph_ext_auto_resume is None:
            return False
        mark = _RUN_MARK.get()
        if mark is not None and mark[0] == self.neograph_ext_stamp.id:
            return False  # run() planned this call already
        # A call inside a node (a subgraph) inherits its task's namespace.
        nested = ensure_config(config).get("configurable", {}).get("checkpoint_ns")
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        return (
            not nested and thread is not None and isinstance(self.checkpointer, BaseCheckpointSaver)
        )

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
    auto_resume: bool | None = None,
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
        auto_resume: ``None`` (default): plain calls behave as LangGraph's, stamped
            only; resume through ``run``. ``True``: every plain root call (``invoke``,
            ``stream``, ``ainvoke``, ``astream``, ``astream_events``; so every run a
            LangGraph server makes) plans and rewinds as ``run`` does, with
            ``durability="sync"`` forced. ``False``: the same, strict: a change raises
            ``CheckpointSchemaError`` before any node runs.
        **compile_kwargs: Every other keyword of ``StateGraph.compile``.

    Returns:
        LangGraph's compiled graph (a ``CompiledStateGraph``); all of its API works
        as usual, and what neograph-ext adds to any metadata is at most 256 bytes.

    Raises:
        ValueError: ``output_types`` or ``versions`` names an unknown node.
    """
    stamp = build_stamp(builder, output_types, versions)
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
            "neograph_ext_auto_resume": auto_resume,
            "_neograph_ext_saved": weakref.WeakSet(),
        },
    )
    return graph  # type: ignore[return-value]
