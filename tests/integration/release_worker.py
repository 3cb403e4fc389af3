"""Runs one call of a release of ``tests.graphs.turns``' shapes on a SQLite file, in its
own process, as a deployed release would.

Usage:
    python -m tests.integration.release_worker agent DB THREAD RELEASE MESSAGE
    python -m tests.integration.release_worker cache DB THREAD RELEASE CACHE

``agent``: the weather agent of RELEASE (``1``: ``Weather``; ``2``: ``Weather`` with a
required ``humidity``) is sent MESSAGE. ``cache``: the cached chat of RELEASE (``2``
changes the report's type) runs on a new THREAD, its node cache in the SqliteCache file
CACHE. Prints this process's node executions as JSON, or ``{"error": <class name>}``.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.cache.sqlite import SqliteCache
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import CachePolicy

import neograph_ext as ne
from tests.graphs.turns import DOC, WEATHER, WEATHER_V2, cached_chat, weather_agent


def released(*args: str) -> dict[str, Any]:
    """Run this worker with ``args`` in a new process; what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.release_worker", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main(scenario: str, db: str, thread: str, release: str, extra: str) -> None:
    runs: Counter[str] = Counter()
    config = {"configurable": {"thread_id": thread}}
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        if scenario == "agent":
            built = weather_agent(runs, WEATHER if release == "1" else WEATHER_V2)
            graph = ne.compile(built, checkpointer=saver)
            given: object = {"messages": [HumanMessage(extra)]}
        else:
            chat = cached_chat(runs, CachePolicy(), None if release == "1" else "report")
            graph = ne.compile(chat, checkpointer=saver, cache=SqliteCache(path=extra))
            given = {"doc": DOC["old"](title="q")}
        try:
            ne.run(graph, given, config)  # type: ignore[arg-type]
        except ne.CheckpointSchemaError as exc:
            print(json.dumps({"error": type(exc).__name__}))
            return
    finally:
        conn.close()
    print(json.dumps(dict(runs)))


if __name__ == "__main__":
    main(*sys.argv[1:6])
