"""A thread's budget ledger, stored with the thread, outside what a rewind restores.

Rules:
- The ledger lives in the thread itself, in a namespace of its own
  (``LEDGER_NS``) beside the root namespace and the subgraphs' ones: every reader of the
  graph's checkpoints names the root namespace (``checkpoint_ns=""``), LangGraph's
  time travel included, so no rewind, fork or state read ever sees or restores it, and
  ``delete_thread`` removes it with the thread.
- Each write appends a checkpoint holding the whole cumulative ledger (``_budget``
  encodes it); nothing is overwritten. Reading merges every one of them
  (``_budget.merged``: the larger of each count), so a write made from an older copy
  never lowers what a later one recorded.
- Written and read through the saver's public ``put`` / ``list`` only, so every
  ``BaseCheckpointSaver`` keeps it. Written from the counting callback only, which is
  sync in every run (``_spend``); read by sync and async twins that differ by ``await``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    empty_checkpoint,
)

from neograph_ext._budget import Ledger, decode_ledger, encode_ledger, merged

__all__ = ["LEDGER_NS", "aread_ledger", "read_ledger", "write_ledger"]

LEDGER_NS = "neograph-ext-budget"
"""The checkpoint namespace of a thread's ledger (no ``:``, so no task's namespace)."""

_CHANNEL = "ledger"


def read_ledger(saver: BaseCheckpointSaver[Any], thread_id: str) -> Ledger | None:
    """The thread's ledger, None when nothing was ever counted on it.

    Args:
        saver: The checkpointer holding the thread.
        thread_id: The thread.
    """
    return _merged(saver.list(_config(thread_id)))


async def aread_ledger(saver: BaseCheckpointSaver[Any], thread_id: str) -> Ledger | None:
    """Async twin of ``read_ledger``."""
    return _merged([tup async for tup in saver.alist(_config(thread_id))])


def write_ledger(saver: BaseCheckpointSaver[Any], thread_id: str, ledger: Ledger) -> None:
    """Append ``ledger`` to the thread's stored ledger.

    Args:
        saver: The checkpointer holding the thread.
        thread_id: The thread.
        ledger: The whole cumulative ledger.
    """
    saver.put(*_write(saver, thread_id, ledger))


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": LEDGER_NS}}


def _write(
    saver: BaseCheckpointSaver[Any], thread_id: str, ledger: Ledger
) -> tuple[RunnableConfig, Checkpoint, CheckpointMetadata, dict[str, Any]]:
    version = saver.get_next_version(None, None)
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {_CHANNEL: encode_ledger(ledger)}
    checkpoint["channel_versions"] = {_CHANNEL: version}
    metadata: CheckpointMetadata = {"source": "update", "step": -1, "parents": {}}
    return _config(thread_id), checkpoint, metadata, {_CHANNEL: version}


def _merged(tuples: Iterable[CheckpointTuple]) -> Ledger | None:
    found = [
        ledger
        for tup in sorted(tuples, key=lambda tup: tup.checkpoint["id"])
        if (ledger := decode_ledger(tup.checkpoint.get("channel_values", {}).get(_CHANNEL)))
        is not None
    ]
    return merged(found) if found else None
