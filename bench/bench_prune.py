"""Pruning a SQLite database that months of deploys left behind: how long a dry run, an
``apply`` and a ``VACUUM`` take, and what they free.

``THREADS`` threads of a ``a -> b -> c -> d`` pipeline, each run once and then rewound by
``DEPLOYS`` deploys in a row (each changes another node's ``versions``), so every thread
carries the branches those rewinds left. Timings are one run each (pruning is an
operation run once in a while, not a hot path); sizes are the file's and what
``prune`` reports.

    python bench/bench_prune.py [THREADS]
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import neograph_ext as ne  # noqa: E402
from tests.graphs.pipelines import linear  # noqa: E402

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
DEPLOYS = ({"d": "v2"}, {"c": "v2", "d": "v2"}, {"b": "v2", "c": "v2", "d": "v2"})


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.sqlite"
        conn = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(conn)
        runs: Counter[str] = Counter()
        configs = [{"configurable": {"thread_id": f"t{i}"}} for i in range(THREADS)]
        graph = ne.compile(linear(runs), checkpointer=saver)
        for config in configs:
            ne.run(graph, {"log": []}, config)
        for versions in DEPLOYS:
            graph = ne.compile(linear(runs), checkpointer=saver, versions=versions)
            for config in configs:
                ne.run(graph, None, config)
        (rows,) = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
        size = path.stat().st_size

        started = time.perf_counter()
        dry = ne.prune(graph)
        dry_s = time.perf_counter() - started
        started = time.perf_counter()
        done = ne.prune(graph, apply=True)
        apply_s = time.perf_counter() - started
        started = time.perf_counter()
        vacuumed = ne.prune(graph, apply=True, vacuum_after=True).vacuumed
        vacuum_s = time.perf_counter() - started
        (left,) = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
        conn.close()
    assert dry.checkpoints == done.checkpoints and vacuumed is not None
    print(f"threads: {THREADS}, deploys: {len(DEPLOYS)} rewinds each")
    print(
        f"checkpoint rows: {rows} -> {left} ({done.checkpoints} pruned, "
        f"{done.writes} writes, {done.bytes:,} payload bytes)"
    )
    print(
        f"dry run: {dry_s:.2f} s; apply: {apply_s:.2f} s; second apply + VACUUM: {vacuum_s:.2f} s"
    )
    print(f"file: {size:,} bytes; VACUUM: {vacuumed[0]:,} -> {vacuumed[1]:,} bytes")


if __name__ == "__main__":
    main()
