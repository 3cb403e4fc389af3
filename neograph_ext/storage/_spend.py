"""Counting a budgeted graph's spend where it happens, through LangChain's callbacks.

Rules:
- ``counting`` adds one callback handler to a root invocation of a graph compiled with
  a ``Budget``; callbacks reach every run inside it (nodes, subgraphs, tools, chat
  models), so every chat-model call made inside the graph is counted, however deep.
- Supersteps are the graph's own: a task whose run is a direct child of the graph's run
  starts a superstep when its ``langgraph_step`` differs from the last one seen. Model
  calls are counted as they start (``on_chat_model_start``), tokens as they end, from
  the ``usage_metadata`` of the message each call returned.
- A cap is checked before the superstep or call that would pass it; the handler raises
  ``BudgetExceededError`` there (``raise_error``), which fails the task before its node
  or its call runs, as any error of a node does: the thread stays resumable. LangChain's
  callback manager logs a handler's error before it re-raises it ("Error in
  SpendCounter.on_chat_model_start callback: ...", langchain-core 1.0 to 1.8); that line
  of a stop is dropped (``_told_by_the_error``), so the stop reaches the user once, as
  the error. Any other error of the handler is still logged.
- The ledger is read from the thread when the graph's run starts and written back after
  every change (``_ledger_store``), so a kill loses only what changed since the last
  write finished. ``_Tally`` holds the bookkeeping, ``SpendCounter`` the I/O.
- One handler, sync, for sync and async runs alike: LangChain drives an async handler
  from sync code (a sync node or model inside an async run) on a loop of its own and
  swallows its errors, so it could neither stop the run nor use an async saver. A sync
  handler's errors propagate both ways, and an async run calls it in a worker thread,
  from where an async saver's sync methods reach the saver's loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping
from typing import Any, Literal
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.checkpoint.base import BaseCheckpointSaver

from neograph_ext.decision._budget import Budget, Exceeded, Ledger
from neograph_ext.decision._errors import BudgetExceededError
from neograph_ext.decision._langgraph import TASK_ID_KEY
from neograph_ext.storage._ledger_store import (
    blocks_on_loop,
    new_record,
    read_ledger,
    write_ledger,
    write_ledger_soon,
)

__all__ = ["SpendCounter", "counting"]

_CALLBACKS_LOG = logging.getLogger("langchain_core.callbacks.manager")
"""Where LangChain's callback manager logs a handler's error, also one it re-raises."""


def counting(
    config: RunnableConfig,
    budget: Budget | None,
    saver: object,
    new_turn: bool,
) -> RunnableConfig:
    """``config`` with a handler counting the invocation's spend, when ``budget`` is set
    and the invocation is a root one of a thread on ``saver``; else ``config`` itself.

    Args:
        config: The invocation's config, as the graph stamps it.
        budget: The graph's budget.
        saver: The graph's checkpointer.
        new_turn: Whether the invocation starts a turn (it has an input to start with).
    """
    configurable = config.get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if budget is None or not isinstance(saver, BaseCheckpointSaver) or thread_id is None:
        return config
    if configurable.get("checkpoint_ns") or TASK_ID_KEY in configurable:
        return config  # a subgraph's task: its spend counts for the root graph's
    tally = _Tally(budget, str(thread_id), new_turn)
    return merge_configs(config, {"callbacks": [SpendCounter(tally, saver)]})


class _Tally:
    """One invocation's counting: the ledger and which run belongs to which node."""

    def __init__(self, budget: Budget, thread_id: str, new_turn: bool) -> None:
        self.budget = budget
        self.thread_id = thread_id
        self.new_turn = new_turn
        self.ledger = Ledger()
        self.root: UUID | None = None
        self._step: object = None
        self._owners: dict[UUID, str | None] = {}
        """Per run inside the graph, the node whose task it runs in."""

    def started(self, run_id: UUID, stored: Ledger | None) -> bool:
        """The graph's run started with the thread's ``stored`` ledger; whether the
        ledger changed (a new turn)."""
        self.root, self.ledger = run_id, stored or Ledger()
        if self.new_turn or not self.ledger.turns:
            self.ledger = self.ledger.new_turn()
            return True
        return False

    def run_started(
        self, run_id: UUID, parent: UUID | None, metadata: Mapping[str, Any] | None
    ) -> bool:
        """A run inside the graph started; whether the ledger changed (a superstep).

        Raises:
            BudgetExceededError: The run starts a superstep that would pass a cap.
        """
        if parent != self.root or metadata is None or "langgraph_node" not in metadata:
            self._owners[run_id] = self._owners.get(parent) if parent is not None else None
            return False
        node = str(metadata["langgraph_node"])
        self._owners[run_id] = node
        step = metadata.get("langgraph_step")
        if step == self._step:
            self.ledger = self.ledger.node_started(node)
            return False
        self._check(self.ledger.exceeded(self.budget, "step"), "superstep")
        self._step = step
        self.ledger = self.ledger.step_started().node_started(node)
        return True

    def call_started(self, run_id: UUID, parent: UUID | None) -> None:
        """A chat-model call starts; counted at once.

        Raises:
            BudgetExceededError: The call would pass a cap.
        """
        node = self._owners.get(parent) if parent is not None else None
        self._owners[run_id] = node
        self._check(self.ledger.exceeded(self.budget, "call"), "model call")
        self.ledger = self.ledger.call_started(node)

    def call_ended(self, run_id: UUID, response: LLMResult) -> bool:
        """A chat-model call ended; whether it reported tokens."""
        tokens = sum(
            generation.message.usage_metadata.get("total_tokens", 0)
            for generations in response.generations
            for generation in generations
            if isinstance(generation, ChatGeneration)
            and isinstance(generation.message, AIMessage)
            and generation.message.usage_metadata
        )
        if not tokens:
            return False
        self.ledger = self.ledger.call_ended(self._owners.get(run_id), tokens)
        return True

    def _check(self, exceeded: Exceeded | None, what: Literal["superstep", "model call"]) -> None:
        if exceeded is None:
            return
        scope = "in its current turn" if exceeded.per == "turn" else "in total"
        raise BudgetExceededError(
            f"thread {self.thread_id!r} stopped before a {what} that would pass its "
            f"budget: {exceeded.cap}={exceeded.limit}, and the thread spent {exceeded.spent} "
            f"{scope}. The thread is resumable: compile the graph with a larger cap "
            f"(attach=[Budget({exceeded.cap}=...)]) and call run again to continue",
            self.thread_id,
            exceeded.cap,
            exceeded.limit,
            exceeded.spent,
        )


class SpendCounter(BaseCallbackHandler):
    """Counts an invocation's spend into the thread's ledger (``_Tally``)."""

    raise_error = True
    """A cap that would be passed stops the run (LangChain re-raises the handler's error)."""

    def __init__(self, tally: _Tally, saver: BaseCheckpointSaver[Any]) -> None:
        self._tally = tally
        self._saver = saver
        self._record = new_record()
        self._soon: asyncio.Task[None] | None = None
        """The last write scheduled on an async saver's loop (``write_ledger_soon``)."""
        self._lock = threading.Lock()  # parallel tasks call back from several threads
        _CALLBACKS_LOG.addFilter(_told_by_the_error)  # once: a filter is added only once

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """The graph's run (the first) reads the ledger; a task may start a superstep."""
        tally = self._tally
        with self._lock:
            if tally.root is None:
                changed = tally.started(run_id, read_ledger(self._saver, tally.thread_id))
            else:
                changed = tally.run_started(run_id, parent_run_id, metadata)
            if changed:
                self._write()

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """A tool's calls belong to the node running it."""
        with self._lock:
            self._tally.run_started(run_id, parent_run_id, None)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Checks and counts a model call before it is made."""
        tally = self._tally
        with self._lock:
            tally.call_started(run_id, parent_run_id)
            self._write()

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Counts the tokens a model call reported."""
        tally = self._tally
        with self._lock:
            if tally.call_ended(run_id, response):
                self._write()

    def _write(self) -> None:
        tally, saver = self._tally, self._saver
        if not blocks_on_loop(saver):
            self._record = write_ledger(saver, tally.thread_id, self._record, tally.ledger)
        else:  # sync code on the loop of an async saver: waiting would block the loop
            self._record, self._soon = write_ledger_soon(
                saver, tally.thread_id, self._record, tally.ledger, self._soon
            )


def _told_by_the_error(record: logging.LogRecord) -> bool:
    """Whether a log record of LangChain's callback manager is kept: not the line it logs
    for a ``BudgetExceededError`` it then re-raises to the caller."""
    message = record.getMessage()
    return not (
        message.startswith(f"Error in {SpendCounter.__name__}.")
        and f" callback: {BudgetExceededError.__name__}(" in message
    )
