"""The decision, told where people look: a LangChain custom event inside the graph's root
run, tags and metadata naming the decision on that run, and, with ``opentelemetry-api``
installed, a log event and counters (``_otel``).

Rules:
- Off unless the graph is compiled with ``attach=[Telemetry()]``: an extra event in an
  event stream, or extra tags on every run, is a difference a drop-in must not make
  (LangGraph's own tests compare ``astream_events`` lists item by item).
- Nothing reaches a checkpoint: the tags and metadata are local to the root run, on the
  config's callback manager, never in ``config["metadata"]``, which LangGraph copies
  into every checkpoint it writes.
- One event per planned call, on its first invocation: a handler local to the root run
  dispatches it when that run starts. It is the manager's last handler, so every other
  handler has seen the run start before the event arrives (LangChain calls a manager's
  handlers in order, its non-inline async ones gathered in order).
- The event's data is plain JSON: strings, lists, ``None``, and one ``int`` (``step``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import (
    AsyncCallbackHandler,
    BaseCallbackHandler,
    BaseCallbackManager,
    CallbackManager,
)
from langchain_core.callbacks.manager import (
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import (
    ensure_config,
    get_callback_manager_for_config,
    merge_configs,
)

from neograph_ext.decision._decision import PlanKind, ResumePlan

_record: Callable[[ResumePlan, dict[str, Any], Any, Any], None] | None
try:
    from neograph_ext.storage._otel import record_decision as _record
except ImportError:  # opentelemetry-api is optional (the ``otel`` extra)
    _record = None

__all__ = [
    "EVENT",
    "AsyncHerald",
    "Herald",
    "Telemetry",
    "atold_outside",
    "decision_metadata",
    "decision_tags",
    "fresh_plan",
    "notice",
    "plan_data",
    "recorded",
    "told",
    "told_outside",
]

EVENT = "neograph_ext.plan"
"""The name of the LangChain custom event, and of the OpenTelemetry log event."""


@dataclass(frozen=True)
class Telemetry:
    """What a planned call tells traces and metrics: ``compile(..., attach=[Telemetry()])``.

    Each planned call (``run`` and its twins, plain calls of an ``auto_resume`` graph)
    then dispatches the LangChain custom event ``neograph_ext.plan`` inside the graph's
    root run, whose tags and metadata name the decision; with ``opentelemetry-api``
    installed, it also emits an OpenTelemetry log event and adds to counters.
    """

    meter_provider: Any = None
    """The OpenTelemetry ``MeterProvider`` the counters are made by; None: the global one."""
    logger_provider: Any = None
    """The OpenTelemetry ``LoggerProvider`` the log event goes to; None: the global one."""


def fresh_plan(thread_id: str) -> ResumePlan:
    """The plan of a thread with no checkpoint yet (an ``auto_resume`` call does not plan
    one: there is nothing to read)."""
    return ResumePlan(PlanKind.FRESH, thread_id)


_NOTICED = frozenset({PlanKind.REWIND, PlanKind.MIGRATE})
"""The decisions a ``custom`` stream is told of: those that change what LangGraph would
run (a rewind, which also asks a question again and sets an answer aside; a migrate)."""


def notice(plan: ResumePlan) -> dict[str, Any] | None:
    """What a call streaming ``custom`` receives first about ``plan``, whatever the
    telemetry: ``{"neograph_ext": <the plan as JSON>}``, for a rewind or a migrate only, so
    a thread nothing changed for streams exactly what LangGraph streams."""
    return {"neograph_ext": plan_data(plan)} if plan.kind in _NOTICED else None


def plan_data(plan: ResumePlan) -> dict[str, Any]:
    """The plan as plain JSON-able data: the custom event's ``data``, the log's body.

    ``head_id`` is the checkpoint planned from (for a rewind, the newest checkpoint of
    the branch it leaves: where the original run ended); ``checkpoint_id`` the one a
    rewind forks from; ``taken_from`` the stamp id of the newer code a take-over (a
    rollback) takes the thread from, so it is not told as any deploy's rewind.
    """
    return {
        "kind": str(plan.kind),
        "thread_id": plan.thread_id,
        "head_id": plan.head_id,
        "checkpoint_id": plan.checkpoint_id,
        "step": plan.step,
        "rerun": list(plan.rerun),
        "kept": list(plan.kept),
        "kept_tasks": list(plan.kept_tasks),
        "migrated": sorted(plan.migrated),
        "replayed": list(plan.replayed),
        "reasons": [
            {
                "node": change.node,
                "reason": str(change.reason),
                "channel": change.channel,
                "diff": list(change.diff),
            }
            for change in plan.changes
        ],
        "taken_from": plan.taken_from,
    }


def decision_tags(plan: ResumePlan) -> list[str]:
    """The root run's tags: ``neograph_ext.decision=<kind>``."""
    return [f"neograph_ext.decision={plan.kind}"]


def decision_metadata(plan: ResumePlan) -> dict[str, str]:
    """The root run's metadata: the decision, and the checkpoints that find the original
    run (the thread id is already there: LangGraph adds ``thread_id``)."""
    metadata = {"neograph_ext.decision": str(plan.kind)}
    if plan.head_id is not None:
        metadata["neograph_ext.head_id"] = plan.head_id
    if plan.checkpoint_id is not None:
        metadata["neograph_ext.checkpoint_id"] = plan.checkpoint_id
    return metadata


def recorded(plan: ResumePlan, telemetry: Telemetry | None) -> ResumePlan:
    """``plan``, recorded in OpenTelemetry when ``telemetry`` is on and ``opentelemetry-api``
    is installed (a log event correlated to the current span, and counters)."""
    if telemetry is not None and _record is not None:
        _record(plan, plan_data(plan), telemetry.meter_provider, telemetry.logger_provider)
    return plan


class Herald(BaseCallbackHandler):
    """Dispatches a plan's event when the root run it is local to starts (sync runs)."""

    def __init__(self, plan: ResumePlan, callbacks: Any) -> None:
        self.plan = plan
        self.callbacks = callbacks
        """The callbacks the run was given: those the event is dispatched to."""
        self.told = False

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Dispatch the event into the run that starts (once: a run starts once)."""
        if not self.told:
            self.told = True
            dispatch_custom_event(EVENT, plan_data(self.plan), config=_within(self, run_id))


class AsyncHerald(AsyncCallbackHandler):
    """Async twin of ``Herald`` (async runs)."""

    def __init__(self, plan: ResumePlan, callbacks: Any) -> None:
        self.plan = plan
        self.callbacks = callbacks
        self.told = False

    async def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        """Async twin of ``Herald.on_chain_start``."""
        if not self.told:
            self.told = True
            await adispatch_custom_event(EVENT, plan_data(self.plan), config=_within(self, run_id))


def told(
    config: RunnableConfig,
    plan: ResumePlan,
    herald: type[Herald] | type[AsyncHerald],
    graph_config: RunnableConfig | None,
) -> RunnableConfig:
    """``config`` for the invocation that carries ``plan``: the callbacks the graph's run
    gets (the graph's own, ``graph_config``'s, and the call's, or those of the run it is
    called in) with ``herald``, the tags and the metadata local to the root run. A new
    config; ``config`` is not mutated.

    The graph's callbacks are merged in here, before ``herald``: LangGraph merges them
    again and skips those already there, so ``herald`` stays the last.
    """
    callbacks = merge_configs(graph_config or {}, config).get("callbacks")
    manager = _manager(callbacks)
    manager.add_tags(decision_tags(plan), inherit=False)
    manager.add_metadata(decision_metadata(plan), inherit=False)
    manager.add_handler(herald(plan, callbacks), inherit=False)
    return {**config, "callbacks": manager}


def told_outside(config: RunnableConfig, plan: ResumePlan) -> None:
    """Dispatch ``plan``'s event for a call that invokes nothing (``run`` of an up-to-date
    thread): into the run the call is made in, if any; there is no graph run to be in."""
    if get_callback_manager_for_config(ensure_config(config)).parent_run_id is not None:
        dispatch_custom_event(EVENT, plan_data(plan), config=ensure_config(config))


async def atold_outside(config: RunnableConfig, plan: ResumePlan) -> None:
    """Async twin of ``told_outside``."""
    if get_callback_manager_for_config(ensure_config(config)).parent_run_id is not None:
        await adispatch_custom_event(EVENT, plan_data(plan), config=ensure_config(config))


def _within(herald: Herald | AsyncHerald, run_id: UUID) -> RunnableConfig:
    """The config whose callbacks dispatch into run ``run_id``: the run's own callbacks,
    with that run as the parent, tagged as the run is."""
    manager = _manager(herald.callbacks)
    manager.parent_run_id = run_id
    plan = herald.plan
    return {"callbacks": manager, "tags": decision_tags(plan), "metadata": decision_metadata(plan)}


def _manager(callbacks: Any) -> BaseCallbackManager:
    """A manager of ``callbacks`` (a manager, a list of handlers, or None), to add to
    without changing the caller's."""
    if isinstance(callbacks, BaseCallbackManager):
        return callbacks.copy()
    handlers = list(callbacks or [])
    return CallbackManager(handlers=handlers, inheritable_handlers=list(handlers))
