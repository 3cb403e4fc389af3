"""One release of ``tests.graphs.calls.summaries`` in its own process: a deploy's worker.

Usage: python -m tests.integration.calls_worker DB THREAD RELEASE
DB is an SQLite file path or a postgresql:// DSN. RELEASE is ``1`` (alpha then beta,
``join`` crashes), ``1-again`` (release 1 without the crash: the control) or ``2``
(the two ``summ`` calls swapped). Prints one JSON line: the plan's kind, what it kept,
the result (or the crash) and the task executions.
"""

from __future__ import annotations

import json
import sys
from collections import Counter

import neograph_ext as ne
from tests.graphs.calls import SUMMARIES, summaries
from tests.graphs.pipelines import Crash
from tests.integration.kill_worker import open_saver


def main(db: str, thread: str, release: str) -> None:
    runs: Counter[str] = Counter()
    crash = {"join"} if release == "1" else set()
    config = {"configurable": {"thread_id": thread}}
    with open_saver(db) as saver:
        graph = ne.compile(summaries(runs, crash, swapped=release == "2"), checkpointer=saver)
        plan = ne.plan(graph, config)
        try:
            result = ne.run(graph, SUMMARIES, config)
        except Crash as exc:
            result = f"crashed in {exc}"
    done = {"plan": str(plan.kind), "kept": sorted(plan.kept), "result": result, "runs": runs}
    print(json.dumps(done))


if __name__ == "__main__":
    main(*sys.argv[1:4])
