"""Exporting threads as fixtures (``_fixtures``): the read side of the offline CI gate.

Rules:
- Reads only, through the saver's public API (``get_tuple``, ``list``) and the stamp
  store: nothing is written to the database.
- What a thread's fixture holds is what planning it reads: the head's lineage (by
  ``_history.lineage``, the reader planning uses), the lineage a replaying head replays,
  the descriptions of every stamp they name, and the database's order of stamps
  (``_stamp_order``) up to the newest of them, which tells who owns the thread during
  a rolling deploy. Other branches stay behind.
- Values leave the database only when asked for (``with_values``).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.pregel import Pregel

from neograph_ext._lineage import list_threads
from neograph_ext.decision._errors import FixtureError
from neograph_ext.decision._head_state import has_interrupt, waiting_nodes
from neograph_ext.decision._history import lineage, references
from neograph_ext.decision._langgraph import delta_channels
from neograph_ext.decision._ownership import owner
from neograph_ext.decision._stamp import read_marks
from neograph_ext.decision._unreadable import reading, resumable
from neograph_ext.drivers._graph import StampedGraph
from neograph_ext.drivers._thread import checkpointer_of, stamped, thread_of, whole_thread
from neograph_ext.storage._fixtures import encoded, file_name
from neograph_ext.storage._ledger_store import read_ledger
from neograph_ext.storage._stamp_order import order
from neograph_ext.storage._stamp_store import load

__all__ = ["export_threads"]


def export_threads(
    graph: Pregel[Any, Any, Any, Any],
    directory: str | Path,
    *,
    threads: Iterable[str] | None = None,
    sample: int | None = None,
    unfinished: bool = False,
    with_values: bool = False,
) -> tuple[Path, ...]:
    """Export threads of ``graph``'s checkpointer as fixtures, one JSON file per thread.

    A fixture holds each thread's lineage (checkpoint metadata, parent links, the task
    and write facts planning reads), the stamp descriptions it refers to and their
    place in the database's order of stamps (which code owns the thread), so that
    ``neograph_ext.testing.assert_resumable`` (or ``neograph-ext check --fixtures``) can
    plan new code against it without the database. The format is versioned and
    documented in ``docs/fixtures.md``. Threads written by 0.1.0 and 0.2 export too.

    Args:
        graph: A graph made by ``neograph_ext.compile`` whose checkpointer is the
            database to export from: a sync saver (``SqliteSaver``, ``PostgresSaver``,
            ...), read through ``get_tuple`` and ``list``.
        directory: Where to write the files (created if missing); a thread exported
            again replaces its file.
        threads: The threads to export; by default every thread of the database.
        sample: Export this many of them, chosen at random (the same ones for the
            same threads).
        unfinished: Only threads whose head still has work: nodes it waits to run, or
            a question (an interrupt) waiting for its answer.
        with_values: Export state values too. Without them (the default) no state
            value leaves the database; with them, ``keep_compatible`` and migrations
            can be judged offline.

    Returns:
        The files written, in the order of the threads.

    Raises:
        FixtureError: A named thread has no checkpoint, ``sample`` is not positive, or
            a value cannot be encoded.
        GraphError: The graph was not compiled by neograph-ext or has no checkpointer.
        UnreadableCheckpointError: A thread's stored checkpoints cannot be decoded.
    """
    checked = stamped(graph)
    saver = checkpointer_of(checked)
    if sample is not None and sample < 1:
        raise FixtureError(f"sample must be a positive number of threads, not {sample}")
    named = list(dict.fromkeys(threads)) if threads is not None else None
    heads = _heads(saver, named if named is not None else list_threads(saver), named is not None)
    if unfinished:
        heads = [(name, head) for name, head in heads if _unfinished(checked, head)]
    heads = _sampled(heads, sample)
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, head in heads:
        path = folder / file_name(name)
        path.write_text(_fixture(checked, saver, name, head, with_values), encoding="utf-8")
        written.append(path)
    return tuple(written)


def _sampled(
    heads: list[tuple[str, CheckpointTuple]], sample: int | None
) -> list[tuple[str, CheckpointTuple]]:
    """``sample`` of ``heads`` at random (the same ones for the same heads), in order."""
    if sample is None or sample >= len(heads):
        return heads
    chosen = set(random.Random(0).sample(range(len(heads)), sample))
    return [pair for index, pair in enumerate(heads) if index in chosen]


def _heads(
    saver: BaseCheckpointSaver[Any], names: Sequence[str], named: bool
) -> list[tuple[str, CheckpointTuple]]:
    """Each thread with its newest checkpoint; a named thread without one is an error."""
    found = []
    for name in names:
        thread_id = thread_of(_config(name))
        with reading(thread_id):
            head = resumable(saver.get_tuple(_config(thread_id)), thread_id)
        if head is None:
            if named:
                raise FixtureError(f"thread {thread_id!r} has no checkpoint to export")
            continue
        found.append((thread_id, head))
    return found


def _unfinished(graph: StampedGraph, head: CheckpointTuple) -> bool:
    return bool(waiting_nodes(graph, head)) or has_interrupt(head)


def _fixture(
    graph: StampedGraph,
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    head: CheckpointTuple,
    with_values: bool,
) -> str:
    """The fixture text of one thread."""
    config = _config(thread_id)
    with reading(thread_id):
        tuples = list(saver.list(whole_thread(config)))
    head_id = head.checkpoint["id"]
    records = list(lineage(tuples, head_id))
    replaying = read_marks(head.metadata)[1].replaying
    if replaying is not None:
        # A replayed head that is gone owes nothing when planned either.
        with contextlib.suppress(KeyError):
            records += lineage(tuples, replaying)
    kept = {record.checkpoint_id for record in records}
    named = references(records, "")
    stamps = load(saver, named)
    rebuilt: dict[str, Any] = {}
    delta = delta_channels(graph)
    if with_values and delta:
        values = graph.get_state(head.config).values
        rebuilt = {name: values[name] for name in delta if name in values}
    return encoded(
        thread_id,
        head_id,
        [t for t in tuples if t.checkpoint["id"] in kept],
        stamps,
        with_values=with_values,
        head_values=rebuilt,
        order=_ranked(saver, owner(records), named),
        ledger=read_ledger(saver, thread_id),
    )


def _ranked(
    saver: BaseCheckpointSaver[Any], holder: str | None, named: frozenset[str]
) -> tuple[str, ...]:
    """The database's order of stamps (``_stamp_order``), as planning the thread reads it,
    up to the newest stamp the thread names: a stamp stored later counts as newer than
    the owner just as one never stored does, so the rest would change no plan."""
    if holder is None:
        return ()
    ranked = order(saver, holder)
    last = max((ranked.index(key) for key in named | {holder} if key in ranked), default=-1)
    return ranked[: last + 1]


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}
