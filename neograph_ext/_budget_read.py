"""What a thread spent, read for people: the public ``ledger`` reader and the cost a
plan estimates for a rewind.

Rules:
- Reads only (``_ledger_store``); the arithmetic is ``_budget``'s.
- A rewind re-runs tasks whose nodes already ran: their cost again is estimated from
  what the ledger recorded for those nodes' last executions (``_budget.estimated``),
  when the graph planning has a budget; without one, ``plan`` reads what it always did.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.pregel import Pregel

from neograph_ext.decision._budget import Ledger, estimated
from neograph_ext.decision._decision import PlanKind, ResumePlan
from neograph_ext.decision._operations import Flow, Store
from neograph_ext.drivers._thread import ThreadCall, checkpointer_of, thread_of
from neograph_ext.storage._ledger_store import aread_ledger, read_ledger

__all__ = ["aledger", "costed", "ledger"]


def ledger(
    source: Pregel[Any, Any, Any, Any] | BaseCheckpointSaver[Any], config: RunnableConfig
) -> Ledger | None:
    """What the thread in ``config`` spent, as its budget ledger recorded it: in total,
    per turn, and per node on its last execution. Executes and writes nothing.

    Args:
        source: A graph with a checkpointer, or the checkpointer itself.
        config: Names the thread (``configurable.thread_id``).

    Returns:
        The ledger; None when the thread was never run by a graph with a ``Budget``.

    Raises:
        GraphError: The graph has no checkpointer, or the config names no thread.
    """
    saver = source if isinstance(source, BaseCheckpointSaver) else checkpointer_of(source)
    return read_ledger(saver, thread_of(config))


async def aledger(
    source: Pregel[Any, Any, Any, Any] | BaseCheckpointSaver[Any], config: RunnableConfig
) -> Ledger | None:
    """Async twin of ``ledger``."""
    saver = source if isinstance(source, BaseCheckpointSaver) else checkpointer_of(source)
    return await aread_ledger(saver, thread_of(config))


def costed(call: ThreadCall, plan: ResumePlan) -> Flow[ResumePlan]:
    """``plan`` with its ``estimated_cost``, for a rewind by a graph with a budget (a
    graph without one reads nothing more than it did before budgets)."""
    if plan.kind is not PlanKind.REWIND or call.graph.neograph_ext_budget is None:
        return plan
    read = Store(read_ledger, aread_ledger, (call.saver, plan.thread_id))
    return _with_cost(plan, (yield read))


def _with_cost(plan: ResumePlan, recorded: Ledger | None) -> ResumePlan:
    if recorded is None:
        return plan
    steps = [(task.node, task.step) for task in plan.steps if not task.kept]
    if not plan.steps:  # no per-step account: each re-run node once, a step each
        steps = [(node, index) for index, node in enumerate(sorted(plan.rerun))]
    return replace(plan, estimated_cost=estimated(recorded, steps))
