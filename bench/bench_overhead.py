"""Figure 1: what ``run()`` costs on a fresh thread, against plain LangGraph.

The same 20-node builder (trivial nodes) is compiled twice on one SQLite file saver:
by ``neograph_ext.compile`` and by LangGraph's ``builder.compile``. Each repetition
starts a new thread on both: ``neograph_ext.run(graph, input, config)`` against
``graph.invoke(input, config, durability="sync")`` (``run``'s default durability).
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

from _harness import (
    Case,
    Probe,
    Result,
    Row,
    chain_builder,
    compared,
    interleave,
    sqlite_saver,
    verdict,
)

import neograph_ext

NODES = 20
REPS = 41
TARGET = 1.10


def measure(saver: Any, reps: int = REPS) -> list[Result]:
    ours = neograph_ext.compile(chain_builder(NODES), checkpointer=saver)
    plain = chain_builder(NODES).compile(checkpointer=saver)
    ids = itertools.count()

    def fresh(_: Any = None) -> dict[str, Any]:
        return {"configurable": {"thread_id": f"fresh-{next(ids)}"}}

    def check(_: Any, result: object) -> None:
        assert result == {"n": NODES}, result

    def run_(config: Any) -> object:
        return neograph_ext.run(ours, {"n": 0}, config)

    def invoke(config: Any) -> object:
        return plain.invoke({"n": 0}, config, durability="sync")

    timings = interleave(
        [Case("run", run_, fresh, check), Case("invoke", invoke, fresh, check)], reps
    )
    ratio = timings.ratio("run", "invoke")
    row = (
        f"1. Fresh run, {NODES} trivial nodes, SQLite: `run()` vs plain `graph.invoke`",
        compared(timings, "run", "invoke"),
        verdict(ratio, TARGET),
    )
    probes = (
        Probe("neograph_ext.run(graph, input, config)", run_, fresh),
        Probe('graph.invoke(input, config, durability="sync")', invoke, fresh),
    )
    return [Result(row, ratio > TARGET, probes)]


def run() -> list[Row]:
    with sqlite_saver() as saver:
        return [result.row for result in measure(saver)]


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row), file=sys.stdout)
