"""Runs the budgeted pipeline in its own process; a node may kill the process mid-run.

Usage: python -m tests.integration.budget_worker DB THREAD [KILL_IN_NODE]
DB is an SQLite file path or a postgresql:// DSN. KILL_IN_NODE makes that node end the
process with os._exit after its model calls, as a kill would. Prints the ledger's total.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import asdict

import neograph_ext as ne
from tests.graphs.budget import pipeline
from tests.integration.kill_worker import open_saver


def main(db: str, thread: str, kill: str | None) -> None:
    config = {"configurable": {"thread_id": thread}}
    with open_saver(db) as saver:
        graph = ne.compile(
            pipeline(Counter(), kill={kill} if kill else ()),
            checkpointer=saver,
            attach=[ne.budget.Budget(max_model_calls=100)],
        )
        ne.run(graph, {"topic": "t"}, config)
        ledger = ne.budget.ledger(saver, config)
    print(json.dumps(asdict(ledger.total) if ledger else None))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
