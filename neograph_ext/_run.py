"""Resuming the threads of a stamped graph: the public calls.

Each call checks its thread once (``_thread.thread_call``), then drives a flow of
``_flow`` (read -> decide -> settle -> invoke) with the sync or the async driver of
``_drivers``: the twins below differ by ``await`` alone.

Rules:
- Nothing is deleted or overwritten: a rewind forks.
- The caller's input and config are never mutated.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import aclosing
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.pregel import Pregel
from langgraph.types import Command

from neograph_ext._decision import PlanKind, ResumePlan
from neograph_ext._drivers import AsyncDriver, Driver, amarked
from neograph_ext._flow import resumed, served_plan, thread_plan
from neograph_ext._graph import StampedGraph, marking
from neograph_ext._head_state import started_input
from neograph_ext._lock import OnBusy
from neograph_ext._options import Options
from neograph_ext._stamp import encode_run, input_digest
from neograph_ext._thread import ThreadCall, thread_call

__all__ = ["aplan", "arun", "astream", "plan", "run", "stream"]

logger = logging.getLogger("neograph_ext")

_END = object()
"""What ``anext`` returns for an exhausted stream."""

_IDLE = ""
"""The run mark of replaying a thread with nothing to do: never stored, nothing is written."""


def plan(
    graph: Pregel[Any, Any, Any, Any], config: RunnableConfig, *, replay_turns: bool = False
) -> ResumePlan:
    """What ``run`` would do with the thread in ``config``; executes and writes nothing.

    Unlike ``run``, which trusts a head it verified itself, ``plan`` always reads the
    thread's lineage, so ``kept`` and ``rerun`` are complete.

    Args:
        graph: A graph made by ``neograph_ext.compile`` with a checkpointer.
        config: Names the thread (``configurable.thread_id``) and optionally a
            ``checkpoint_id`` to plan from.
        replay_turns: Plan as ``run(..., replay_turns=True)`` would.

    Returns:
        The decision, with each change explained at field level.

    Raises:
        GraphError: The graph was not compiled by neograph-ext, has no checkpointer,
            or the config names no thread.
        UnreadableCheckpointError: The thread's stored checkpoints cannot be decoded.
    """
    call, options = thread_call(graph, config), Options(replay_turns=replay_turns)
    with Driver(call, options) as driver:
        return driver.run(thread_plan(call, options))


async def aplan(
    graph: Pregel[Any, Any, Any, Any], config: RunnableConfig, *, replay_turns: bool = False
) -> ResumePlan:
    """Async twin of ``plan``."""
    call, options = thread_call(graph, config), Options(replay_turns=replay_turns)
    async with AsyncDriver(call, options) as driver:
        return await driver.run(thread_plan(call, options))


def run(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    auto_resume: bool = True,
    reanswer: bool = False,
    replay_turns: bool = False,
    on_busy: OnBusy = "wait",
    lock_timeout: float = 300.0,
    strict_unverified: bool = False,
    **kwargs: Any,
) -> Any:
    """Run or resume a thread, rewinding past checkpoints that other types wrote.

    Args:
        graph: A graph made by ``neograph_ext.compile`` with a checkpointer.
        input: The run's input; ignored when resuming an incomplete thread, and a
            ``Command(resume=...)`` answers an interrupt as usual.
        config: Names the thread; a ``checkpoint_id`` in it is planned from.
        auto_resume: False (strict mode, for CI) raises instead of rewinding.
        reanswer: When the thread waits on a question (an ``interrupt()`` or an
            ``interrupt_before`` breakpoint) and something upstream of it changed, the
            rewind asks it again and returns the new question, setting the answer given
            now aside (logged). True applies the answer to the new question instead:
            for questions that do not show upstream content.
        replay_turns: For a changed value of an earlier turn that is still live and
            neither kept nor migrated: rewind into that turn, re-run from the changed
            node, then feed every later turn its stored input again, in order,
            stopping at the first interrupt. Without it, that raises.
        on_busy: When another process holds the thread: ``"wait"`` for it, up to
            ``lock_timeout`` seconds, or ``"raise"`` at once. Whenever there is work to
            do, the thread is planned again and executed under its lock (SQLite files
            and PostgreSQL; other savers take none), so concurrent callers never run
            a node twice.
        lock_timeout: Seconds to wait for the thread's lock.
        strict_unverified: True raises ``CheckpointSchemaError`` instead of resuming a
            thread whose checkpoints cannot be verified (written without a stamp: by
            plain LangGraph, or through a saver that drops it), as ``neograph-ext check
            --strict-unverified`` fails it; before any node runs.
        **kwargs: Passed to ``graph.invoke``; ``durability`` defaults to ``"sync"``.

    Returns:
        What ``graph.invoke`` returns; for a complete, unchanged thread, its stored output.

    Raises:
        CheckpointSchemaError: Strict mode and something changed, or a change that
            cannot be rewound safely, or (``strict_unverified``) checkpoints that cannot
            be verified; raised before any node runs.
        GraphError: The graph or config cannot be used.
        StampLostError: The saver drops the metadata the stamp rides in (checked
            once per saver class and process, before the first invocation).
        ThreadBusyError: Another process holds the thread's lock.
        UnreadableCheckpointError: The thread's stored checkpoints cannot be decoded.
    """
    call = thread_call(graph, config)
    options = Options(auto_resume, reanswer, replay_turns, strict_unverified, on_busy, lock_timeout)
    with Driver(call, options) as driver:
        return driver.run(resumed(call, input, options, kwargs))


async def arun(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    auto_resume: bool = True,
    reanswer: bool = False,
    replay_turns: bool = False,
    on_busy: OnBusy = "wait",
    lock_timeout: float = 300.0,
    strict_unverified: bool = False,
    **kwargs: Any,
) -> Any:
    """Async twin of ``run``."""
    call = thread_call(graph, config)
    options = Options(auto_resume, reanswer, replay_turns, strict_unverified, on_busy, lock_timeout)
    async with AsyncDriver(call, options) as driver:
        return await driver.run(resumed(call, input, options, kwargs))


def stream(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    auto_resume: bool = True,
    reanswer: bool = False,
    replay_turns: bool = False,
    on_busy: OnBusy = "wait",
    lock_timeout: float = 300.0,
    strict_unverified: bool = False,
    **kwargs: Any,
) -> Iterator[Any]:
    """Like ``run``, yielding exactly the chunks of LangGraph's ``stream``.

    A complete, unchanged thread yields what LangGraph yields when resuming a thread
    with nothing left to do: its stored state once if ``stream_mode`` includes
    ``"values"``, else nothing. No node runs and nothing is written.
    """
    call = thread_call(graph, config)
    options = Options(auto_resume, reanswer, replay_turns, strict_unverified, on_busy, lock_timeout)
    with Driver(call, options) as driver:
        yield from driver.stream(resumed(call, input, options, kwargs))


async def astream(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    auto_resume: bool = True,
    reanswer: bool = False,
    replay_turns: bool = False,
    on_busy: OnBusy = "wait",
    lock_timeout: float = 300.0,
    strict_unverified: bool = False,
    **kwargs: Any,
) -> AsyncIterator[Any]:
    """Async twin of ``stream``."""
    call = thread_call(graph, config)
    options = Options(auto_resume, reanswer, replay_turns, strict_unverified, on_busy, lock_timeout)
    async with AsyncDriver(call, options) as driver:
        async for chunk in driver.stream(resumed(call, input, options, kwargs)):
            yield chunk


_PLAIN_KINDS = frozenset(
    {PlanKind.FRESH, PlanKind.CONTINUE, PlanKind.UP_TO_DATE, PlanKind.UNVERIFIED}
)
"""Plans that leave LangGraph nothing to change: a served call of one is LangGraph's."""


def served(
    graph: StampedGraph, input: Any, config: RunnableConfig, kwargs: Mapping[str, Any]
) -> Iterator[Any]:
    """A plain ``stream`` call on a graph compiled with ``auto_resume``.

    Planned as ``run`` plans it. When nothing changed (``_PLAIN_KINDS``: a new thread,
    a continue, an up-to-date or unverified thread, from the newest checkpoint or from a
    ``checkpoint_id``), the call is LangGraph's own, with the caller's input, config and
    keywords as given, so on unchanged code the option is invisible; its checkpoints
    carry a run mark that says the lineage was checked, so the next call needs no plan,
    and the stamp's description is stored afterwards, as by any plain call.
    Otherwise (a rewind, a migrate, a strict error) it is ``stream``, whose invocations
    keep the caller's keywords, ``durability`` included.
    """
    call = thread_call(graph, config)
    options = Options(auto_resume=bool(graph.neograph_ext_auto_resume))
    with Driver(call, options) as driver:
        decision, head = driver.run(served_plan(call, options))
    if decision is not None and decision.kind not in _PLAIN_KINDS:
        yield from stream(graph, input, config, auto_resume=options.auto_resume, **kwargs)
        return
    with marking(call.stamp, _plain_mark(call, decision, head, input)):
        yield from graph.neograph_ext_plain_stream(input, config, kwargs, call.saver)


async def aserved(
    graph: StampedGraph, input: Any, config: RunnableConfig, kwargs: Mapping[str, Any]
) -> AsyncGenerator[Any, None]:
    """Async twin of ``served``."""
    call = thread_call(graph, config)
    options = Options(auto_resume=bool(graph.neograph_ext_auto_resume))
    async with AsyncDriver(call, options) as driver:
        decision, head = await driver.run(served_plan(call, options))
    if decision is not None and decision.kind not in _PLAIN_KINDS:
        chunks = astream(graph, input, config, auto_resume=options.auto_resume, **kwargs)
    else:
        mark = _plain_mark(call, decision, head, input)
        plain = graph.neograph_ext_plain_astream(input, config, kwargs, call.saver)
        chunks = amarked(call.stamp, mark, plain)
    async with aclosing(cast("AsyncGenerator[Any, None]", chunks)) as served_chunks:
        async for chunk in served_chunks:
            yield chunk


def _plain_mark(
    call: ThreadCall, decision: ResumePlan | None, head: CheckpointTuple | None, input: Any
) -> str:
    """The run mark of a served call LangGraph runs as given: the plan's kind (so an
    unverified thread stays unverified) and the input its turn started with."""
    kind = decision.kind if decision is not None else PlanKind.FRESH
    given = None if input is None or isinstance(input, Command) else input_digest(input)
    return encode_run(call.stamp, kind, given if given is not None else started_input(head))
