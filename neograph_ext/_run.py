"""Resuming the threads of a stamped graph: the public calls.

Each call checks its thread and resolves its policies once (``_thread.thread_call``),
then drives a flow of ``_flow`` (read -> decide -> settle -> invoke) with the sync or
the async driver of ``_drivers``: the twins below differ by ``await`` alone.

Rules:
- Nothing is deleted or overwritten: a rewind forks.
- The caller's input and config are never mutated.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel

from neograph_ext._budget_read import costed
from neograph_ext.decision._decision import ResumePlan
from neograph_ext.decision._policy import Asked, LockPolicy, ResumePolicy, asked
from neograph_ext.drivers._call_match import CallsUnmatched
from neograph_ext.drivers._drivers import AsyncDriver, Driver
from neograph_ext.drivers._thread import ThreadCall, thread_call
from neograph_ext.flows._flow import Seen, resumed, thread_plan

__all__ = ["aplan", "arun", "astream", "astreamed", "plan", "run", "stream", "streamed"]

logger = logging.getLogger("neograph_ext")


def plan(
    graph: Pregel[Any, Any, Any, Any],
    config: RunnableConfig,
    *,
    resume: ResumePolicy | None = None,
    input: Any = None,
    **deprecated: Any,
) -> ResumePlan:
    """What ``run`` would do with the thread in ``config``; executes and writes nothing.

    Unlike ``run``, which trusts a head it verified itself, ``plan`` always reads the
    thread's lineage, so ``kept`` and ``rerun`` are complete.

    Args:
        graph: A graph made by ``neograph_ext.compile`` with a checkpointer.
        config: Names the thread (``configurable.thread_id``) and optionally a
            ``checkpoint_id`` to plan from.
        resume: Plan as ``run(..., resume=resume)`` would; by default under the
            graph's policy (``compile(resume=...)``).
        input: Plan as ``run(graph, input, config)`` would: another input than the one
            a finished thread's turn started with starts a new turn, and every turn
            before it is history. Left out: as ``run(graph, None, config)``.
        **deprecated: 0.2's ``replay_turns=`` (now ``ResumePolicy.replay_turns``),
            with a ``DeprecationWarning``.

    Returns:
        The decision, with each change explained at field level.

    Raises:
        GraphError: The graph was not compiled by neograph-ext, has no checkpointer,
            or the config names no thread; or ``replay_turns`` is given with ``resume``.
        UnreadableCheckpointError: The thread's stored checkpoints cannot be decoded.
        ValueError: ``resume`` names a channel or type the state does not have.
    """
    call = thread_call(graph, config, _planning("plan", resume, deprecated), input)
    with Driver(call) as driver:
        return driver.run(costed(call, driver.run(thread_plan(call))))


async def aplan(
    graph: Pregel[Any, Any, Any, Any],
    config: RunnableConfig,
    *,
    resume: ResumePolicy | None = None,
    input: Any = None,
    **deprecated: Any,
) -> ResumePlan:
    """Async twin of ``plan``."""
    call = thread_call(graph, config, _planning("aplan", resume, deprecated), input)
    async with AsyncDriver(call) as driver:
        return await driver.run(costed(call, await driver.run(thread_plan(call))))


def _planning(function: str, resume: ResumePolicy | None, deprecated: Mapping[str, Any]) -> Asked:
    """What ``plan`` was asked, refusing keywords it does not take, as Python would."""
    given, unknown = asked(function, resume, None, deprecated, stacklevel=4)
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument {next(iter(unknown))!r}")
    return given


def run(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    resume: ResumePolicy | None = None,
    lock: LockPolicy | None = None,
    **kwargs: Any,
) -> Any:
    """Run or resume a thread, rewinding past checkpoints that other types wrote.

    Args:
        graph: A graph made by ``neograph_ext.compile`` with a checkpointer.
        input: The run's input; ignored when resuming an incomplete thread, and a
            ``Command(resume=...)`` answers an interrupt as usual.
        config: Names the thread; a ``checkpoint_id`` in it is planned from.
        resume: What the resume does about changes (``ResumePolicy``: rewind or raise,
            keep or migrate stored values, replay later turns, re-answer a question);
            replaces the graph's (``compile(resume=...)``) whole for this call.
        lock: How the call waits for a thread another process runs (``LockPolicy``);
            replaces the graph's (``compile(lock=...)``) whole for this call.
        **kwargs: Passed to ``graph.invoke``; ``durability`` defaults to ``"sync"``.
            0.2's ``auto_resume``, ``reanswer``, ``replay_turns``,
            ``strict_unverified`` (now ``ResumePolicy`` fields) and ``on_busy``,
            ``lock_timeout`` (now ``LockPolicy`` fields) still work, set on the graph's
            policies, with a ``DeprecationWarning``.

    Returns:
        What ``graph.invoke`` returns; for a complete, unchanged thread, its stored output.

    Raises:
        CheckpointSchemaError: Strict mode (``on_change="raise"``) and something
            changed, or a change that cannot be rewound safely, or
            (``on_unverified="raise"``) checkpoints that cannot be verified; raised
            before any node runs.
        GraphError: The graph or config cannot be used, or a 0.2 keyword is given
            with the policy that covers it.
        StampLostError: The saver drops the metadata the stamp rides in (checked
            once per saver class and process, before the first invocation).
        ThreadBusyError: Another process holds the thread's lock.
        UnreadableCheckpointError: The thread's stored checkpoints cannot be decoded.
        ValueError: ``resume`` names a channel or type the state does not have.
    """
    given, kwargs = asked("run", resume, lock, kwargs)
    call = thread_call(graph, config, given, input)
    try:
        with Driver(call) as driver:
            return driver.run(resumed(call, input, kwargs))
    except CallsUnmatched as unmatched:
        call = _unmatched(call, unmatched)
    with Driver(call) as driver:
        return driver.run(resumed(call, input, kwargs))


async def arun(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    resume: ResumePolicy | None = None,
    lock: LockPolicy | None = None,
    **kwargs: Any,
) -> Any:
    """Async twin of ``run``."""
    given, kwargs = asked("arun", resume, lock, kwargs)
    call = thread_call(graph, config, given, input)
    try:
        async with AsyncDriver(call) as driver:
            return await driver.run(resumed(call, input, kwargs))
    except CallsUnmatched as unmatched:
        call = _unmatched(call, unmatched)
    async with AsyncDriver(call) as driver:
        return await driver.run(resumed(call, input, kwargs))


def stream(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    resume: ResumePolicy | None = None,
    lock: LockPolicy | None = None,
    **kwargs: Any,
) -> Iterator[Any]:
    """Like ``run``, yielding exactly the chunks of LangGraph's ``stream``.

    A complete, unchanged thread yields what LangGraph yields when resuming a thread
    with nothing left to do: its stored state once if ``stream_mode`` includes
    ``"values"``, else nothing. No node runs and nothing is written.
    """
    given, kwargs = asked("stream", resume, lock, kwargs)
    yield from streamed(thread_call(graph, config, given, input), input, kwargs)


async def astream(
    graph: Pregel[Any, Any, Any, Any],
    input: Any,
    config: RunnableConfig,
    *,
    resume: ResumePolicy | None = None,
    lock: LockPolicy | None = None,
    **kwargs: Any,
) -> AsyncIterator[Any]:
    """Async twin of ``stream``."""
    given, kwargs = asked("astream", resume, lock, kwargs)
    async for chunk in astreamed(thread_call(graph, config, given, input), input, kwargs):
        yield chunk


def streamed(
    call: ThreadCall, input: Any, kwargs: Mapping[str, Any], seen: Seen | None = None
) -> Iterator[Any]:
    """``stream`` of a call checked already; ``seen``: what it read and decided already
    (``_flow.served_plan``), which is not planned again unless the thread moved."""
    try:
        with Driver(call) as driver:
            yield from driver.stream(resumed(call, input, kwargs, seen))
            return
    except CallsUnmatched as unmatched:
        call = _unmatched(call, unmatched)
    with Driver(call) as driver:
        yield from driver.stream(resumed(call, input, kwargs))


async def astreamed(
    call: ThreadCall, input: Any, kwargs: Mapping[str, Any], seen: Seen | None = None
) -> AsyncIterator[Any]:
    """Async twin of ``streamed``."""
    try:
        async with AsyncDriver(call) as driver:
            async for chunk in driver.stream(resumed(call, input, kwargs, seen)):
                yield chunk
            return
    except CallsUnmatched as unmatched:
        call = _unmatched(call, unmatched)
    async with AsyncDriver(call) as driver:
        async for chunk in driver.stream(resumed(call, input, kwargs)):
            yield chunk


def _unmatched(call: ThreadCall, unmatched: CallsUnmatched) -> ThreadCall:
    """The call planned again after its invocation found a cached result answering
    another call (``_call_match``): cut there. Found again, the error escapes."""
    logger.info("thread %r: %s; the turn is planned again from it", call.thread_id, unmatched)
    return call._replace(unmatched=unmatched.index)
