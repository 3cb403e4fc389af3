"""A deploy as an operation: ``check --cost`` and ``upgrade`` on a fleet written by three
releases (``tests/graphs/releases.py``), and whether the estimate is what resuming spends.

One thread of each kind is written by ``run()`` (release 1 with and without a budget,
release 2, release 3, and release 4, newer than the code checked), then copied to N
threads in all by ``INSERT ... SELECT`` (their ledgers too: they live in the thread).
Then, each in a fresh process: ``check --cost --json``, ``upgrade --json`` (a dry run),
``upgrade --apply --yes --json``; and in this process every thread is resumed under
release 3 with the counting fake model: the model calls of the threads with a record
must equal the estimate.

    python bench/bench_upgrade.py --threads 10000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

import neograph_ext  # noqa: E402
from tests.graphs.releases import CALLS, compiled, fleet  # noqa: E402

GRAPH = "tests.graphs.releases:current"
KINDS = ("rewind", "unrecorded", "carry", "current", "newer")


def build(path: Path, threads: int) -> dict[str, int]:
    """``threads`` threads, a fifth of each kind; how many of each."""
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    fleet(saver, each=1)
    series = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
    each = threads // len(KINDS)
    with conn:
        for kind in KINDS:
            for table in ("checkpoints", "writes"):
                columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
                rest = ", ".join(columns[1:])
                conn.execute(
                    f"{series}INSERT INTO {table} SELECT '{kind}-' || printf('%07d', i), {rest} "
                    f"FROM {table}, n WHERE thread_id = ?",
                    (each - 1, f"{kind}-0"),
                )
    conn.close()
    return dict.fromkeys(KINDS, each)


def timed(*args: str) -> tuple[float, dict[str, object]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "neograph_ext.cli", *args],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr)
    return seconds, json.loads(done.stdout)


def resumed(path: Path) -> tuple[float, dict[str, int]]:
    """Every thread resumed under release 3: the seconds, and the model calls per kind."""
    per_kind = dict.fromkeys(KINDS, 0)
    started = time.perf_counter()
    with SqliteSaver.from_conn_string(str(path)) as saver:
        graph = compiled(3, saver)
        for check in neograph_ext.check_threads(graph):
            CALLS.clear()
            thread = check.plan.thread_id
            with contextlib.suppress(neograph_ext.ThreadSupersededError):
                neograph_ext.run(graph, None, {"configurable": {"thread_id": thread}})
            per_kind[thread.split("-")[0]] += sum(CALLS.values())
    return time.perf_counter() - started, per_kind


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=10_000)
    threads = parser.parse_args().threads
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fleet.sqlite"
        made = build(path, threads)
        db = ("--db", str(path))
        check_s, check = timed("check", GRAPH, *db, "--cost", "--json")
        dry_s, dry = timed("upgrade", GRAPH, *db, "--json")
        apply_s, applied = timed("upgrade", GRAPH, *db, "--apply", "--yes", "--json")
        again_s, again = timed("upgrade", GRAPH, *db, "--apply", "--yes", "--json")
        resume_s, spent = resumed(path)
    cost = check["cost"]["total"]  # type: ignore[index]
    recorded = sum(n for kind, n in spent.items() if kind != "unrecorded")
    print(f"fleet: {sum(made.values())} threads, {made}")
    print(f"check --cost: {check_s:.1f} s; estimate {cost}")
    print(f"upgrade (dry run): {dry_s:.1f} s; {dry['totals']}")
    print(f"upgrade --apply: {apply_s:.1f} s; {applied['totals']}")
    print(f"upgrade --apply again: {again_s:.1f} s; {again['totals']}")
    print(f"resuming every thread: {resume_s:.1f} s; model calls per kind {spent}")
    verdict = "equal" if recorded == cost["spend"]["model_calls"] else "DIFFERENT"
    print(
        f"estimate {cost['spend']['model_calls']} vs spent {recorded} (recorded threads): {verdict}"
    )


if __name__ == "__main__":
    main()
