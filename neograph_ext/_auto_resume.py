"""Auto-resume: a compiled graph whose plain root calls plan first, as ``run`` does.

``compile(..., attach=[AutoResume()])`` picks this class (``_compile``). Every plain root call
(``invoke``, ``stream``, their async twins, event streams, and so a LangGraph Server's
runs) is planned under the graph's whole policies (``compile(resume=..., lock=...)``).

Rules:
- When nothing changed (``_PLAIN_KINDS``), the call is LangGraph's own, with the
  caller's input, config and keywords as given, so on unchanged code the option is
  invisible; otherwise it is ``_run.stream`` under the graph's policies.
- A call ``run`` makes (it carries a run mark), a subgraph call and a call without a
  thread or saver stay plain.
- The policy lives on the per-compile class, since ``copy`` (how a server injects its
  checkpointer) rebuilds the graph through its constructor, which drops unknown
  keywords.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import aclosing
from typing import Any, ClassVar, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.types import Command

from neograph_ext._run import astreamed, streamed
from neograph_ext.decision._decision import PlanKind, ResumePlan
from neograph_ext.decision._head_state import started_input
from neograph_ext.decision._policy import ResumePolicy, asked
from neograph_ext.decision._stamp import encode_run, input_digest
from neograph_ext.decision._steps import marked_kind, takes_head
from neograph_ext.drivers._call_match import CallsUnmatched, checking
from neograph_ext.drivers._drivers import AsyncDriver, Driver, amarked
from neograph_ext.drivers._graph import StampedGraph, marking
from neograph_ext.drivers._thread import ThreadCall, thread_call
from neograph_ext.flows._decision_log import logged
from neograph_ext.flows._flow import served_plan
from neograph_ext.storage._telemetry import AsyncHerald, Herald, fresh_plan, recorded, told

__all__ = ["AutoResumingGraph", "aserved", "served"]


class AutoResumingGraph(StampedGraph):
    """A stamped graph whose plain root calls plan first (``AutoResume``)."""

    neograph_ext_auto_resume: ClassVar[ResumePolicy] = ResumePolicy()
    """The policy every plain root call plans with: ``compile``'s ``resume`` (made strict
    for 0.2's ``compile(auto_resume=False)``, while ``run`` keeps it as given)."""

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """LangGraph's ``stream``, planned first; ``invoke`` goes through it."""
        if self._resumes(config):
            yield from served(self, input, config or {}, kwargs)
            return
        yield from self.neograph_ext_plain_stream(input, config, kwargs)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """LangGraph's ``astream``, planned first; ``ainvoke`` and event streams go through it."""
        if self._resumes(config):
            chunks = aserved(self, input, config or {}, kwargs)
        else:
            chunks = self.neograph_ext_plain_astream(input, config, kwargs)
        async with aclosing(chunks) as served_chunks:
            async for chunk in served_chunks:
                yield chunk

    def _resumes(self, config: RunnableConfig | None) -> bool:
        """Whether this call plans first: a root call of a thread on a saver that
        ``run`` did not make itself."""
        if self.neograph_ext_run_mark() is not None:
            return False  # run() planned this call already
        # A call inside a node (a subgraph) inherits its task's namespace.
        nested = ensure_config(config).get("configurable", {}).get("checkpoint_ns")
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        return (
            not nested and thread is not None and isinstance(self.checkpointer, BaseCheckpointSaver)
        )


_PLAIN_KINDS = frozenset(
    {PlanKind.FRESH, PlanKind.CONTINUE, PlanKind.UP_TO_DATE, PlanKind.UNVERIFIED}
)
"""Plans that leave LangGraph nothing to change: a served call of one is LangGraph's."""


def served(
    graph: AutoResumingGraph, input: Any, config: RunnableConfig, kwargs: Mapping[str, Any]
) -> Iterator[Any]:
    """A plain ``stream`` call on a graph compiled with ``auto_resume``.

    Planned as ``run`` plans it, under the graph's whole policies (``compile(resume=...,
    lock=...)``). When nothing changed (``_as_given``: a new thread, a continue, an
    up-to-date or (unless refused) unverified thread, from the newest checkpoint or from
    a ``checkpoint_id``), the call is LangGraph's own, with the caller's input, config
    and keywords as given, so on unchanged code the option is invisible; its checkpoints
    carry a run mark that says the lineage was checked, so the next call needs no plan,
    and the stamp's description is stored afterwards, as by any plain call.
    Otherwise (a rewind, a migrate, a strict error, or a crashed or waiting head other
    code owns, which ``run`` first makes this code's: ``_steps.takes_head``) it is
    ``stream`` under those policies, whose invocations keep the caller's keywords,
    ``durability`` included, going on from the plan made here.
    """
    resume = graph.neograph_ext_auto_resume
    given, rest = asked("stream", resume, None, kwargs)
    call = thread_call(graph, config, given, input)
    with Driver(call) as driver:
        seen, head = driver.run(served_plan(call))
    decision = seen.plan if seen is not None else None
    if not _as_given(decision, call.resume) or takes_head(call, decision, head):
        yield from streamed(call, input, rest, seen)
        return
    _logged(call, decision)
    config = _told(call, decision, Herald)
    try:
        with marking(call.stamp, _plain_mark(call, decision, head, input)), checking():
            yield from graph.neograph_ext_plain_stream(input, config, kwargs, call.saver)
            return
    except CallsUnmatched:
        pass  # a call was made otherwise than cached: resumed as ``stream`` resumes it
    yield from streamed(call, input, rest)


async def aserved(
    graph: AutoResumingGraph, input: Any, config: RunnableConfig, kwargs: Mapping[str, Any]
) -> AsyncGenerator[Any, None]:
    """Async twin of ``served``."""
    resume = graph.neograph_ext_auto_resume
    given, rest = asked("astream", resume, None, kwargs)
    call = thread_call(graph, config, given, input)
    async with AsyncDriver(call) as driver:
        seen, head = await driver.run(served_plan(call))
    decision = seen.plan if seen is not None else None
    if _as_given(decision, call.resume) and not takes_head(call, decision, head):
        _logged(call, decision)
        mark = _plain_mark(call, decision, head, input)
        told_config = _told(call, decision, AsyncHerald)
        plain = graph.neograph_ext_plain_astream(input, told_config, kwargs, call.saver)
        try:
            served_chunks = amarked(call.stamp, mark, plain, checked=True)
            async with aclosing(cast("AsyncGenerator[Any, None]", served_chunks)) as chunks:
                async for chunk in chunks:
                    yield chunk
                return
        except CallsUnmatched:
            pass  # a call was made otherwise than cached: resumed as ``astream`` resumes it
        seen = None
    resumed = astreamed(call, input, rest, seen)
    async with aclosing(cast("AsyncGenerator[Any, None]", resumed)) as chunks:
        async for chunk in chunks:
            yield chunk


def _as_given(decision: ResumePlan | None, resume: ResumePolicy) -> bool:
    """Whether a served call is LangGraph's own: a new thread, or a plan that leaves
    LangGraph nothing to change (``_PLAIN_KINDS``, owing no replayed turns) and that the
    policy does not refuse (``on_unverified="raise"``)."""
    if decision is None:
        return True
    if decision.kind is PlanKind.UNVERIFIED:
        return resume.on_unverified == "resume"
    # Turns a replay still owes (it was cut short, or stopped at a question) are
    # replayed after the head's turn: LangGraph alone would leave them out.
    # A new turn that keeps a finished turn's values converts them first (``migrated``).
    return decision.kind in _PLAIN_KINDS and not (decision.replayed or decision.migrated)


def _logged(call: ThreadCall, decision: ResumePlan | None) -> None:
    """Log the decision of a served call LangGraph runs as given (a call ``stream``
    serves logs its own)."""
    if decision is not None:
        logged(call.saver, call.thread_id, decision)


def _told(
    call: ThreadCall, decision: ResumePlan | None, herald: type[Herald] | type[AsyncHerald]
) -> RunnableConfig:
    """The config of a served call LangGraph runs as given: the caller's, carrying the
    decision when the graph was compiled with ``telemetry`` (``_telemetry.told``); a call
    ``stream`` serves tells its own."""
    telemetry = call.graph.neograph_ext_telemetry
    if telemetry is None:
        return call.config
    plan = recorded(decision or fresh_plan(call.thread_id), telemetry)
    return told(call.config, plan, herald, call.graph.config)


def _plain_mark(
    call: ThreadCall, decision: ResumePlan | None, head: CheckpointTuple | None, input: Any
) -> str:
    """The run mark of a served call LangGraph runs as given: the plan's kind (so an
    unverified thread stays unverified, a rewind cut short a rewind: ``marked_kind``)
    and the input its turn started with."""
    kind = marked_kind(call, decision, head) if decision is not None else PlanKind.FRESH
    given = None if input is None or isinstance(input, Command) else input_digest(input)
    return encode_run(call.stamp, kind, given if given is not None else started_input(head))
