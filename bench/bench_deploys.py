"""Rolling deploys: what the order of stamps costs a plan, with and without the order a
process keeps (``_stamp_order._KNOWN``).

A thread of an 8-node chain (10 checkpoints) written by one release is planned by the
next (``versions`` bumped on one node): other code wrote it last, so the plan needs the
order in which the database first stored the two stamps. "kept": the order this
process read before lists the owner, as for every plan but a process's first; "read":
the order is listed again in the timed call (kept order dropped, untimed); "unlisted":
the owner never took a place (code of a neograph-ext before the order: its entry is
deleted), so the plan reads the order's newest checkpoint to know nothing was added.
The order holds the releases, or those and 1,000 earlier stamps (years of releases,
or a development database). Run on its own:

    python bench/bench_deploys.py      # PostgreSQL too when $NEOGRAPH_EXT_PG_DSN is set
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from _harness import (
    Case,
    chain_builder,
    compared,
    interleave,
    pg_dsn,
    pg_saver,
    sqlite_saver,
)

import neograph_ext
from neograph_ext.decision._stamp import Stamp
from neograph_ext.storage import _stamp_order

REPS = 31


def _earlier(saver: Any, count: int) -> None:
    """``count`` stamps stored before both releases (their descriptions are not needed)."""
    base = neograph_ext.compile(chain_builder(8), checkpointer=saver).neograph_ext_stamp
    for index in range(count):
        fake = f"{index:064x}"
        stamp = Stamp.model_construct(**{**dict(base), "id": fake})
        saver.put(*_stamp_order._write(saver, stamp, index, None))


def _unlist(saver: Any, stamp_id: str) -> None:
    """Delete a stamp's place in the order, as if a version before the order wrote it."""
    query = "DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_id LIKE %s"
    args = (_stamp_order.ORDER_THREAD, f"%{stamp_id[:12]}")
    if hasattr(saver, "conn") and not hasattr(saver, "_cursor"):
        saver.conn.execute(query.replace("%s", "?"), args)
        saver.conn.commit()
    else:
        with saver._cursor() as cur:
            cur.execute(query, args)
    _stamp_order._KNOWN.pop(saver, None)


def measure(name: str, opened: AbstractContextManager[Any], earlier: int) -> str:
    with opened as saver:
        _earlier(saver, earlier)
        old = neograph_ext.compile(chain_builder(8), checkpointer=saver)
        new = neograph_ext.compile(chain_builder(8), checkpointer=saver, versions={"node_04": "v2"})
        config = {"configurable": {"thread_id": "t"}}
        neograph_ext.run(old, {"n": 0}, config)
        assert neograph_ext.plan(new, config).kind is neograph_ext.PlanKind.REWIND

        def forget() -> None:
            _stamp_order._KNOWN.pop(saver, None)

        unlisted = neograph_ext.compile(
            chain_builder(8), checkpointer=saver, versions={"node_06": "v2"}
        )
        other = {"configurable": {"thread_id": "pre-order"}}
        neograph_ext.run(unlisted, {"n": 0}, other)
        _unlist(saver, unlisted.neograph_ext_stamp.id)
        timings = interleave(
            [
                Case("kept", lambda _: neograph_ext.plan(new, config)),
                Case("read", lambda _: neograph_ext.plan(new, config), setup=forget),
                Case("unlisted", lambda _: neograph_ext.plan(new, other)),
            ],
            REPS,
            warmup=3,
        )
        listed = len(_stamp_order.order(saver, new.neograph_ext_stamp.id))
        return (
            f"{name}, {listed} stamps stored: plan() read vs kept: "
            + compared(timings, "read", "kept")
            + "; unlisted owner vs kept: "
            + compared(timings, "unlisted", "kept")
        )


def main() -> Iterator[str]:
    for earlier in (0, 1_000):
        yield measure("SQLite", sqlite_saver(), earlier)
    dsn = pg_dsn()
    if dsn:
        for earlier in (0, 1_000):
            yield measure("PostgreSQL", pg_saver(dsn), earlier)
    else:
        yield "PostgreSQL: not measured ($NEOGRAPH_EXT_PG_DSN unset)"


if __name__ == "__main__":
    for line in main():
        print(line, flush=True)
