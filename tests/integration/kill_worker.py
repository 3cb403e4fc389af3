"""Runs the linear pipeline in its own process; a node may kill the process mid-run.

Usage: python -m tests.integration.kill_worker DB THREAD LOG [EXIT_IN_NODE]
DB is an SQLite file path or a postgresql:// DSN. Each node execution appends its
name to LOG. EXIT_IN_NODE makes that node end the process with os._exit, as a kill
would: no exception handling, no cleanup, nothing flushed by LangGraph.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph

import neograph_ext as ne
from tests.graphs.pipelines import State


@contextlib.contextmanager
def open_saver(db: str) -> Iterator[BaseCheckpointSaver[Any]]:
    if db.startswith("postgresql://"):
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(db) as saver:
            saver.setup()
            yield saver
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(db) as sqlite_saver:
            yield sqlite_saver


def main(db: str, thread: str, log: str, exit_in: str | None) -> None:
    def make(name: str) -> Any:
        def fn(state: State) -> dict[str, Any]:
            with open(log, "a") as f:
                f.write(name + "\n")
            if name == exit_in:
                os._exit(17)
            return {"log": [name]}

        return fn

    builder = StateGraph(State)
    names = "abcd"
    for name in names:
        builder.add_node(name, make(name))
    builder.add_edge(START, "a")
    for before, after in pairwise(names):
        builder.add_edge(before, after)
    with open_saver(db) as saver:
        graph = ne.compile(builder, checkpointer=saver)
        result = ne.run(graph, {"log": []}, {"configurable": {"thread_id": thread}})
    print(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:4], sys.argv[4] if len(sys.argv) > 4 else None)
