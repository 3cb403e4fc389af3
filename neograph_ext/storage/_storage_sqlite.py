"""The ``StorageReader`` of ``SqliteSaver`` and ``AsyncSqliteSaver`` (``_storage``).

Their tables: ``checkpoints(thread_id, checkpoint_ns, checkpoint_id,
parent_checkpoint_id, type, checkpoint, metadata)``, the checkpoint one serialized blob
and the metadata JSON; ``writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
channel, type, value[, task_path])``. Checked on langgraph-checkpoint-sqlite 3.0-3.1.

Rules:
- The SQL and the decoding of rows are written once, as flows (``_query``), a batch read
  with the garbage collector paused (``_storage_rows.collector_paused``); ``execute`` and
  ``aexecute`` run one query each, under the saver's lock as its own reads do, and
  differ by ``await`` alone.
- A light checkpoint's blob is unpacked without reviving any stored object: msgpack's
  extension values (what the serializer writes for every class it revives) stay
  undecoded. A row holding a value the walk reads (``_storage_rows.KEPT_VALUES``), a
  head, or a blob of another format is decoded whole by the saver's serializer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import ormsgpack
from langgraph.checkpoint.base import CheckpointTuple

from neograph_ext.decision._claim import CLAIM
from neograph_ext.decision._history import HELD_CLASSES
from neograph_ext.decision._query import Call, Flow, Sql, Transaction
from neograph_ext.storage._storage_rows import (
    KEPT_VALUES,
    Writes,
    collector_paused,
    grouped_writes,
    held_classes,
    is_store_thread,
    light_checkpoint,
    stored_class,
    walked_tuple,
)

__all__ = ["SqliteReader", "aexecute", "execute"]

_SENDS, _INPUT = KEPT_VALUES


class _Undecoded:
    """What a light read makes of a stored object: not decoded, and not None; its
    bytes, for its class's path (``stored_class``)."""

    __slots__ = ("code", "data")

    def __init__(self, code: int, data: bytes) -> None:
        self.code = code
        self.data = data


class SqliteReader:
    """The flows reading the tables of a ``SqliteSaver`` or an ``AsyncSqliteSaver``: see
    ``_storage.StorageReader``."""

    def __init__(self, saver: Any) -> None:
        self.saver = saver

    def thread_ids(self, after: str | None, limit: int) -> Flow[list[str]]:
        yield _SETUP
        return [str(row[0]) for row in (yield _page(after, limit))]

    def heads(self, thread_ids: Sequence[str]) -> Flow[dict[str, CheckpointTuple]]:
        if not thread_ids:
            return {}
        with collector_paused():
            yield _SETUP
            paths = _has_task_path((yield Sql(_COLUMNS)))
            checkpoints = yield _checkpoints(thread_ids, heads=True)
            valued = _head_writes(checkpoints, paths)
            writes = (yield valued) if valued is not None else []
            found = _threads(self.saver.serde, checkpoints, writes, True)
            return {thread: listed[0] for thread, listed in found.items()}

    def lineages(self, thread_ids: Sequence[str]) -> Flow[dict[str, list[CheckpointTuple]]]:
        if not thread_ids:
            return {}
        with collector_paused():
            _, checkpoints, writes = yield from _read(thread_ids)
            return _threads(self.saver.serde, checkpoints, writes, False)

    def lineage(self, thread_id: str) -> Flow[Iterator[CheckpointTuple] | None]:
        if is_store_thread(thread_id):
            return None
        _, checkpoints, writes = yield from _read([thread_id])
        return _decoded(self.saver.serde, checkpoints, writes) if checkpoints else None


def execute(saver: Any, query: Sql | Transaction) -> list[Any] | None:
    """Run ``query`` on a ``SqliteSaver``'s connection, under the saver's lock; a
    transaction begins at once (``BEGIN IMMEDIATE``), apart from the saver's own work."""
    conn = saver.conn
    with saver.lock:
        if isinstance(query, Sql):
            if query.alone:
                conn.commit()
            return conn.execute(query.text, tuple(query.params)).fetchall()  # type: ignore[no-any-return]
        conn.commit()
        try:
            conn.execute("BEGIN IMMEDIATE")
            for sql in query.statements:
                conn.execute(sql.text, tuple(sql.params))
        except BaseException:
            conn.rollback()
            raise
        conn.commit()
        return None


async def aexecute(saver: Any, query: Sql | Transaction) -> list[Any] | None:
    """Async twin of ``execute``, for an ``AsyncSqliteSaver``."""
    conn = saver.conn
    async with saver.lock:
        if isinstance(query, Sql):
            if query.alone:
                await conn.commit()
            rows = await conn.execute_fetchall(query.text, tuple(query.params))
            return [tuple(row) for row in rows]
        await conn.commit()
        try:
            await conn.execute("BEGIN IMMEDIATE")
            for sql in query.statements:
                await conn.execute(sql.text, tuple(sql.params))
        except BaseException:
            await conn.rollback()
            raise
        await conn.commit()
        return None


def _read(thread_ids: Sequence[str]) -> Flow[tuple[bool, list[Any], list[Any]]]:
    """Whether the writes table has task paths, then the threads' light checkpoint rows
    and their write rows."""
    yield _SETUP
    paths = _has_task_path((yield Sql(_COLUMNS)))
    checkpoints = yield _checkpoints(thread_ids)
    return paths, checkpoints, (yield _writes(thread_ids, paths))


_SETUP = Call("setup", amethod="setup")
"""The saver's own setup, which its reads run first (its tables made, once)."""

_COLUMNS = "PRAGMA table_info(writes)"

_WRITE_ORDER = "thread_id, checkpoint_id, {path}, task_id, idx"
"""Each checkpoint's writes together, in the order the saver returns them; SQLite
compares text byte by byte, which for UTF-8 is the order of Python's strings."""


def _has_task_path(columns: Sequence[Sequence[Any]]) -> bool:
    """Whether the writes table has a ``task_path`` column (added in later versions)."""
    return any(column[1] == "task_path" for column in columns)


def _page(after: str | None, limit: int) -> Sql:
    where = "checkpoint_ns = ''" + (" AND thread_id > ?" if after is not None else "")
    sql = f"SELECT DISTINCT thread_id FROM checkpoints WHERE {where} ORDER BY thread_id LIMIT ?"
    return Sql(sql, (*([after] if after is not None else []), limit))


def _checkpoints(thread_ids: Sequence[str], *, heads: bool = False) -> Sql:
    """The threads' root checkpoint rows, or (``heads``) each thread's newest alone."""
    marks = ",".join("?" * len(thread_ids))
    newest = (
        " AND checkpoint_id = (SELECT max(c.checkpoint_id) FROM checkpoints AS c "
        "WHERE c.checkpoint_ns = '' AND c.thread_id = checkpoints.thread_id)"
    )
    return Sql(
        "SELECT thread_id, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata "
        f"FROM checkpoints WHERE checkpoint_ns = '' AND thread_id IN ({marks})"
        f"{newest if heads else ''} ORDER BY thread_id, checkpoint_id DESC",
        tuple(thread_ids),
    )


def _writes(thread_ids: Sequence[str], task_path: bool) -> Sql:
    """Every root write of the threads, without its value but a claim's (``_claim``: it
    names who owns a waiting step)."""
    marks = ",".join("?" * len(thread_ids))
    path = "task_path" if task_path else "''"
    return Sql(
        f"SELECT thread_id, checkpoint_id, task_id, channel, "
        f"CASE WHEN task_id = ? THEN type END, CASE WHEN task_id = ? THEN value END "
        f"FROM writes WHERE checkpoint_ns = '' AND thread_id IN ({marks}) "
        f"ORDER BY {_WRITE_ORDER.format(path=path)}",
        (CLAIM, CLAIM, *thread_ids),
    )


def _head_writes(checkpoints: Sequence[Sequence[Any]], task_path: bool) -> Sql | None:
    """The writes of the threads' heads (the first row of each thread), with values."""
    heads: list[str] = []
    for row in checkpoints:
        if not heads or heads[-2] != row[0]:
            heads += (row[0], row[1])
    if not heads:
        return None
    threads = heads[0::2]
    marks = ",".join("?" * len(threads))
    pairs = ",".join(["(?, ?)"] * len(threads))
    path = "task_path" if task_path else "''"
    # The pairs alone make SQLite scan the whole writes table (a batch then costs in
    # proportion to the database); the thread ids let it search the primary key.
    return Sql(
        f"SELECT thread_id, checkpoint_id, task_id, channel, type, value "
        f"FROM writes WHERE checkpoint_ns = '' AND thread_id IN ({marks}) "
        f"AND (thread_id, checkpoint_id) IN (VALUES {pairs}) "
        f"ORDER BY {_WRITE_ORDER.format(path=path)}",
        (*threads, *heads),
    )


def _threads(
    serde: Any,
    checkpoints: Sequence[Sequence[Any]],
    writes: Sequence[Sequence[Any]],
    heads: bool,
) -> dict[str, list[CheckpointTuple]]:
    """The rows of a batch as each thread's tuples, newest first, the head whole when
    ``heads``."""
    grouped = grouped_writes(writes, serde)
    threads: dict[str, list[CheckpointTuple]] = {}
    listed: list[CheckpointTuple] | None = None
    current = None
    for row in checkpoints:
        # Rows come thread by thread, newest first: the first of a thread is its head.
        whole = row[0] != current
        if whole:
            current = row[0]
            listed = None if is_store_thread(current) else threads.setdefault(current, [])
        if listed is not None:
            listed.append(_tuple(serde, row, grouped, whole and heads))
    return threads


def _decoded(
    serde: Any, checkpoints: Sequence[Sequence[Any]], writes: Sequence[Sequence[Any]]
) -> Iterator[CheckpointTuple]:
    """One thread's rows as light tuples, each decoded only when it is reached: a walk
    lets each go before the next, as it does a saver's listing."""
    grouped = grouped_writes(writes, serde)
    for row in checkpoints:
        yield _tuple(serde, row, grouped, False)


def _tuple(
    serde: Any,
    row: Sequence[Any],
    grouped: Mapping[tuple[str, str], Writes],
    whole: bool,
) -> CheckpointTuple:
    """The tuple of a checkpoint's row: whole, as ``get_tuple`` returns it, or light."""
    thread_id, checkpoint_id, parent_id, kind, blob, metadata = row
    return walked_tuple(
        thread_id,
        checkpoint_id,
        parent_id,
        serde.loads_typed((kind, blob)) if whole else _light(serde, kind, blob),
        # Decoded here: ``json.loads`` of bytes first guesses their encoding.
        json.loads(metadata.decode()) if metadata is not None else {},
        grouped.get((thread_id, checkpoint_id), []),
    )


def _light(serde: Any, kind: str, blob: bytes) -> dict[str, Any]:
    """A checkpoint's walked fields, its stored objects left undecoded."""
    if kind == "msgpack":
        raw: dict[str, Any] = ormsgpack.unpackb(
            blob, ext_hook=_undecoded, option=ormsgpack.OPT_NON_STR_KEYS
        )
        values = raw.get("channel_values") or {}
        if values.get(_SENDS) is None and values.get(_INPUT) is None:
            raw["channel_values"] = {name: None for name, value in values.items() if value is None}
            raw[HELD_CLASSES] = {
                name: path
                for name, value in values.items()
                if type(value) is _Undecoded
                and (path := stored_class(value.data, value.code)) is not None
            }
            return raw
    whole = serde.loads_typed((kind, blob))
    values = whole.get("channel_values") or {}
    return light_checkpoint(whole, _walked_values(values), held_classes(values))


def _walked_values(values: dict[str, Any]) -> dict[str, Any]:
    kept = {name: values[name] for name in KEPT_VALUES if values.get(name) is not None}
    return {**{name: None for name, value in values.items() if value is None}, **kept}


def _undecoded(code: int, data: bytes) -> object:
    return _Undecoded(code, data)
