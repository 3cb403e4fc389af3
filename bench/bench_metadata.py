"""Figure 9: bytes of metadata per checkpoint, plain LangGraph against neograph-ext.

Two graphs, each run to the end once by plain LangGraph (``builder.compile`` and
``graph.invoke(input, config, durability="sync")``) and once by neograph-ext
(``neograph_ext.compile`` and ``neograph_ext.run``), on one SQLite file saver:

- the demo graph (``examples/demo.py``'s builder: five nodes, pydantic outputs);
- the 30-node graph of ``tests/graphs/big.py`` (each node writes a model three
  levels deep, a dozen fields a level).

Each side's thread id has the same length, since LangGraph copies it into every
checkpoint's metadata. Measured is the stored metadata column (``length(metadata)``,
the JSON ``SqliteSaver`` writes) of every checkpoint of the thread; the difference is
what neograph-ext adds. For scale, 0.1.0 put the stamp's whole description into
every checkpoint's metadata: ``len(graph.neograph_ext_stamp.encode())`` characters.
Today that description is stored once per stamp, as the one checkpoint of a reserved
thread; its size is reported too.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _harness import Result, Row, sqlite_saver

import neograph_ext
from neograph_ext.decision._stamp import MAX_METADATA_BYTES
from neograph_ext.storage._stamp_store import THREAD_PREFIX

ROOT = Path(__file__).resolve().parent.parent
TARGET = MAX_METADATA_BYTES
"""Bytes neograph-ext may add to any checkpoint's metadata."""


@dataclass(frozen=True)
class Sizes:
    """Metadata bytes per checkpoint of one thread."""

    each: tuple[int, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.each)

    @property
    def max(self) -> int:
        return max(self.each)


def _sizes(saver: Any, thread_id: str) -> Sizes:
    with saver.lock:
        rows = saver.conn.execute(
            "SELECT length(metadata) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id",
            (thread_id,),
        ).fetchall()
    return Sizes(tuple(int(size) for (size,) in rows))


def _description_bytes(saver: Any, stamp_id: str) -> int:
    """Bytes of the stamp store's one row for a stamp (checkpoint, metadata, writes)."""
    thread = f"{THREAD_PREFIX}{stamp_id}"
    with saver.lock:
        checkpoint = saver.conn.execute(
            "SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoints "
            "WHERE thread_id = ?",
            (thread,),
        ).fetchone()[0]
        writes = saver.conn.execute(
            "SELECT coalesce(sum(length(value)), 0) FROM writes WHERE thread_id = ?", (thread,)
        ).fetchone()[0]
    return int(checkpoint) + int(writes)


def _demo() -> tuple[Any, Any]:
    """The demo's builder (as its second run builds it), with its nodes' sleeps removed."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import demo
        from demo_models import ReviewV1, SummaryV1
    finally:
        sys.path.remove(str(ROOT / "examples"))
    demo.LLM_LATENCY = 0.0  # read by each node when it runs
    return (lambda: demo.build(SummaryV1, ReviewV1, [])), demo.INPUT


def _wide() -> tuple[Any, Any]:
    sys.path.insert(0, str(ROOT))
    from tests.graphs.big import wide

    return (lambda: wide(Counter())), {}


def _measure(name: str, build: Any, given: Any) -> list[Result]:
    with sqlite_saver() as saver:
        plain = build().compile(checkpointer=saver)
        ours = neograph_ext.compile(build(), checkpointer=saver)
        with contextlib.redirect_stdout(io.StringIO()):  # the demo's nodes print
            plain.invoke(given, {"configurable": {"thread_id": "plain"}}, durability="sync")
            neograph_ext.run(ours, given, {"configurable": {"thread_id": "ours_"}})
        before, after = _sizes(saver, "plain"), _sizes(saver, "ours_")
        assert len(before.each) == len(after.each), (before, after)
        legacy = len(ours.neograph_ext_stamp.encode())
        stored = _description_bytes(saver, ours.neograph_ext_stamp.id)
    # Both threads hold the same steps in the same order (checkpoint ids grow).
    added = [ext - base for base, ext in zip(before.each, after.each, strict=True)]
    added_median, added_max = statistics.median(added), max(added)
    row = (
        f"9. Metadata per checkpoint, {name}, SQLite ({len(after.each)} checkpoints): "
        "plain `graph.invoke` vs neograph-ext `run()`",
        f"median {before.median:.0f} B vs {after.median:.0f} B, max {before.max} B vs "
        f"{after.max} B: **+{added_median:.0f} B** per checkpoint (max +{added_max} B); 0.1.0 "
        f"added the "
        f"whole stamp, {legacy:,} B, to every checkpoint (now stored once: {stored:,} B)",
        f"<= +{TARGET} B: {'met' if added_max <= TARGET else '**missed**'}",
    )
    return [Result(row, added_max > TARGET)]


def measure() -> list[Result]:
    rows: list[Result] = []
    rows += _measure("demo graph (5 nodes)", *_demo())
    rows += _measure("30 nodes with large nested models", *_wide())
    return rows


def run() -> list[Row]:
    return [result.row for result in measure()]


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row), file=sys.stdout)
