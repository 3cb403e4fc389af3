"""Runs a graph whose node ``b`` is cached in a SqliteCache, in its own process.

Usage: python -m tests.integration.cache_worker DB CACHE THREAD SCORE_TYPE
SCORE_TYPE (``int`` or ``float``) is the field type of ``b``'s declared output: the
"deploy". Prints the node executions of this process as JSON.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import Counter

from langgraph.cache.sqlite import SqliteCache
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import CachePolicy

import neograph_ext as ne
from tests.graphs.pipelines import linear, model


def main(db: str, cache: str, thread: str, score_type: str) -> None:
    runs: Counter[str] = Counter()
    returns = {"b": model(score=({"int": int, "float": float}[score_type], ...))}
    builder = linear(runs, returns, names=("a", "b"))
    builder.nodes["b"].cache_policy = CachePolicy()
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = ne.compile(builder, checkpointer=SqliteSaver(conn), cache=SqliteCache(path=cache))
        ne.run(graph, {"log": []}, {"configurable": {"thread_id": thread}})
    finally:
        conn.close()
    print(json.dumps(dict(runs)))


if __name__ == "__main__":
    main(*sys.argv[1:5])
