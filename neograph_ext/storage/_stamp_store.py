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
- A description is written as LangGraph writes a checkpoint: the stamp's reference in
  the config's metadata, for the saver's ``put`` to merge. Read back (``verify``), it
  tells whether the saver keeps what LangGraph passes that way, once per saver class
  and process: a saver that loses it is a ``StampLostError``, never a silent
  ``unverified`` thread.
- Only this module knows the layout (but the reserved threads' prefix, which the
  readers of the saver's tables skip: ``_storage_rows``); each read and write is one
  flow (``_query``), its sync and async entry points made by ``_storage.bound``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    empty_checkpoint,
)

from neograph_ext.decision._errors import StampLostError
from neograph_ext.decision._query import Call, Flow
from neograph_ext.decision._stamp import STAMP_KEY, Stamp, read_description, stamp_ref
from neograph_ext.storage._storage import bound
from neograph_ext.storage._storage_rows import THREAD_PREFIX, is_store_thread

__all__ = [
    "THREAD_PREFIX",
    "aload",
    "asave",
    "averify",
    "is_store_thread",
    "load",
    "reserved",
    "save",
    "verify",
]

_CHECKPOINT_ID = "00000000-0000-6000-8000-000000000000"
"""Every description is the one checkpoint of its thread, so every write is the same."""
_CHANNEL = "description"

_KEEPING: set[type[BaseCheckpointSaver[Any]]] = set()
"""Saver classes found to keep config metadata, in this process: each is checked once."""


def reserved(thread_id: str) -> str:
    """The message refusing a graph call on a description's thread."""
    return (
        f"thread id {thread_id!r} is reserved: neograph-ext stores a stamp description "
        f"under every thread id starting with {THREAD_PREFIX!r}; use another thread_id"
    )


def _save(saver: BaseCheckpointSaver[Any], stamp: Stamp) -> Flow[None]:
    """Store ``stamp``'s description in ``saver`` (the checkpointer the graph's
    checkpoints go to)."""
    yield Call("put", _write(saver, stamp))


save, asave = bound(_save)


def _verify(saver: BaseCheckpointSaver[Any], stamp: Stamp) -> Flow[None]:
    """Check, once per saver class and process, that ``saver`` kept the stamp that
    ``save`` passed it in the config's metadata, as LangGraph passes it.

    Raises:
        StampLostError: The description read back lacks the stamp's reference.
    """
    if type(saver) not in _KEEPING:
        _kept(saver, stamp, (yield Call("get_tuple", (_config(stamp.id),))))


verify, averify = bound(_verify)


def _kept(saver: BaseCheckpointSaver[Any], stamp: Stamp, tup: CheckpointTuple | None) -> None:
    metadata = tup.metadata if tup is not None else None
    if isinstance(metadata, Mapping) and metadata.get(STAMP_KEY) == stamp_ref(stamp):
        _KEEPING.add(type(saver))
        return
    kind = type(saver)
    lost = (
        "does not return the checkpoint it was just given"
        if tup is None
        else "drops the config metadata LangGraph passes to put() (it does not merge "
        "config['metadata'] into the checkpoint's metadata, as LangGraph's own savers do "
        "with get_checkpoint_metadata(config, metadata))"
    )
    raise StampLostError(
        f"checkpointer {kind.__module__}.{kind.__qualname__} {lost}: neograph-ext's stamp "
        f"(metadata key {STAMP_KEY!r}) would be lost from every checkpoint, every thread "
        "would plan as unverified and strict mode could not catch a change. Fix the "
        "saver's put, use another saver, or compile(..., attach=[WriteChecks(saver=False)]) "
        "to accept unverified threads on it"
    )


def _load(saver: BaseCheckpointSaver[Any], ids: Iterable[str]) -> Flow[dict[str, Stamp]]:
    """The stored descriptions of ``ids`` (stamp ids found on the thread's checkpoints),
    each read once; missing ones are left out."""
    found = {}
    for stamp_id in set(ids):
        found[stamp_id] = yield Call("get_tuple", (_config(stamp_id),))
    return _found(found)


load, aload = bound(_load)


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


def _put_config(stamp: Stamp) -> RunnableConfig:
    """Where a description is written, with the stamp's reference where LangGraph puts it
    for every checkpoint of a stamped graph: in the config's metadata."""
    return {**_config(stamp.id), "metadata": {STAMP_KEY: stamp_ref(stamp)}}


def _write(
    saver: BaseCheckpointSaver[Any], stamp: Stamp
) -> tuple[RunnableConfig, Checkpoint, CheckpointMetadata, dict[str, Any]]:
    version = saver.get_next_version(None, None)
    checkpoint = empty_checkpoint()
    checkpoint["id"] = _CHECKPOINT_ID
    checkpoint["channel_values"] = {_CHANNEL: stamp.encode()}
    checkpoint["channel_versions"] = {_CHANNEL: version}
    metadata: CheckpointMetadata = {"source": "update", "step": -1, "parents": {}}
    return _put_config(stamp), checkpoint, metadata, {_CHANNEL: version}


def _found(tuples: dict[str, CheckpointTuple | None]) -> dict[str, Stamp]:
    found = {}
    for stamp_id, tup in tuples.items():
        raw = tup.checkpoint.get("channel_values", {}).get(_CHANNEL) if tup else None
        stamp = read_description(raw) if isinstance(raw, str) else None
        if isinstance(stamp, Stamp) and stamp.id == stamp_id:
            found[stamp_id] = stamp
    return found
