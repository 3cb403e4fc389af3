"""Stamp descriptions, stored once per distinct stamp beside the checkpoints.

Rules:
- Checkpoint metadata carries a stamp's id only (``_stamp``); its description, every
  fingerprint and type signature, is stored content-addressed: one checkpoint of a
  reserved thread per stamp id, written and read through the saver's public
  ``put`` / ``get_tuple``, so every ``BaseCheckpointSaver`` keeps it, including one
  injected at run time.
- Writing is idempotent (same thread, same checkpoint id, same content), so racing
  writers and repeated compiles are harmless. Reading names the checkpoint id too, so a
  graph's own checkpoints written on such a thread never hide it; ``run``, ``plan``,
  ``accept`` and their twins refuse a reserved thread id (``reserved``).
- A description read back is parsed like any stored stamp and must carry the id it
  is filed under; one that is missing or wrong is reported missing, and planning
  then counts what it covers as changed, never as unchanged.
- Only this module knows the layout; sync and async twins differ by ``await`` alone.
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

from neograph_ext._stamp import Stamp, read_description

__all__ = ["THREAD_PREFIX", "aload", "asave", "is_store_thread", "load", "reserved", "save"]

THREAD_PREFIX = "neograph-ext-stamp:"
"""Thread id of a description: this prefix and the stamp id. Not a graph's thread."""

_CHECKPOINT_ID = "00000000-0000-6000-8000-000000000000"
"""Every description is the one checkpoint of its thread, so every write is the same."""
_CHANNEL = "description"


def is_store_thread(thread_id: object) -> bool:
    """Whether a thread id names a stored stamp description rather than a graph's thread.

    neograph-ext keeps each stamp's description in a thread of its own beside the
    graph's threads (``neograph-ext-stamp:<id>``); every public entry point refuses
    such an id. Skip them when listing a database's threads.
    """
    return isinstance(thread_id, str) and thread_id.startswith(THREAD_PREFIX)


def reserved(thread_id: str) -> str:
    """The message refusing a graph call on a description's thread."""
    return (
        f"thread id {thread_id!r} is reserved: neograph-ext stores a stamp description "
        f"under every thread id starting with {THREAD_PREFIX!r}; use another thread_id"
    )


def save(saver: BaseCheckpointSaver[Any], stamp: Stamp) -> None:
    """Store ``stamp``'s description in ``saver``.

    Args:
        saver: The checkpointer the graph's checkpoints go to.
        stamp: The graph's stamp.
    """
    saver.put(*_write(saver, stamp))


async def asave(saver: BaseCheckpointSaver[Any], stamp: Stamp) -> None:
    """Async twin of ``save``."""
    await saver.aput(*_write(saver, stamp))


def load(saver: BaseCheckpointSaver[Any], ids: Iterable[str]) -> dict[str, Stamp]:
    """The stored descriptions of ``ids``, each read once; missing ones are left out.

    Args:
        saver: The checkpointer holding the thread planned.
        ids: Stamp ids found on the thread's checkpoints.
    """
    return _found({stamp_id: saver.get_tuple(_config(stamp_id)) for stamp_id in set(ids)})


async def aload(saver: BaseCheckpointSaver[Any], ids: Iterable[str]) -> dict[str, Stamp]:
    """Async twin of ``load``."""
    return _found({stamp_id: await saver.aget_tuple(_config(stamp_id)) for stamp_id in set(ids)})


def _config(stamp_id: str) -> RunnableConfig:
    # By checkpoint id: a plain graph call on the thread (which only ``run`` and its
    # twins refuse) writes newer checkpoints there, and must not hide the description.
    return {
        "configurable": {
            "thread_id": THREAD_PREFIX + stamp_id,
            "checkpoint_ns": "",
            "checkpoint_id": _CHECKPOINT_ID,
        }
    }


def _write(
    saver: BaseCheckpointSaver[Any], stamp: Stamp
) -> tuple[RunnableConfig, Checkpoint, CheckpointMetadata, dict[str, Any]]:
    version = saver.get_next_version(None, None)
    checkpoint = empty_checkpoint()
    checkpoint["id"] = _CHECKPOINT_ID
    checkpoint["channel_values"] = {_CHANNEL: stamp.encode()}
    checkpoint["channel_versions"] = {_CHANNEL: version}
    metadata: CheckpointMetadata = {"source": "update", "step": -1, "parents": {}}
    return _config(stamp.id), checkpoint, metadata, {_CHANNEL: version}


def _found(tuples: dict[str, CheckpointTuple | None]) -> dict[str, Stamp]:
    found = {}
    for stamp_id, tup in tuples.items():
        raw = tup.checkpoint.get("channel_values", {}).get(_CHANNEL) if tup else None
        stamp = read_description(raw) if isinstance(raw, str) else None
        if isinstance(stamp, Stamp) and stamp.id == stamp_id:
            found[stamp_id] = stamp
    return found
