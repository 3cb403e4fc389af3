"""Rows of a saver's tables as the ``CheckpointTuple``s the lineage walk reads, written
once for every backend (``_storage_sqlite``, ``_storage_postgres``).

Rules:
- Pure: rows in, tuples out; the serializer is the saver's, handed in.
- A batch is read and decoded with the cyclic garbage collector paused
  (``collector_paused``).
- A light checkpoint keeps what ``_history.lineage`` reads of a checkpoint: ``v``,
  ``id``, ``versions_seen``, ``channel_versions``, and of ``channel_values`` only the
  channels holding None, the queued ``Send``s and a turn's input. SQLite's keeps the
  few small fields beside them (``ts``, ``updated_channels``) rather than copy the map
  it unpacked. Under ``HELD_CLASSES`` it keeps the class path of each stored object it
  left undecoded (``stored_class``): which member of a union a step wrote.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

from neograph_ext.decision._history import HELD_CLASSES
from neograph_ext.decision._langgraph import TASKS_CHANNEL
from neograph_ext.decision._typeforms import class_path

__all__ = [
    "EXT_MARKERS",
    "KEPT_VALUES",
    "THREAD_PREFIX",
    "WALKED",
    "Writes",
    "collector_paused",
    "grouped_writes",
    "held_classes",
    "is_store_thread",
    "light_checkpoint",
    "stored_class",
    "thread_config",
    "walked_tuple",
]

WALKED = ("v", "id", "ts", "versions_seen", "channel_versions")
"""The fields of a checkpoint the lineage walk reads, but for its values."""

KEPT_VALUES = (TASKS_CHANNEL, "__start__")
"""The channels whose values the walk reads: the ``Send``s a step queued (their
nodes ran in the next step) and a turn's input (its digest says which turn)."""

THREAD_PREFIX = "neograph-ext-stamp:"
"""Thread id of a stamp description (``_stamp_store``): this prefix and the stamp id.
Not a graph's thread."""


def is_store_thread(thread_id: object) -> bool:
    """Whether a thread id names a stored stamp description rather than a graph's thread.

    neograph-ext keeps each stamp's description in a thread of its own beside the
    graph's threads (``neograph-ext-stamp:<id>``); every public entry point refuses
    such an id. Skip them when listing a database's threads.
    """
    return isinstance(thread_id, str) and thread_id.startswith(THREAD_PREFIX)


Writes = list[tuple[str, str, Any]]
"""Pending writes as a ``CheckpointTuple`` holds them: ``(task id, channel, value)``."""


def light_checkpoint(
    checkpoint: Mapping[str, Any], values: Mapping[str, Any], held: Mapping[str, str]
) -> dict[str, Any]:
    """``checkpoint``'s walked fields, with ``values`` for its ``channel_values`` and
    ``held`` (channel -> class path of its undecoded value) under ``HELD_CLASSES``."""
    light = {key: checkpoint[key] for key in WALKED if checkpoint.get(key) is not None}
    light["channel_values"] = values
    light[HELD_CLASSES] = held
    return light


_EXT_HEADERS = {0xD4: 2, 0xD5: 2, 0xD6: 2, 0xD7: 2, 0xD8: 2, 0xC7: 3, 0xC8: 4, 0xC9: 6}
"""msgpack's extension markers, each with the bytes its header takes (type code included)."""
_CLASS_CODES = range(6)
"""The serializer's extension codes of a revived class (``EXT_CONSTRUCTOR_SINGLE_ARG`` to
``EXT_PYDANTIC_V2``: ``langgraph.checkpoint.serde.jsonplus``)."""
EXT_MARKERS = tuple(_EXT_HEADERS)
"""The first bytes of a stored extension value (an object the serializer revives)."""
_ARRAY_HEADERS = {0xDC: 3, 0xDD: 5}
_STR_HEADERS = {0xD9: (1, 2), 0xDA: (2, 3), 0xDB: (4, 5)}
"""str8/16/32: the bytes of the length and of the whole header."""


def held_classes(values: Mapping[str, Any]) -> dict[str, str]:
    """Channel -> class path of each decoded value of ``values`` of a class outside
    ``builtins`` (as ``_history`` reads it of a saver's own tuple)."""
    return {
        name: class_path(type(value))
        for name, value in values.items()
        if type(value).__module__ != "builtins"
    }


def stored_class(data: bytes, code: int | None = None) -> str | None:
    """``module:name`` of the object LangGraph's serializer stored as ``data``, read from
    its first bytes without reviving it: every class it revives is an extension value
    holding a tuple that starts with the class's module and name. ``code``: the
    extension's type code, when ``data`` is what an ``ext_hook`` is given (the tuple);
    without it, ``data`` is a stored blob, starting with the extension's header. None
    for anything else (another extension: a ``DeltaChannel``'s snapshot, an array)."""
    try:
        at = 0 if code is not None else _EXT_HEADERS[data[0]]
        if (data[at - 1] if code is None else code) not in _CLASS_CODES:
            return None
        head = data[at]
        at += 1 if 0x90 <= head <= 0x9F else _ARRAY_HEADERS[head]
        module, at = _string(data, at)
        name, _ = _string(data, at)
    except (KeyError, IndexError, UnicodeDecodeError):
        return None
    return f"{module}:{name}"


def _string(data: bytes, at: int) -> tuple[str, int]:
    head = data[at]
    if 0xA0 <= head <= 0xBF:
        size, start = head & 0x1F, at + 1
    else:
        width, header = _STR_HEADERS[head]
        size, start = int.from_bytes(data[at + 1 : at + 1 + width], "big"), at + header
    if start + size > len(data):
        raise IndexError(at)
    return data[start : start + size].decode(), start + size


def thread_config(thread_id: str, checkpoint_id: str) -> RunnableConfig:
    """The config naming a root-namespace checkpoint, as the savers build it."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": checkpoint_id,
        }
    }


def walked_tuple(
    thread_id: str,
    checkpoint_id: str,
    parent_id: str | None,
    checkpoint: dict[str, Any],
    metadata: Any,
    writes: Writes,
) -> CheckpointTuple:
    """A checkpoint as the savers return it, from what was read of it."""
    parent = thread_config(thread_id, parent_id) if parent_id else None
    config = thread_config(thread_id, checkpoint_id)
    return CheckpointTuple(config, checkpoint, metadata, parent, writes)  # type: ignore[arg-type]


def grouped_writes(rows: Iterable[Sequence[Any]], serde: Any) -> dict[tuple[str, str], Writes]:
    """``(thread id, checkpoint id, task id, channel, type, value)`` rows as each
    checkpoint's pending writes, by ``(thread id, checkpoint id)``; a value whose type
    is None is None. A checkpoint's rows come together, sorted by the SQL as the savers
    return them (task path, task id, index: the order a step applied them); rows of a
    checkpoint read again later (with their values) replace those read before."""
    grouped: dict[tuple[str, str], Writes] = {}
    key: tuple[str, str] | None = None
    found: Writes = []
    for thread_id, checkpoint_id, task, channel, kind, value in rows:
        if key is None or key[0] != thread_id or key[1] != checkpoint_id:
            key, found = (thread_id, checkpoint_id), []
            grouped[key] = found
        found.append(
            (task, channel, serde.loads_typed((kind, value)) if kind is not None else None)
        )
    return grouped


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a batch of rows is read and decoded.

    Reading a batch (the database driver building its rows, the reader decoding
    them) makes tens of thousands of objects that all live until the batch is
    planned, so the collector, counting allocations, runs again and again over them
    (and, every few batches, over every object of the process) without ever freeing
    one: the rows decode to dicts, lists, tuples and strings, which hold no cycle.
    Measured on 10k threads of 10 checkpoints, the CPU of ``check_threads``: SQLite
    3,212 collections took 2.1 s of 7.0 s; PostgreSQL 2,300 took 1.8 s of 7.3 s.
    Reference counting still frees everything as usual, and the collector runs again
    once the batch is read (an async reader's awaits only delay, for that read, the
    collection of other tasks' cycles); a collector the caller had paused stays
    paused.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
