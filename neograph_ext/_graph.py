"""The compiled graph ``compile`` returns: LangGraph's own, stamping what it writes.

Rules:
- ``compile`` is ``StateGraph.compile`` plus a stamp: the compiled object is the one
  LangGraph built, its class swapped for a subclass that carries the stamp. Nothing
  is copied, so whatever LangGraph sets on a compiled graph (today or in a later
  version) stays; ``copy`` and ``with_config`` keep the class, so the stamp survives
  them and a checkpointer injected at run time (a server, a parent graph).
- Every checkpoint the graph writes carries its own stamp reference, whatever a
  caller or an enclosing graph put into the config's metadata.
- The stamp's description is stored in each saver the graph writes to, once per saver
  and process (``_stamp_store``): by ``run()`` before it invokes, by a plain call when
  it ends (see ``StampedGraph._unsaved`` for why not before).
- The run mark (``_stamp.RUN_KEY``) comes from ``run()``, through a context variable
  bound to the stamp it was made for, or else from the graph itself, recording only
  the digest of the input a plain call starts with: a caller's metadata cannot forge
  a mark, and a graph invoked inside a node of a run does not inherit one.
- ``compile(auto_resume=True)`` makes every plain root call (``invoke``,
  ``stream``, their async twins, event streams, and so a server's runs) plan first,
  exactly as ``run`` does, under the graph's whole ``ResumePolicy`` and ``LockPolicy``.
  The policies live on the per-compile class, since ``copy`` (how a server injects
  its checkpointer) rebuilds the graph through its constructor, which drops unknown
  keywords. A call ``run`` makes, a
  subgraph call and a call without a thread or saver stay plain.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import aclosing
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, ClassVar, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, var_child_runnable_config
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command

from neograph_ext._carrying import carrying
from neograph_ext._errors import GraphError
from neograph_ext._introspect import build_stamp, channel_types
from neograph_ext._langgraph import compile_options, fold_cache_keys
from neograph_ext._policy import LockPolicy, ResumePolicy, asked, resolve
from neograph_ext._revive import Revival, allowed_pairs, declared, report, revival
from neograph_ext._stamp import (
    PLAIN_CALL,
    RUN_KEY,
    STAMP_KEY,
    Stamp,
    Stamped,
    encode_run,
    input_digest,
    stamp_ref,
)
from neograph_ext._stamp_store import asave, save
from neograph_ext._stamp_store import averify as acheck_saver
from neograph_ext._stamp_store import verify as check_saver
from neograph_ext._verify_writes import verifying
from neograph_ext._written_types import watching

__all__ = ["StampedGraph", "cache_salts", "compile", "marking"]

_KEEP: Any = object()
"""``compile``'s default checkpointer: none for a builder, its own for a compiled graph."""

_RUN_MARK: ContextVar[tuple[str, str] | None] = ContextVar("neograph_ext_run_mark", default=None)
"""``(stamp id, run mark)`` while ``run()`` invokes a graph of that stamp."""


class StampedGraph(CompiledStateGraph[Any, Any, Any, Any], Stamped):
    """A LangGraph compiled graph whose checkpoints carry its stamp.

    ``compile`` makes one subclass per compiled graph, holding that graph's stamp.
    """

    neograph_ext_stamp: ClassVar[Stamp]
    """The fingerprints of this graph's types."""
    neograph_ext_resume: ClassVar[ResumePolicy] = ResumePolicy()
    """``compile(resume=...)``: the policy of a ``run`` or ``plan`` that gives none."""
    neograph_ext_lock: ClassVar[LockPolicy] = LockPolicy()
    """``compile(lock=...)``: the policy of a ``run`` (or a plain call) that gives none."""
    neograph_ext_auto_resume: ClassVar[ResumePolicy | None] = None
    """The policy every plain root call plans with: ``compile(auto_resume=True)``'s
    ``resume`` (0.2's ``compile(auto_resume=False)``: it, strict, while ``run`` still
    rewinds); None leaves plain calls plain."""
    _neograph_ext_saved: ClassVar[weakref.WeakSet[BaseCheckpointSaver[Any]]]
    """Savers already holding the stamp's description, in this process."""
    _neograph_ext_described: ClassVar[
        weakref.WeakKeyDictionary[BaseCheckpointSaver[Any], dict[str, Stamp]]
    ]
    """Per saver, the stamp descriptions already found in it, in this process."""
    neograph_ext_channel_types: ClassVar[Mapping[str, object]] = {}
    """Each state channel's annotated type: what a call's ``keep_compatible`` and
    ``migrations`` are resolved against (``_migrate.carrying``)."""
    neograph_ext_revival: ClassVar[Revival] = Revival()
    """The declared types, and which of them cannot read back from a checkpoint."""
    neograph_ext_verify_saver: ClassVar[bool] = True
    """``compile(verify_saver=...)``: whether ``run`` checks that the saver keeps the stamp."""

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """LangGraph's ``stream``, stamped; ``invoke`` goes through it."""
        if self._resumes(config):
            from neograph_ext._run import served  # here, not above: _run imports this module

            yield from served(self, input, config or {}, kwargs)
            return
        yield from self.neograph_ext_plain_stream(input, config, kwargs)

    def neograph_ext_plain_stream(
        self,
        input: Any,
        config: RunnableConfig | None,
        kwargs: Mapping[str, Any],
        saver: BaseCheckpointSaver[Any] | None = None,
    ) -> Iterator[Any]:
        """LangGraph's ``stream``, stamped, never planned: what a plain call does when
        the graph does not resume, or when its plan leaves LangGraph nothing to change
        (then ``saver``: where to store the description afterwards, as a plain call
        does, although the call carries a run mark)."""
        stamped = self._stamped(input, config)
        saver = saver or self._unsaved()
        if saver is None:
            yield from super().stream(input, stamped, **kwargs)
            return
        try:
            yield from super().stream(input, stamped, **kwargs)
        except Exception:
            self.neograph_ext_save(saver, verify=False)  # a crashed run gets resumed
            raise
        self.neograph_ext_save(saver, verify=False)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """LangGraph's ``astream``, stamped; ``ainvoke`` and event streams go through it."""
        if self._resumes(config):
            from neograph_ext._run import aserved  # here, not above: _run imports this module

            async with aclosing(aserved(self, input, config or {}, kwargs)) as served_chunks:
                async for chunk in served_chunks:
                    yield chunk
            return
        async with aclosing(self.neograph_ext_plain_astream(input, config, kwargs)) as plain:
            async for chunk in plain:
                yield chunk

    async def neograph_ext_plain_astream(
        self,
        input: Any,
        config: RunnableConfig | None,
        kwargs: Mapping[str, Any],
        saver: BaseCheckpointSaver[Any] | None = None,
    ) -> AsyncGenerator[Any, None]:
        """Async twin of ``neograph_ext_plain_stream``."""
        stamped = self._stamped(input, config)
        saver = saver or self._unsaved()
        # aclosing: a consumer that stops early must close LangGraph's stream at once,
        # which cancels its running tasks, as it would without this wrapper.
        inner = cast("AsyncGenerator[Any, None]", super().astream(input, stamped, **kwargs))
        async with aclosing(inner) as chunks:
            if saver is None:
                async for chunk in chunks:
                    yield chunk
                return
            try:
                async for chunk in chunks:
                    yield chunk
            except Exception:
                await self.neograph_ext_asave(saver, verify=False)
                raise
        await self.neograph_ext_asave(saver, verify=False)

    def neograph_ext_save(self, saver: BaseCheckpointSaver[Any], *, verify: bool = True) -> None:
        """Store the stamp's description in ``saver``, once per saver and process, and
        (``verify``, unless compiled with ``verify_saver=False``) check that the saver
        keeps the stamp, once per saver class and process.

        A plain call does not verify: it stores the description after LangGraph's own
        writes, and a drop-in raises nothing LangGraph would not. ``run`` verifies
        before it invokes.

        Raises:
            StampLostError: The saver drops the config metadata the stamp rides in.
        """
        if saver not in self._neograph_ext_saved:
            save(saver, self.neograph_ext_stamp)
            self._neograph_ext_saved.add(saver)
        if verify and self.neograph_ext_verify_saver:
            check_saver(saver, self.neograph_ext_stamp)

    async def neograph_ext_asave(
        self, saver: BaseCheckpointSaver[Any], *, verify: bool = True
    ) -> None:
        """Async twin of ``neograph_ext_save``."""
        if saver not in self._neograph_ext_saved:
            await asave(saver, self.neograph_ext_stamp)
            self._neograph_ext_saved.add(saver)
        if verify and self.neograph_ext_verify_saver:
            await acheck_saver(saver, self.neograph_ext_stamp)

    def neograph_ext_described(self, saver: BaseCheckpointSaver[Any]) -> dict[str, Stamp]:
        """The stamp descriptions found in ``saver`` so far, by id (filled by planning)."""
        return self._neograph_ext_described.setdefault(saver, {})

    def _resumes(self, config: RunnableConfig | None) -> bool:
        """Whether this call plans first: ``auto_resume`` is set and it is a root call
        of a thread on a saver that ``run`` did not make itself."""
        if self.neograph_ext_auto_resume is None:
            return False
        if self._run_mark() is not None:
            return False  # run() planned this call already
        # A call inside a node (a subgraph) inherits its task's namespace.
        nested = ensure_config(config).get("configurable", {}).get("checkpoint_ns")
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        return (
            not nested and thread is not None and isinstance(self.checkpointer, BaseCheckpointSaver)
        )

    def _run_mark(self) -> str | None:
        """The run mark ``run()`` set for this call, if ``run()`` is invoking this graph."""
        mark = _RUN_MARK.get()
        return mark[1] if mark is not None and mark[0] == self.neograph_ext_stamp.id else None

    def _unsaved(self) -> BaseCheckpointSaver[Any] | None:
        """The saver a plain call writes to, when its description still has to be stored.

        A plain call stores it after the run, ended or crashed: storing it first would be
        one more write before LangGraph's own, which a drop-in must not add (a run that
        is cancelled or killed before then leaves its checkpoints explained by nothing,
        and a later plan counts them as changed). ``run()`` stores it before invoking.
        """
        saver = self.checkpointer
        if self._run_mark() is not None:
            return None
        if isinstance(saver, BaseCheckpointSaver) and saver not in self._neograph_ext_saved:
            return saver
        return None

    def _stamped(self, input: Any, config: RunnableConfig | None) -> RunnableConfig:
        stamp = self.neograph_ext_stamp
        metadata: dict[str, Any] = {STAMP_KEY: stamp_ref(stamp)}
        mark = self._run_mark()
        given = None if input is None or isinstance(input, Command) else input_digest(input)
        if mark is not None:
            metadata[RUN_KEY] = mark
        elif given is not None:
            metadata[RUN_KEY] = encode_run(stamp, PLAIN_CALL, given)
        elif RUN_KEY in _metadata(config) or RUN_KEY in _metadata(var_child_runnable_config.get()):
            metadata[RUN_KEY] = ""  # not ours to carry: blank it rather than pass it on
        merged: RunnableConfig = {**(config or {})}
        merged["metadata"] = {**_metadata(config), **metadata}
        return merged


def _metadata(config: RunnableConfig | None) -> dict[str, Any]:
    return dict((config or {}).get("metadata") or {})


class marking:
    """Within the block, invocations of graphs of ``stamp`` write ``mark`` as run mark.

    A class, not a generator: every invocation of ``run`` enters one.
    """

    __slots__ = ("_mark", "_token")

    def __init__(self, stamp: Stamp, mark: str) -> None:
        self._mark = (stamp.id, mark)

    def __enter__(self) -> None:
        self._token = _RUN_MARK.set(self._mark)

    def __exit__(self, *exc: object) -> None:
        _RUN_MARK.reset(self._token)


def compile(
    builder: StateGraph[Any, Any, Any, Any] | CompiledStateGraph[Any, Any, Any, Any],
    *,
    checkpointer: Any = _KEEP,
    output_types: Mapping[str, object] | None = None,
    versions: Mapping[str, str] | None = None,
    renames: Mapping[str, str] | None = None,
    auto_resume: bool | None = None,
    resume: ResumePolicy | None = None,
    lock: LockPolicy | None = None,
    verify_writes: bool = False,
    verify_saver: bool = True,
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
        auto_resume: Left out: plain calls behave as LangGraph's, stamped only;
            resume through ``run``. ``True``: every plain root call (``invoke``,
            ``stream``, ``ainvoke``, ``astream``, ``astream_events``; so every run a
            LangGraph server makes) plans first, under the graph's ``resume`` and
            ``lock`` policies, as ``run`` does: a change is rewound, migrated or (with
            ``ResumePolicy(on_change="raise")``) raises ``CheckpointSchemaError``
            before any node runs; unchanged, the call is LangGraph's own, with the
            caller's input and keywords (``durability`` included) as given.
        resume: What a resume does about changes (``ResumePolicy``): for ``run``, its
            twins and ``plan`` when they give none, and for plain calls with
            ``auto_resume=True``. Default: ``ResumePolicy()``.
        lock: How a resume waits for a thread another process runs (``LockPolicy``):
            for ``run`` and its twins when they give none, and for plain calls with
            ``auto_resume=True``. Default: ``LockPolicy()``.
        verify_writes: For development and CI: every value a node writes to a state key
            is round-tripped through the checkpointer's serializer as it is saved, and a
            step whose writes would not read back as written fails at once with
            ``WriteReadbackError``, before they are saved; a value not of the type
            its node declares is also judged by the items it holds.
        verify_saver: True (default): before ``run`` (or a twin, or an ``auto_resume``
            call) first invokes the graph on a saver, it reads the stamp's stored
            description back, once per saver class and process, and raises
            ``StampLostError`` if the saver dropped the config metadata the stamp rides
            in. False accepts such a saver: its threads plan as ``unverified``.
        **compile_kwargs: Every other keyword of ``StateGraph.compile``. 0.2's
            ``keep_compatible=`` and ``migrations=`` (now ``ResumePolicy`` fields) and
            ``auto_resume=False`` (now ``auto_resume=True,
            resume=ResumePolicy(on_change="raise")``) still work, with a
            ``DeprecationWarning``.

    Returns:
        LangGraph's compiled graph (a ``CompiledStateGraph``); all of its API works
        as usual, and what neograph-ext adds to any metadata is at most 256 bytes.
        Nodes with a ``cache_policy`` get cache keys that include their fingerprint,
        so a result cached by other code is never served. A node that writes a value
        of another type than it declares for that key is logged as a warning, once per
        node and process (its stamped fingerprint describes the declared type).

    Raises:
        ValueError: ``output_types``, ``versions`` or ``renames`` names an unknown node,
            or the resume policy's ``keep_compatible`` or ``migrations`` an unknown
            channel or type.
        GraphError: ``builder`` is a graph of LangGraph's functional API (``@entrypoint``);
            or, with ``ResumePolicy(on_change="raise")``, a declared type's values cannot
            read back from a checkpoint as themselves (otherwise that is logged as a
            warning); or a 0.2 keyword is given with the policy that covers it.
    """
    strict_plain = auto_resume is False  # 0.2's spelling: plain calls plan, strictly
    given, compile_kwargs = asked(
        "compile",
        resume,
        lock,
        {**compile_kwargs, "auto_resume": False} if strict_plain else compile_kwargs,
    )
    resume, lock = resolve(given, ResumePolicy(), LockPolicy())
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
    types = channel_types(builder)
    carrying(types, resume.keep_compatible, resume.migrations)  # names checked at compile
    graph = builder.compile(**options)
    channels, coerced, outputs = declared(builder, output_types)
    allowed = allowed_pairs(graph.checkpointer, getattr(graph, "_serde_allowlist", None))
    revived = revival(channels, coerced, outputs, allowed)
    report(revived, graph.name, strict=resume.on_change == "raise")
    watching(graph, outputs, coerced, deep=verify_writes)
    if verify_writes:
        verifying(graph, frozenset(channels))
    fold_cache_keys(graph, cache_salts(stamp))
    # In place, not with_config(): a copy would lose what compile() set afterwards.
    graph.config = {
        **config,
        **(graph.config or {}),
        "metadata": {**_metadata(config), **_metadata(graph.config), STAMP_KEY: stamp_ref(stamp)},
    }
    plain = type(graph)
    # Named as the class it replaces: LangGraph serialises a graph's runnables by class
    # path (get_graph().to_json()), and a drop-in must not change what it prints.
    graph.__class__ = type(
        plain.__name__,
        (StampedGraph,),
        {
            "__module__": plain.__module__,
            "__qualname__": plain.__qualname__,
            "neograph_ext_stamp": stamp,
            # 0.2's strict compile left run() rewinding: only its plain calls raised.
            "neograph_ext_resume": replace(resume, on_change="rewind") if strict_plain else resume,
            "neograph_ext_lock": lock,
            "neograph_ext_auto_resume": resume if auto_resume is not None else None,
            "neograph_ext_channel_types": types,
            "neograph_ext_revival": revived,
            "neograph_ext_verify_saver": verify_saver,
            "_neograph_ext_saved": weakref.WeakSet(),
            "_neograph_ext_described": weakref.WeakKeyDictionary(),
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
