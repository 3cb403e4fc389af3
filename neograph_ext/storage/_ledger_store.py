"""A thread's budget ledger, stored with the thread, outside what a rewind restores.

Rules:
- The ledger lives in the thread itself, in a namespace of its own
  (``LEDGER_NS``) beside the root namespace and the subgraphs' ones: every reader of the
  graph's checkpoints names the root namespace (``checkpoint_ns=""``), LangGraph's
  time travel included, so no rewind, fork or state read ever sees or restores it, and
  ``delete_thread`` removes it with the thread.
- Each invocation of a budgeted graph keeps one record there (a checkpoint holding the
  whole cumulative ledger, as ``_budget`` encodes it), rewritten as it grows, each time
  with a new channel version: it only ever grows, and starts from the merged ledger of
  every earlier record. Reading merges the newest ``RECENT`` records (``_budget.merged``:
  the larger of each count): a record written from an older copy never lowers another,
  and an older record's later spend is missed only if more than ``RECENT`` invocations
  of one thread overlapped (``run`` and ``auto_resume`` calls hold the thread's lock, so
  theirs never do). The read costs the same however long the thread.
- Written and read through the saver's public ``put`` / ``list`` only, so every
  ``BaseCheckpointSaver`` keeps it. Written from the counting callback only, which is
  sync in every run (``_spend``); read by one flow (``_query``), run sync or async.
- LangGraph's async savers (``AsyncSqliteSaver``, ``AsyncPostgresSaver``; checked on
  checkpoint-sqlite 3.1 and checkpoint-postgres 3.2) run a sync call on their own loop
  (``saver.loop``) and wait for it: called from that loop's thread (sync code inside an
  async node) it would wait forever. There a write is scheduled on the loop instead,
  after the writes scheduled before it (``write_ledger_soon``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    empty_checkpoint,
)

from neograph_ext.decision._budget import Ledger, decode_ledger, encode_ledger, merged
from neograph_ext.decision._query import Flow, Listing
from neograph_ext.storage._storage import bound

__all__ = [
    "LEDGER_NS",
    "RECENT",
    "LedgerRecord",
    "aread_ledger",
    "blocks_on_loop",
    "ledger_of",
    "new_record",
    "read_ledger",
    "write_ledger",
    "write_ledger_soon",
]

LEDGER_NS = "neograph-ext-budget"
"""The checkpoint namespace of a thread's ledger (no ``:``, so no task's namespace)."""

_CHANNEL = "ledger"

RECENT = 32
"""Records merged by a read: the newest, each holding what every record before it held
when its invocation started."""


def ledger_of(saver: BaseCheckpointSaver[Any], thread_id: str) -> Flow[Ledger | None]:
    """The thread's ledger, None when nothing was ever counted on it."""
    return _merged((yield Listing(_config(thread_id), limit=RECENT)))


read_ledger, aread_ledger = bound(ledger_of)


class LedgerRecord(NamedTuple):
    """Where one invocation keeps its ledger: its checkpoint in the ledger's namespace."""

    checkpoint_id: str
    """Made when the invocation starts (``new_record``)."""
    version: Any = None
    """The channel version of its last write; None before the first."""


def new_record() -> LedgerRecord:
    """A record for a new invocation: a checkpoint id newer than every earlier one."""
    return LedgerRecord(empty_checkpoint()["id"])


def write_ledger(
    saver: BaseCheckpointSaver[Any], thread_id: str, record: LedgerRecord, ledger: Ledger
) -> LedgerRecord:
    """Write ``ledger`` as the invocation's ``record`` of the thread's ledger.

    Args:
        saver: The checkpointer holding the thread.
        thread_id: The thread.
        record: The invocation's record, as the previous write returned it.
        ledger: The whole cumulative ledger, no smaller than the record's last.

    Returns:
        The record, for the next write.
    """
    version = saver.get_next_version(record.version, None)
    saver.put(*_write(thread_id, record.checkpoint_id, version, ledger))
    return LedgerRecord(record.checkpoint_id, version)


def blocks_on_loop(saver: BaseCheckpointSaver[Any]) -> bool:
    """Whether ``saver``'s sync calls would wait on this thread's running loop (an async
    saver's, called from its loop's thread): then write with ``write_ledger_soon``."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return False
    return getattr(saver, "loop", None) is running


def write_ledger_soon(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    record: LedgerRecord,
    ledger: Ledger,
    after: asyncio.Task[None] | None,
) -> tuple[LedgerRecord, asyncio.Task[None]]:
    """``write_ledger``, scheduled on the running loop once ``after`` is done.

    Returns:
        The record for the next write, and the task writing this one.
    """
    version = saver.get_next_version(record.version, None)
    args = _write(thread_id, record.checkpoint_id, version, ledger)

    async def written() -> None:
        if after is not None:
            await after
        await saver.aput(*args)

    return LedgerRecord(record.checkpoint_id, version), asyncio.create_task(written())


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": LEDGER_NS}}


def _write(
    thread_id: str, checkpoint_id: str, version: Any, ledger: Ledger
) -> tuple[RunnableConfig, Checkpoint, CheckpointMetadata, dict[str, Any]]:
    checkpoint = empty_checkpoint()
    checkpoint["id"] = checkpoint_id
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
