"""The compiled graph class: LangGraph's own, stamping what it writes. It only stamps.

Rules:
- ``compile`` (``_compile``) swaps a compiled graph's class for a per-compile subclass
  of this one holding the stamp; ``copy`` and ``with_config`` keep the class, so the
  stamp survives them and a checkpointer injected at run time (a server, a parent).
- Every checkpoint the graph writes carries its own stamp reference, whatever a
  caller or an enclosing graph put into the config's metadata.
- The stamp's description is stored in each saver the graph writes to, once per saver
  and process (``_stamp_store``), and the stamp takes its place in the saver's order of
  stamps (``_stamp_order``): by ``run()`` before it invokes, by a plain call when it
  ends (see ``StampedGraph._unsaved`` for why not before).
- The run mark (``_stamp.RUN_KEY``) comes from ``run()``, through a context variable
  bound to the stamp it was made for, or else from the graph itself, recording only
  the digest of the input a plain call starts with: a caller's metadata cannot forge
  a mark, and a graph invoked inside a node of a run does not inherit one.
- Planning plain calls first is ``_auto_resume``'s subclass, above the drivers.
- A graph compiled with a ``Budget`` counts every root invocation's spend (``_spend``).
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import aclosing
from contextvars import ContextVar
from typing import Any, ClassVar, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint
from langgraph.pregel import Pregel
from langgraph.types import Command

from neograph_ext.decision._budget import Budget
from neograph_ext.decision._entrypoint import EntrypointShape
from neograph_ext.decision._langgraph_renames import renamed
from neograph_ext.decision._policy import LockPolicy, ResumePolicy
from neograph_ext.decision._revive import Revival
from neograph_ext.decision._stamp import (
    PLAIN_CALL,
    RUN_KEY,
    STAMP_KEY,
    Stamp,
    Stamped,
    encode_run,
    input_digest,
    stamp_ref,
)
from neograph_ext.storage._spend import counting
from neograph_ext.storage._stamp_order import aregister, register
from neograph_ext.storage._stamp_store import asave, save
from neograph_ext.storage._stamp_store import averify as acheck_saver
from neograph_ext.storage._stamp_store import verify as check_saver
from neograph_ext.storage._telemetry import Telemetry

__all__ = ["StampedGraph", "marking", "metadata_of"]

_RUN_MARK: ContextVar[tuple[str, str] | None] = ContextVar("neograph_ext_run_mark", default=None)
"""``(stamp id, run mark)`` while ``run()`` invokes a graph of that stamp."""


class StampedGraph(Pregel[Any, Any, Any, Any], Stamped):
    """A LangGraph compiled graph whose checkpoints carry its stamp.

    ``compile`` makes one subclass per compiled graph, holding that graph's stamp, with
    the graph's own class (a ``CompiledStateGraph``, or the ``Pregel`` of an
    ``@entrypoint``) after this one among its bases.
    """

    neograph_ext_stamp: ClassVar[Stamp]
    """The fingerprints of this graph's types."""
    neograph_ext_resume: ClassVar[ResumePolicy] = ResumePolicy()
    """``compile(resume=...)``: the policy of a ``run`` or ``plan`` that gives none."""
    neograph_ext_lock: ClassVar[LockPolicy] = LockPolicy()
    """``compile(lock=...)``: the policy of a ``run`` (or a plain call) that gives none."""
    neograph_ext_release: ClassVar[str | None] = None
    """The release the environment declared at compile (``_stamp_order.RELEASE_ENV``),
    kept with the stamp's place in each database's order of stamps."""
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
    """``WriteChecks.saver``: whether ``run`` checks that the saver keeps the stamp."""
    neograph_ext_budget: ClassVar[Budget | None] = None
    """``Budget`` attached: what the graph's threads may spend; None: not counted."""
    neograph_ext_telemetry: ClassVar[Telemetry | None] = None
    """``Telemetry`` attached: what planned calls tell traces and metrics; None: nothing."""
    neograph_ext_entrypoint: ClassVar[EntrypointShape | None] = None
    """For an ``@entrypoint``: its name and the tasks its stamp covers; None for a graph."""

    def _migrate_checkpoint(self, checkpoint: Checkpoint) -> None:
        """LangGraph's own move of a loaded checkpoint to the graph's channel layout, and
        the new names of the nodes ``renames`` renamed (``_langgraph_renames``)."""
        super()._migrate_checkpoint(checkpoint)
        if self.neograph_ext_stamp.renames:
            renamed(checkpoint, self.neograph_ext_stamp.renames)

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """LangGraph's ``stream``, stamped; ``invoke`` goes through it."""
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
        stamped = self._counted(input, self._stamped(input, config))
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
        stamped = self._counted(input, self._stamped(input, config))
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
        """Store the stamp's description in ``saver`` and its place in the saver's order
        of stamps (``_stamp_order``), once per saver and process, and
        (``verify``, unless compiled with ``WriteChecks(saver=False)``) check that the saver
        keeps the stamp, once per saver class and process.

        A plain call does not verify: it stores the description after LangGraph's own
        writes, and a drop-in raises nothing LangGraph would not. ``run`` verifies
        before it invokes.

        Raises:
            StampLostError: The saver drops the config metadata the stamp rides in.
        """
        if saver not in self._neograph_ext_saved:
            save(saver, self.neograph_ext_stamp)
            register(saver, self.neograph_ext_stamp, self.neograph_ext_release)
            self._neograph_ext_saved.add(saver)
        if verify and self.neograph_ext_verify_saver:
            check_saver(saver, self.neograph_ext_stamp)

    async def neograph_ext_asave(
        self, saver: BaseCheckpointSaver[Any], *, verify: bool = True
    ) -> None:
        """Async twin of ``neograph_ext_save``."""
        if saver not in self._neograph_ext_saved:
            await asave(saver, self.neograph_ext_stamp)
            await aregister(saver, self.neograph_ext_stamp, self.neograph_ext_release)
            self._neograph_ext_saved.add(saver)
        if verify and self.neograph_ext_verify_saver:
            await acheck_saver(saver, self.neograph_ext_stamp)

    def neograph_ext_described(self, saver: BaseCheckpointSaver[Any]) -> dict[str, Stamp]:
        """The stamp descriptions found in ``saver`` so far, by id (filled by planning)."""
        return self._neograph_ext_described.setdefault(saver, {})

    def neograph_ext_run_mark(self) -> str | None:
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
        if self.neograph_ext_run_mark() is not None:
            return None
        if isinstance(saver, BaseCheckpointSaver) and saver not in self._neograph_ext_saved:
            return saver
        return None

    def _counted(self, input: Any, config: RunnableConfig) -> RunnableConfig:
        new_turn = input is not None and not isinstance(input, Command)
        return counting(config, self.neograph_ext_budget, self.checkpointer, new_turn)

    def _stamped(self, input: Any, config: RunnableConfig | None) -> RunnableConfig:
        stamp = self.neograph_ext_stamp
        metadata: dict[str, Any] = {STAMP_KEY: stamp_ref(stamp)}
        mark = self.neograph_ext_run_mark()
        given = None if input is None or isinstance(input, Command) else input_digest(input)
        if mark is not None:
            metadata[RUN_KEY] = mark
        elif given is not None:
            metadata[RUN_KEY] = encode_run(stamp, PLAIN_CALL, given)
        elif RUN_KEY in metadata_of(config) or RUN_KEY in metadata_of(
            var_child_runnable_config.get()
        ):
            metadata[RUN_KEY] = ""  # not ours to carry: blank it rather than pass it on
        merged: RunnableConfig = {**(config or {})}
        merged["metadata"] = {**metadata_of(config), **metadata}
        return merged


def metadata_of(config: RunnableConfig | None) -> dict[str, Any]:
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
