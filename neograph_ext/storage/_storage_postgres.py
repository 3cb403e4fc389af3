"""The ``StorageReader`` of ``PostgresSaver`` and ``AsyncPostgresSaver`` (``_storage``).

Their tables: ``checkpoints(thread_id, checkpoint_ns, checkpoint_id,
parent_checkpoint_id, checkpoint jsonb, metadata jsonb)``, the checkpoint without the
values that are not ``None``, a string, a number or a boolean; those are in
``checkpoint_blobs(thread_id, checkpoint_ns, channel, version, type, blob)``;
``checkpoint_writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel,
type, blob, task_path)``. Checked on langgraph-checkpoint-postgres 3.0-3.2.

Rules:
- The SQL and the decoding of rows are written once, as flows (``_query``), a batch read
  with the garbage collector paused (``_storage_rows.collector_paused``); ``execute`` and
  ``aexecute`` run one query each through the saver's own cursor (``_cursor``: its
  lock, its pool) as its reads do, and differ by ``await`` alone.
- Light checkpoints are read field by field in SQL (no blob, no write value), the
  walked fields (``_storage_rows.WALKED``), the metadata, the channels holding None
  and the walked channels' inlined values built into one object, so the driver
  decodes one JSON value a row, not one a field; the blobs of the channels
  the walk reads (``_storage_rows.KEPT_VALUES``) are read once a batch and decoded
  only where a checkpoint's version names one. Heads are read with the saver's own
  query (``SELECT_SQL``) and turned into tuples by the saver
  (``_load_checkpoint_tuple``), so a head is exactly what ``get_tuple`` returns.
- A thread holding a checkpoint of a format before v4 is left out: the saver converts
  those on read (their pending sends), and only the saver should.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple

from neograph_ext.decision._claim import CLAIM
from neograph_ext.decision._query import Call, Flow, Sql, Transaction
from neograph_ext.storage._storage_rows import (
    EXT_MARKERS,
    KEPT_VALUES,
    Writes,
    collector_paused,
    grouped_writes,
    is_store_thread,
    light_checkpoint,
    stored_class,
    walked_tuple,
)

__all__ = ["PostgresReader", "aexecute", "execute"]

_PAGE = (
    "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = '' AND thread_id > %s "
    "ORDER BY thread_id LIMIT %s"
)
_FIRST_PAGE = (
    "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = '' "
    "ORDER BY thread_id LIMIT %s"
)
_CHECKPOINTS = """
SELECT thread_id, checkpoint_id, parent_checkpoint_id,
    jsonb_build_object(
        'v', checkpoint -> 'v', 'ts', checkpoint -> 'ts',
        'versions_seen', checkpoint -> 'versions_seen',
        'channel_versions', checkpoint -> 'channel_versions',
        'metadata', metadata,
        'nulls', (SELECT jsonb_agg(key) FROM jsonb_each(checkpoint -> 'channel_values')
            WHERE jsonb_typeof(value) = 'null'),
        'kept', (SELECT jsonb_object_agg(key, value) FROM jsonb_each(checkpoint -> 'channel_values')
            WHERE key = ANY(%(kept)s))
    ) AS walked
FROM checkpoints
WHERE checkpoint_ns = '' AND thread_id = ANY(%(threads)s)
ORDER BY thread_id, checkpoint_id DESC
"""
_KEPT_BLOBS = """
SELECT thread_id, channel, version, type,
    CASE WHEN channel = ANY(%(kept)s) THEN blob END AS blob,
    CASE WHEN type = 'msgpack' AND get_byte(blob, 0) = ANY(%(ext)s)
        THEN substring(blob FROM 1 FOR 512) END AS head
FROM checkpoint_blobs
WHERE checkpoint_ns = '' AND thread_id = ANY(%(threads)s) AND type <> 'empty'
    AND (channel = ANY(%(kept)s) OR type = 'msgpack')
"""
"""The walked channels' blobs, and the first bytes of every stored object's (its class:
``_storage_rows.stored_class``)."""
_WRITES = """
SELECT thread_id, checkpoint_id, task_id, channel,
    CASE WHEN task_id = %(claim)s THEN type END AS type,
    CASE WHEN task_id = %(claim)s THEN blob END AS blob
FROM checkpoint_writes
WHERE checkpoint_ns = '' AND thread_id = ANY(%(threads)s)
ORDER BY thread_id, checkpoint_id, task_path COLLATE "C", task_id COLLATE "C", idx
"""
"""Each checkpoint's writes together, ordered by code point (as Python orders strings);
only a claim's value (``_claim``: it names who owns a waiting step)."""
_HEADS = """
WHERE checkpoint_ns = '' AND (thread_id, checkpoint_id) IN (
    SELECT thread_id, max(checkpoint_id) FROM checkpoints
    WHERE checkpoint_ns = '' AND thread_id = ANY(%(threads)s) GROUP BY thread_id
)
"""


class PostgresReader:
    """The flows reading the tables of a ``PostgresSaver`` or an ``AsyncPostgresSaver``:
    see ``_storage.StorageReader``."""

    def __init__(self, saver: Any) -> None:
        self.saver = saver

    def thread_ids(self, after: str | None, limit: int) -> Flow[list[str]]:
        page = Sql(_FIRST_PAGE, (limit,)) if after is None else Sql(_PAGE, (after, limit))
        return [str(row[0]) for row in (yield page)]

    def heads(self, thread_ids: Sequence[str]) -> Flow[dict[str, CheckpointTuple]]:
        if not thread_ids:
            return {}
        found: dict[str, CheckpointTuple] = {}
        with collector_paused():
            rows = yield Sql(self.saver.SELECT_SQL + _HEADS, _params(thread_ids), named=True)
            for row in rows:  # the saver's own decoding: a head as ``get_tuple`` has it
                if not is_store_thread(row["thread_id"]):
                    found[row["thread_id"]] = yield Call(_LOAD, (row,), amethod=_LOAD)
        return found

    def lineages(self, thread_ids: Sequence[str]) -> Flow[dict[str, list[CheckpointTuple]]]:
        if not thread_ids:
            return {}
        with collector_paused():
            checkpoints, blobs, writes = yield from _read(_params(thread_ids))
            return _threads(self.saver.serde, checkpoints, blobs, writes)

    def lineage(self, thread_id: str) -> Flow[Iterator[CheckpointTuple] | None]:
        checkpoints, blobs, writes = yield from _read(_params([thread_id]))
        return _decoded(self.saver.serde, thread_id, checkpoints, blobs, writes)


def execute(saver: Any, query: Sql | Transaction) -> list[Any] | None:
    """Run ``query`` through the saver's own cursor (its lock, its pool)."""
    with saver._cursor() as cur:
        if isinstance(query, Transaction):
            with cur.connection.transaction():
                for sql in query.statements:
                    cur.execute(sql.text, sql.params)
            return None
        cur.row_factory = _rows(query)
        cur.execute(query.text, query.params)
        return cur.fetchall()  # type: ignore[no-any-return]


async def aexecute(saver: Any, query: Sql | Transaction) -> list[Any] | None:
    """Async twin of ``execute``."""
    async with saver._cursor() as cur:
        if isinstance(query, Transaction):
            async with cur.connection.transaction():
                for sql in query.statements:
                    await cur.execute(sql.text, sql.params)
            return None
        cur.row_factory = _rows(query)
        await cur.execute(query.text, query.params)
        return await cur.fetchall()  # type: ignore[no-any-return]


def _rows(query: Sql) -> Any:
    from psycopg.rows import dict_row, tuple_row  # a saver of this backend has psycopg

    return dict_row if query.named else tuple_row


_Rows = list[Any]
_LOAD = "_load_checkpoint_tuple"


def _read(params: Mapping[str, Any]) -> Flow[tuple[_Rows, _Rows, _Rows]]:
    """The threads' light checkpoint rows, their kept channels' blobs and their writes."""
    checkpoints = yield Sql(_CHECKPOINTS, params, named=True)
    blobs = yield Sql(_KEPT_BLOBS, params, named=True)
    return checkpoints, blobs, (yield Sql(_WRITES, params))


def _params(thread_ids: Sequence[str]) -> dict[str, Any]:
    return {
        "threads": list(thread_ids),
        "kept": list(KEPT_VALUES),
        "claim": CLAIM,
        "ext": list(EXT_MARKERS),
    }


def _threads(
    serde: Any,
    checkpoints: Sequence[Mapping[str, Any]],
    blobs: Sequence[Mapping[str, Any]],
    writes: Sequence[Sequence[Any]],
) -> dict[str, list[CheckpointTuple]]:
    """The rows of a batch as each thread's light tuples, newest first."""
    stored = _stored(blobs)
    grouped = grouped_writes(writes, serde)
    threads: dict[str, list[CheckpointTuple]] = {}
    old: set[str] = set()
    for row in checkpoints:
        thread_id = row["thread_id"]
        if is_store_thread(thread_id) or thread_id in old:
            continue
        if int(row["walked"]["v"] or 0) < 4:
            old.add(thread_id)
            threads.pop(thread_id, None)
            continue
        threads.setdefault(thread_id, []).append(_tuple(serde, row, stored, grouped))
    return threads


def _decoded(
    serde: Any,
    thread_id: str,
    checkpoints: Sequence[Mapping[str, Any]],
    blobs: Sequence[Mapping[str, Any]],
    writes: Sequence[Sequence[Any]],
) -> Iterator[CheckpointTuple] | None:
    """One thread's rows as light tuples, each built only when it is reached (a walk
    lets each go before the next); None for a thread left out (see the module's rules)."""
    if not checkpoints or is_store_thread(thread_id):
        return None
    if any(int(row["walked"]["v"] or 0) < 4 for row in checkpoints):
        return None
    stored = _stored(blobs)
    grouped = grouped_writes(writes, serde)
    return (_tuple(serde, row, stored, grouped) for row in checkpoints)


def _tuple(
    serde: Any,
    row: Mapping[str, Any],
    stored: Mapping[tuple[str, str, str], Mapping[str, Any]],
    grouped: Mapping[tuple[str, str], Writes],
) -> CheckpointTuple:
    """The light tuple of a checkpoint's row."""
    thread_id, walked = row["thread_id"], row["walked"]
    values = _values(serde, thread_id, walked, stored)
    walked["id"] = row["checkpoint_id"]
    return walked_tuple(
        thread_id,
        row["checkpoint_id"],
        row["parent_checkpoint_id"],
        light_checkpoint(walked, values, _held(thread_id, walked, stored)),
        walked["metadata"],
        grouped.get((thread_id, row["checkpoint_id"]), []),
    )


def _stored(blobs: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    """The walked channels' blobs, by thread, channel and version."""
    return {(b["thread_id"], b["channel"], b["version"]): b for b in blobs}


def _held(
    thread_id: str,
    walked: Mapping[str, Any],
    stored: Mapping[tuple[str, str, str], Mapping[str, Any]],
) -> dict[str, str]:
    """Channel -> class path of each stored object a light checkpoint holds."""
    held: dict[str, str] = {}
    for name, version in (walked["channel_versions"] or {}).items():
        blob = stored.get((thread_id, name, str(version)))
        head = blob["head"] if blob is not None else None
        if head is not None and (path := stored_class(bytes(head))) is not None:
            held[name] = path
    return held


def _values(
    serde: Any,
    thread_id: str,
    walked: Mapping[str, Any],
    stored: Mapping[tuple[str, str, str], Mapping[str, Any]],
) -> dict[str, Any]:
    """The values of a light checkpoint: its Nones, and the walked channels' values."""
    values: dict[str, Any] = dict.fromkeys(walked["nulls"] or (), None)
    values.update(walked["kept"] or {})
    versions = walked["channel_versions"] or {}
    for name in KEPT_VALUES:
        blob = stored.get((thread_id, name, str(versions.get(name))))
        if blob is not None and blob["blob"] is not None:
            values[name] = serde.loads_typed((blob["type"], bytes(blob["blob"])))
    return values
