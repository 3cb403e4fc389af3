"""``plan()`` and ``run()`` never disagree: a harness around every call of the suite.

Around each ``neograph_ext.run`` / ``arun`` / ``stream`` / ``astream`` call, the plan is
taken first (it executes and writes nothing), the node tasks the call executes are
counted through LangGraph's callbacks (root namespace only: a subgraph's inner nodes
are its parent node's execution), and they are checked against the plan:

- an error of neograph-ext: nothing ran (it is raised before any node runs), but for a
  ``WriteReadbackError``, which fails the step of the node that wrote, and for an
  ``@entrypoint`` whose calls are matched when they are made (``matched_when_made``):
  its body ran, no task;
- ``superseded`` (newer code owns the thread): the call raised ``ThreadSupersededError``,
  and a call that raised it was planned ``superseded``;
- ``up_to_date``, or any complete thread given no new input: nothing ran;
- ``continue``, ``unverified`` and ``migrate`` of an incomplete thread: the first step
  executed runs only nodes the plan names as waiting (``next_nodes``);
- ``rewind``: no node the plan keeps (and does not name to re-run) ran, nor, for an
  ``@entrypoint``, a task it keeps (the calls the entrypoint makes, counted apart); the
  first step executed runs only nodes of ``rerun``; a rewind that ran to the end ran
  every node of ``rerun`` the graph still routed to;
- a new turn (a complete thread given another input) may run any node after that.

``install`` puts the harness in place of the four functions for one test.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

import neograph_ext
from neograph_ext import (
    NeographExtError,
    PlanKind,
    ResumePlan,
    ThreadSupersededError,
    WriteReadbackError,
)
from neograph_ext.budget import BudgetExceededError
from neograph_ext.decision._head_state import started_input
from neograph_ext.decision._policy import Asked, asked
from neograph_ext.decision._stamp import input_digest
from neograph_ext.drivers._drivers import AsyncDriver, Driver
from neograph_ext.drivers._thread import thread_call
from neograph_ext.flows._decision_log import WARNED
from neograph_ext.flows._flow import thread_plan

__all__ = ["install"]


class Executions(BaseCallbackHandler):
    """The root-level node tasks an invocation starts, as ``(step, node)``."""

    run_inline = True

    def __init__(self) -> None:
        self.tasks: list[tuple[int, str]] = []
        self.calls: list[str] = []
        """The tasks an ``@entrypoint`` called directly (one level below its node)."""

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        metadata = metadata or {}
        node, namespace = metadata.get("langgraph_node"), metadata.get("langgraph_checkpoint_ns")
        if (
            node is not None
            and kwargs.get("name") == node
            and not str(node).startswith("__")
            and "|" not in str(namespace or "")
            and any(tag.startswith("graph:step:") for tag in tags or ())
        ):
            self.tasks.append((int(metadata.get("langgraph_step", -1)), str(node)))
        elif (
            node is not None
            and kwargs.get("name") == node
            and str(namespace or "").count("|") == 1
            and not any(tag.startswith("graph:step:") for tag in tags or ())
        ):
            self.calls.append(str(node))


@dataclass
class Call:
    """One call under the harness: what was planned, and what then ran."""

    plan: ResumePlan | None
    new_turn: bool
    executions: Executions = field(default_factory=Executions)

    def config(self, config: RunnableConfig) -> RunnableConfig:
        callbacks = config.get("callbacks")
        given = list(callbacks) if isinstance(callbacks, list | tuple) else []
        if callbacks is not None and not given:
            return config  # a callback manager: leave the caller's config alone
        return {**config, "callbacks": [*given, self.executions]}

    def check(self, graph: Any, config: RunnableConfig, raised: BaseException | None) -> None:
        """Check what ran against the plan; a finished rewind also against the lineage."""
        _check_without_state(self, raised)
        self.check_calls(graph, raised)
        if self._rewound(raised):
            state = graph.get_state({"configurable": config["configurable"]})
            if not state.next and not state.interrupts:
                history = graph.get_state_history(state.config)
                self.check_rerun(_reached(history, self.plan))

    def _rewound(self, raised: BaseException | None) -> bool:
        plan = self.plan
        return (
            plan is not None
            and plan.kind is PlanKind.REWIND
            and raised is None
            and not self.new_turn
            and not plan.replayed
        )

    def check_calls(self, graph: Any, raised: BaseException | None) -> None:
        """An entrypoint's rewind called no task it keeps (and does not re-run)."""
        plan = self.plan
        if getattr(graph, "neograph_ext_entrypoint", None) is None or plan is None:
            return
        if plan.kind is not PlanKind.REWIND or self.new_turn or plan.replayed:
            return
        if isinstance(raised, NeographExtError):
            return
        ran = set(self.executions.calls) & (plan.kept - plan.rerun)
        _agree(not ran, plan, self.executions.tasks, f"kept tasks ran: {ran}")

    def check_rerun(self, reached: set[str]) -> None:
        """Every node of ``rerun`` the new lineage reached ran in this call."""
        ran = self.executions.tasks
        missing = (self.plan.rerun if self.plan else set()) - {node for _, node in ran}
        _agree(not missing & reached, self.plan, ran, f"rerun nodes never ran: {missing}")


def _reached(history: Any, plan: ResumePlan | None) -> set[str]:
    """The nodes the lineage ran since the rewind's target: what the new code routed to."""
    seen: set[str] = set()
    # Closed when left early: a sync saver holds its lock until its listing ends.
    with contextlib.closing(history):
        for snapshot in history:
            if plan is not None and _at(snapshot, plan):
                break
            seen |= {task.name for task in snapshot.tasks}
    return seen


async def _areached(history: Any, plan: ResumePlan | None) -> set[str]:
    """Async twin of ``_reached``."""
    seen: set[str] = set()
    async with contextlib.aclosing(history):
        async for snapshot in history:
            if plan is not None and _at(snapshot, plan):
                break
            seen |= {task.name for task in snapshot.tasks}
    return seen


def _at(snapshot: Any, plan: ResumePlan) -> bool:
    return bool(snapshot.config["configurable"]["checkpoint_id"] == plan.checkpoint_id)


def _agree(ok: bool, plan: ResumePlan | None, ran: list[tuple[int, str]], what: str) -> None:
    if not ok:
        pytest.fail(f"plan and run disagree: {what}\nran (step, node): {ran}\nplan:\n{plan}")


class _unobserved:
    """Around the harness's own plan: no log line, and no thread marked as warned about
    (tests count what the call under test logs)."""

    def __init__(self, graph: Any) -> None:
        self.saver = getattr(graph, "checkpointer", None)

    def __enter__(self) -> None:
        self.logger = logging.getLogger("neograph_ext")
        self.disabled, self.logger.disabled = self.logger.disabled, True
        known = WARNED.get(self.saver) if self.saver is not None else None
        self.warned = None if known is None else set(known)

    def __exit__(self, *exc: object) -> None:
        self.logger.disabled = self.disabled
        if self.saver is None:
            return
        with contextlib.suppress(TypeError):  # a saver that cannot be weakly referenced
            if self.warned is None:
                WARNED.pop(self.saver, None)
            else:
                WARNED[self.saver] = self.warned


def _asked(kwargs: dict[str, Any]) -> Asked:
    """What the call under the harness asks for, read without warning a second time."""
    rest = {name: value for name, value in kwargs.items() if name not in ("resume", "lock")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return asked("run", kwargs.get("resume"), kwargs.get("lock"), rest)[0]


def _plan(graph: Any, input: Any, config: RunnableConfig, kwargs: dict[str, Any]) -> ResumePlan:
    """What ``plan(..., input=input)`` returns, through the plan flow itself: tests that
    count what the execution flow reads (``test_continue``) must not count the harness's."""
    call = thread_call(graph, config, _asked(kwargs), input)
    with Driver(call) as driver:
        return driver.run(thread_plan(call))


def _before(graph: Any, input: Any, config: RunnableConfig, kwargs: dict[str, Any]) -> Call:
    try:
        with _unobserved(graph):
            plan = _plan(graph, input, config, kwargs)
    except Exception:
        return Call(None, False)
    given = _given(plan, input)
    if given is None:
        return Call(plan, False)
    return Call(plan, _new_turn(plan, given, _head(graph, config)))


async def _abefore(graph: Any, input: Any, config: RunnableConfig, kwargs: dict[str, Any]) -> Call:
    try:
        with _unobserved(graph):
            call = thread_call(graph, config, _asked(kwargs), input)
            async with AsyncDriver(call) as driver:
                plan = await driver.run(thread_plan(call))
    except Exception:
        return Call(None, False)
    given = _given(plan, input)
    if given is None:
        return Call(plan, False)
    return Call(plan, _new_turn(plan, given, await _ahead(graph, config)))


def _head(graph: Any, config: RunnableConfig) -> Any:
    try:
        return graph.checkpointer.get_tuple(config)
    except Exception:  # an async saver inside a loop: ask its twin
        return None


async def _ahead(graph: Any, config: RunnableConfig) -> Any:
    try:
        return await graph.checkpointer.aget_tuple(config)
    except Exception:
        return None


def _given(plan: ResumePlan, input: Any) -> str | None:
    """The digest of an input that would start a new turn if it differs from the head's:
    None for no input, an answer, a thread with nodes left or none at all."""
    if input is None or isinstance(input, Command) or plan.next_nodes:
        return None
    return None if plan.kind is PlanKind.FRESH else input_digest(input)


def _new_turn(plan: ResumePlan, given: str, head: Any) -> bool:
    """Whether the input digested as ``given`` starts a new turn on ``head``."""
    return head is None or (started_input(head) or plan.turn_input) != given


def install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the harness in place of ``run``, ``arun``, ``stream`` and ``astream``."""
    run, arun, stream, astream = (
        neograph_ext.run,
        neograph_ext.arun,
        neograph_ext.stream,
        neograph_ext.astream,
    )

    def checked_run(graph: Any, input: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        call = _before(graph, input, config, kwargs)
        try:
            result = run(graph, input, call.config(config), **kwargs)
        except BaseException as exc:
            call.check(graph, config, exc)
            raise
        call.check(graph, config, None)
        return result

    async def checked_arun(graph: Any, input: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        call = await _abefore(graph, input, config, kwargs)
        try:
            result = await arun(graph, input, call.config(config), **kwargs)
        except BaseException as exc:
            await _acheck(call, graph, config, exc)
            raise
        await _acheck(call, graph, config, None)
        return result

    def checked_stream(
        graph: Any, input: Any, config: RunnableConfig, **kwargs: Any
    ) -> Iterator[Any]:
        call = _before(graph, input, config, kwargs)
        try:
            yield from stream(graph, input, call.config(config), **kwargs)
        except BaseException as exc:
            if not isinstance(exc, GeneratorExit):
                call.check(graph, config, exc)
            raise
        call.check(graph, config, None)

    async def checked_astream(
        graph: Any, input: Any, config: RunnableConfig, **kwargs: Any
    ) -> AsyncIterator[Any]:
        call = await _abefore(graph, input, config, kwargs)
        try:
            async for chunk in astream(graph, input, call.config(config), **kwargs):
                yield chunk
        except BaseException as exc:
            if not isinstance(exc, GeneratorExit):
                await _acheck(call, graph, config, exc)
            raise
        await _acheck(call, graph, config, None)

    monkeypatch.setattr(neograph_ext, "run", checked_run)
    monkeypatch.setattr(neograph_ext, "arun", checked_arun)
    monkeypatch.setattr(neograph_ext, "stream", checked_stream)
    monkeypatch.setattr(neograph_ext, "astream", checked_astream)


async def _acheck(call: Call, graph: Any, config: RunnableConfig, raised: Any) -> None:
    """Async twin of ``Call.check``."""
    _check_without_state(call, raised)
    call.check_calls(graph, raised)
    if call._rewound(raised):
        state = await graph.aget_state({"configurable": config["configurable"]})
        if not state.next and not state.interrupts:
            call.check_rerun(await _areached(graph.aget_state_history(state.config), call.plan))


def _check_without_state(call: Call, raised: Any) -> None:
    """The checks that need no read of the thread."""
    plan, ran = call.plan, call.executions.tasks
    names = {node for _, node in ran}
    superseded = plan is not None and plan.kind is PlanKind.SUPERSEDED
    refused = isinstance(raised, ThreadSupersededError)
    _agree(superseded == refused, plan, ran, f"planned {plan and plan.kind}, raised {raised!r}")
    if isinstance(raised, WriteReadbackError):  # a step's own failure, after its node ran
        _agree(bool(ran), plan, ran, "a write was verified though no node ran")
        return
    # A budget stops a run inside a task, as a node's own error does: checked like one.
    if isinstance(raised, NeographExtError) and not isinstance(raised, BudgetExceededError):
        # every other error comes before any node runs; an entrypoint's calls matched
        # when they are made are refused as they are made, before any task runs
        made = plan is not None and bool(plan.matched_when_made) and not call.executions.calls
        _agree(not ran or made, plan, ran, "an error of neograph-ext was raised after nodes ran")
        return
    if plan is None or plan.kind is PlanKind.FRESH or call.new_turn or plan.replayed:
        return
    first = {node for step, node in ran if step == min(s for s, _ in ran)} if ran else set()
    waiting = {node for node in plan.next_nodes if not node.startswith("__")}
    if plan.kind is PlanKind.REWIND:
        kept_only = plan.kept - plan.rerun
        _agree(not names & kept_only, plan, ran, f"kept nodes ran: {names & kept_only}")
        _agree(first <= plan.rerun, plan, ran, f"first step ran {first - plan.rerun}")
        return
    if not plan.next_nodes:
        _agree(not ran, plan, ran, "a complete thread given nothing new ran nodes")
        return
    _agree(first <= waiting or not waiting, plan, ran, f"first step ran {first - waiting}")
