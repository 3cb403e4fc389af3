"""Figure 10: ``neograph-ext check`` of a whole fleet, against what reading it costs.

One real thread (an 8-node chain, 10 checkpoints) is written by ``run()``, then copied
to N threads by ``INSERT ... SELECT`` (seconds, even for 1M checkpoints). Each
measurement runs in a fresh subprocess, so its peak memory (``ru_maxrss``) is its own:

- ``check``: the command line (``neograph-ext check``) under code whose last node
  changed (``versions=``), so every thread's lineage is walked and every thread rewinds;
- the floor: ``SELECT DISTINCT thread_id`` plus a read of every checkpoint's metadata
  (decoded), the least a check reading every thread's metadata can do;
- for context, the walked floor: the floor plus every checkpoint's two version maps
  (``versions_seen``, ``channel_versions``), the fields of the checkpoint body, beside
  its metadata, that tell which nodes ran and which channels they wrote, decoded as
  lightly as the format allows (SQLite: the body's msgpack, its stored objects left
  undecoded; PostgreSQL: the two JSON fields alone). Walking and deciding every thread
  comes on top of it;
- for the target, per thread: what 2x the floor leaves once the floor's own reading is
  paid, against the walk of one thread's decoded checkpoints into records and
  ``decide`` on them, timed in process (no reading at all).

    python bench/bench_fleet.py --threads 1000,10000          # SQLite
    NEOGRAPH_EXT_PG_DSN=... python bench/bench_fleet.py --pg  # PostgreSQL too
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

import ormsgpack

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT))

from _harness import PG_DSN_ENV, Result, chain_builder, fmt_ratio  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

import neograph_ext  # noqa: E402

NODES = 8
SOURCE, CURRENT = "source", "current"
MIXED_SHARE = 2
"""Of every five threads of the mixed fleet, those the current code wrote."""
OLD = neograph_ext.compile(chain_builder(NODES))
BUMP = {f"node_{NODES - 1:02d}": "v2"}
NEW = neograph_ext.compile(chain_builder(NODES), versions=BUMP)
"""The code that wrote the threads, and the code checked against them (last node changed)."""
TARGET_SECONDS, TARGET_MB, TARGET_RATIO = 30.0, 500.0, 2.0
SIZES = (1_000, 10_000, 100_000)


def _write_source(saver: Any, mixed: bool = False) -> None:
    """The thread copied (written by ``OLD``), and for a mixed fleet the one its current
    share is copied from (written by ``NEW``)."""
    graph = neograph_ext.compile(chain_builder(NODES), checkpointer=saver)
    neograph_ext.run(graph, {"n": 0}, {"configurable": {"thread_id": SOURCE}})
    if mixed:
        current = neograph_ext.compile(chain_builder(NODES), checkpointer=saver, versions=BUMP)
        neograph_ext.run(current, {"n": 0}, {"configurable": {"thread_id": CURRENT}})


def _share(mixed: bool) -> int:
    """Of every five copies, how many are of ``CURRENT``."""
    return MIXED_SHARE if mixed else 0


def build_sqlite(path: Path, threads: int, mixed: bool = False) -> float:
    """A database of ``threads`` copies of one thread (``mixed``: 2 in 5 of them copies
    of a thread the current code wrote); the seconds it took."""
    started = time.perf_counter()
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    _write_source(saver, mixed)
    series = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
    which = "(thread_id = ? AND i % 5 >= ?) OR (thread_id = ? AND i % 5 < ?)"
    picked = (SOURCE, _share(mixed), CURRENT, _share(mixed))
    with conn:
        conn.execute(
            series + "INSERT INTO checkpoints SELECT 't' || printf('%07d', i), checkpoint_ns, "
            "checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata "
            f"FROM checkpoints, n WHERE {which}",
            (threads - 1, *picked),
        )
        conn.execute(
            series + "INSERT INTO writes SELECT 't' || printf('%07d', i), checkpoint_ns, "
            "checkpoint_id, task_id, task_path, idx, channel, type, value "
            f"FROM writes, n WHERE {which}",
            (threads - 1, *picked),
        )
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.perf_counter() - started


def build_pg(dsn: str, threads: int, mixed: bool = False) -> float:
    """``build_sqlite`` on PostgreSQL (its tables emptied first)."""
    from langgraph.checkpoint.postgres import PostgresSaver

    started = time.perf_counter()
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        with saver._cursor() as cur:
            cur.execute("TRUNCATE checkpoints, checkpoint_blobs, checkpoint_writes")
        _write_source(saver, mixed)
        which = "(thread_id = %(s)s AND i %% 5 >= %(k)s) OR (thread_id = %(c)s AND i %% 5 < %(k)s)"
        copies = (
            "INSERT INTO checkpoints SELECT 't' || lpad(i::text, 7, '0'), checkpoint_ns, "
            "checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata "
            f"FROM checkpoints, generate_series(1, %(n)s) i WHERE {which}",
            "INSERT INTO checkpoint_blobs SELECT 't' || lpad(i::text, 7, '0'), checkpoint_ns, "
            "channel, version, type, blob "
            f"FROM checkpoint_blobs, generate_series(1, %(n)s) i WHERE {which}",
            "INSERT INTO checkpoint_writes SELECT 't' || lpad(i::text, 7, '0'), checkpoint_ns, "
            "checkpoint_id, task_id, idx, channel, type, blob, task_path "
            f"FROM checkpoint_writes, generate_series(1, %(n)s) i WHERE {which}",
        )
        with saver._cursor() as cur:
            for sql in copies:
                cur.execute(sql, {"n": threads - 1, "s": SOURCE, "c": CURRENT, "k": _share(mixed)})
            cur.execute("ANALYZE")
    return time.perf_counter() - started


def floor(db: str, walked: bool = False) -> int:
    """The floor: every thread id, then every checkpoint's metadata, decoded; with
    ``walked``, each checkpoint's version maps too (the walked floor)."""
    count = 0
    if db.startswith("postgresql://"):
        import psycopg

        maps = ", checkpoint -> 'versions_seen', checkpoint -> 'channel_versions'"
        with psycopg.connect(db) as conn:
            ids = conn.execute(
                "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = ''"
            ).fetchall()
            with conn.cursor(name="metadata") as cur:  # streamed, as check streams
                cur.execute(
                    f"SELECT metadata{maps if walked else ''} FROM checkpoints "
                    "WHERE checkpoint_ns = ''"
                )
                for row in cur:
                    count += sum(len(field) for field in row)
    else:
        conn = sqlite3.connect(db)
        ids = conn.execute(
            "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = ''"
        ).fetchall()
        for metadata, body in conn.execute(
            f"SELECT metadata, {'checkpoint' if walked else 'NULL'} FROM checkpoints "
            "WHERE checkpoint_ns = ''"
        ):
            count += len(json.loads(metadata))
            if body is not None:
                maps = ormsgpack.unpackb(body, ext_hook=_undecoded, option=_KEYS)
                count += len(maps["versions_seen"]) + len(maps["channel_versions"])
        conn.close()
    return len(ids) + count


_KEYS = ormsgpack.OPT_NON_STR_KEYS


def _undecoded(code: int, data: bytes) -> None:
    """A stored object left undecoded, as the lightest read of a body leaves it."""


def pure_costs() -> tuple[float, float]:
    """Seconds per thread, in process, of the two parts of check that read nothing: the
    walk of one thread's decoded checkpoints into records, and ``decide`` on them (the
    pure core), for the thread every database here copies, under ``NEW``."""
    from langgraph.checkpoint.memory import InMemorySaver

    from neograph_ext.decision._decision import HeadFacts
    from neograph_ext.decision._history import lineage
    from neograph_ext.decision._plan import decide

    saver = InMemorySaver()
    _write_source(saver)
    config = {"configurable": {"thread_id": SOURCE}}
    tuples = list(saver.list(config))
    head = tuples[0].checkpoint["id"]
    described = {OLD.neograph_ext_stamp.id: OLD.neograph_ext_stamp}
    records = lineage(tuples, head, described=described)
    facts, stamp = HeadFacts(head, frozenset()), NEW.neograph_ext_stamp
    assert decide(records, stamp, SOURCE, head=facts).kind.value == "rewind"
    walk = min(timeit.repeat(lambda: lineage(tuples, head, described=described), number=500))
    decided = min(timeit.repeat(lambda: decide(records, stamp, SOURCE, head=facts), number=500))
    return walk / 500, decided / 500


def measured(args: list[str]) -> tuple[float, float, float, int]:
    """Seconds, peak memory (MB), CPU seconds of ``args`` run in a fresh process, and
    (a check's) how many threads' lineages it read."""
    started = time.perf_counter()
    child = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, check=False)
    seconds = time.perf_counter() - started
    if child.returncode not in (0, 1):
        raise RuntimeError(f"{args}: {child.stderr.strip()}")
    # The child reports its own peak: RUSAGE_CHILDREN would give the largest child so far.
    report = child.stderr.rsplit("walked=", 1)[-1].split()
    memory, cpu = float(report[1].removeprefix("maxrss_kb=")), report[2].removeprefix("cpu_s=")
    return seconds, memory / 1024, float(cpu), int(report[0])


def _child(mode: str, db: str) -> None:
    """Run in the measured subprocess: the check or the floor, then its peak memory."""
    walked = 0
    if mode.startswith("check"):
        from neograph_ext.cli import app
        from neograph_ext.storage._storage_postgres import PostgresReader
        from neograph_ext.storage._storage_sqlite import SqliteReader

        def counted(read: Any) -> Any:
            def lineages(self: Any, thread_ids: Any) -> Any:
                nonlocal walked
                walked += len(thread_ids)
                return read(self, thread_ids)

            return lineages

        # Counted for the figures: the threads whose heads did not settle them alone.
        for reader in (SqliteReader, PostgresReader):
            reader.lineages = counted(reader.lineages)  # type: ignore[method-assign]
        jobs = mode.removeprefix("check") or "1"
        with contextlib.suppress(SystemExit):
            app(["check", "bench_fleet:NEW", "--db", db, "--jobs", jobs], prog_name="neograph-ext")
    else:
        floor(db, walked=mode == "walked")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    jobs_usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # check --jobs's processes
    cpu = usage.ru_utime + usage.ru_stime + jobs_usage.ru_utime + jobs_usage.ru_stime
    print(f"walked={walked} maxrss_kb={usage.ru_maxrss} cpu_s={cpu:.2f}", file=sys.stderr)


def measure(kind: str, db: str, threads: int, built: float) -> list[Result]:
    """Figure 10's rows for one database."""
    floor_s, floor_mb, floor_cpu, _ = _run("floor", db)
    walked_s, _, walked_cpu, _ = _run("walked", db)
    check_s, check_mb, check_cpu, _ = _run("check", db)
    ratio = check_s / floor_s
    what = f"10. `check` of {threads:,} threads / {threads * 10:,} checkpoints, {kind}"
    result = (
        f"{check_s:.1f} s, {check_mb:.0f} MB vs floor {floor_s:.1f} s, {floor_mb:.0f} MB: "
        f"**{fmt_ratio(ratio)}** (CPU {fmt_ratio(check_cpu / floor_cpu)}; built in {built:.0f} s)"
    )
    met = check_s < TARGET_SECONDS and check_mb < TARGET_MB and ratio <= TARGET_RATIO
    target = f"< 30 s, < 500 MB, <= 2x the floor: {'met' if met else '**missed**'}"
    context = (
        f"10b. Context for the row above: the walked floor (the floor plus every "
        f"checkpoint's version maps), {kind}"
    )
    walked = (
        f"{walked_s:.1f} s: **{fmt_ratio(walked_s / floor_s)}** the floor "
        f"(CPU {fmt_ratio(walked_cpu / floor_cpu)}); check is "
        f"{fmt_ratio(check_s / walked_s)} of it (CPU {fmt_ratio(check_cpu / walked_cpu)})"
    )
    walk, decided = pure_costs()
    allowed = (TARGET_RATIO - 1) * floor_s / threads
    budget = (
        f"10c. Per thread, {kind}: what 2x the floor leaves for check's own work, against "
        "walking one thread's decoded checkpoints into records and deciding it (pure, in "
        "process, nothing read)"
    )
    costs = (
        f"{allowed * 1e6:.0f} µs left; the walk takes {walk * 1e6:.0f} µs, decide "
        f"{decided * 1e6:.0f} µs: **{fmt_ratio((walk + decided) / allowed)}** of what is left"
    )
    jobs_s, _, jobs_cpu, _ = _run("check2", db)
    split = (
        f"10e. `check --jobs 2` of the same {threads:,} threads, {kind}, against "
        "`--jobs 1` (CPU: both processes and the parent)"
    )
    split_found = (
        f"{jobs_s:.1f} s vs {check_s:.1f} s: **{fmt_ratio(jobs_s / check_s)}** wall "
        f"(CPU {fmt_ratio(jobs_cpu / check_cpu)})"
    )
    return [
        Result((what, result, target), missed=not met),
        Result((split, split_found, "no target on 2 cores; the CPU it adds")),
        Result((context, walked, "no target; what check cannot read less than")),
        Result((budget, costs, "no target; the budget the 2x target sets")),
    ]


def _run(mode: str, db: str) -> tuple[float, float, float, int]:
    return measured([sys.executable, str(HERE / "bench_fleet.py"), "--child", mode, "--db", db])


def measure_mixed(kind: str, db: str, threads: int) -> Result:
    """Figure 10d: a mixed fleet's check (2 in 5 threads written by the current code),
    and how many threads their heads settled (no lineage read)."""
    floor_s, _, floor_cpu, _ = _run("floor", db)
    check_s, check_mb, check_cpu, walked = _run("check", db)
    settled = threads + 1 - walked  # the copies, the source and the current thread
    what = (
        f"10d. `check` of a mixed fleet, {threads:,} threads ({MIXED_SHARE} in 5 written by "
        f"the current code), {kind}: threads settled from their head row alone"
    )
    found = (
        f"{settled:,} of {threads + 1:,} settled from the head ({settled / (threads + 1):.0%}); "
        f"check {check_s:.1f} s, {check_mb:.0f} MB vs floor {floor_s:.1f} s: "
        f"**{fmt_ratio(check_s / floor_s)}** (CPU {fmt_ratio(check_cpu / floor_cpu)})"
    )
    return Result((what, found, "no target; the head-first read's share"))


def rows(sizes: tuple[int, ...] = SIZES, dsn: str | None = None) -> list[Result]:
    """Figure 10 for SQLite, and PostgreSQL when ``dsn`` names a throwaway database."""
    found: list[Result] = []
    for threads in sizes:
        with tempfile.TemporaryDirectory(prefix="neograph-ext-fleet-") as tmp:
            path = Path(tmp) / "fleet.sqlite"
            found += measure("SQLite", str(path), threads, build_sqlite(path, threads))
        with tempfile.TemporaryDirectory(prefix="neograph-ext-fleet-") as tmp:
            path = Path(tmp) / "fleet.sqlite"
            build_sqlite(path, threads, mixed=True)
            found.append(measure_mixed("SQLite", str(path), threads))
        if dsn:
            found += measure("PostgreSQL", dsn, threads, build_pg(dsn, threads))
            build_pg(dsn, threads, mixed=True)
            found.append(measure_mixed("PostgreSQL", dsn, threads))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default=",".join(str(n) for n in SIZES))
    parser.add_argument("--pg", action="store_true", help=f"also PostgreSQL (${PG_DSN_ENV})")
    parser.add_argument("--child")
    parser.add_argument("--db")
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.db)
        return
    sizes = tuple(int(n) for n in args.threads.split(","))
    for result in rows(sizes, os.environ.get(PG_DSN_ENV) if args.pg else None):
        print(" | ".join(result.row), flush=True)


if __name__ == "__main__":
    main()
