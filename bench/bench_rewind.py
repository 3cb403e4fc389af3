"""Figure 4: what a rewind saves, against deleting the thread and running it again.

A 10-node pipeline whose nodes each sleep 50 ms (a stand-in for a model call) has
completed a thread. Then node 8's output type changes (a field's type: ``int`` to
``float``). Each repetition gets its own copy of the completed thread (made
untimed), and either:

- ``neograph_ext.run(new_graph, input, config)``: plans ``rewind`` and re-runs node 8
  and what follows it; or
- ``saver.delete_thread(thread_id)`` then ``neograph_ext.run(new_graph, input,
  config)``: the fresh run a user does without neograph-ext.

Node executions are counted on every call.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypedDict

from _harness import Case, Result, Row, compared, copy_sqlite_thread, interleave, sqlite_saver
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, create_model

import neograph_ext

NODES = 10
CHANGED = 8
SLEEP = 0.050
REPS = 7


def node_name(index: int) -> str:
    return f"node_{index:02d}"


class PipeState(TypedDict, total=False):
    doc: str
    done: int


def output_model(score: type) -> type[BaseModel]:
    """Node 8's declared output: ``score`` is ``int`` before the change, ``float`` after."""
    return create_model("Analysis", __module__=__name__, score=(score, ...))


class Pipeline:
    """The 10-node chain; ``counts`` records every node execution."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def node(self, name: str) -> Callable[[PipeState], dict[str, int]]:
        def work(state: PipeState) -> dict[str, int]:
            self.counts[name] += 1
            time.sleep(SLEEP)
            return {"done": state.get("done", 0) + 1}

        return work

    def compile(self, saver: Any, score: type) -> Any:
        builder: StateGraph[Any, Any, Any, Any] = StateGraph(PipeState)
        previous = START
        for index in range(1, NODES + 1):
            builder.add_node(node_name(index), self.node(node_name(index)))
            builder.add_edge(previous, node_name(index))
            previous = node_name(index)
        builder.add_edge(previous, END)
        return neograph_ext.compile(
            builder, checkpointer=saver, output_types={node_name(CHANGED): output_model(score)}
        )


def measure(saver: Any, copy: Callable[[str, str], None], reps: int = REPS) -> list[Result]:
    pipeline = Pipeline()
    old, new = pipeline.compile(saver, int), pipeline.compile(saver, float)
    source = "pipeline-before-change"
    neograph_ext.run(old, {"doc": "x"}, {"configurable": {"thread_id": source}})
    plan = neograph_ext.plan(new, {"configurable": {"thread_id": source}})
    assert plan.kind == "rewind" and plan.invalidated_nodes == {node_name(CHANGED)}, plan
    ids = itertools.count()
    executed: dict[str, list[int]] = {"rewind": [], "rerun": []}

    def fresh() -> str:
        thread_id = f"{source}-{next(ids)}"
        copy(source, thread_id)
        return thread_id

    def rewind(thread_id: str) -> Any:
        return neograph_ext.run(new, {"doc": "x"}, {"configurable": {"thread_id": thread_id}})

    def rerun(thread_id: str) -> Any:
        saver.delete_thread(thread_id)
        return neograph_ext.run(new, {"doc": "x"}, {"configurable": {"thread_id": thread_id}})

    def counted(name: str, fn: Callable[[str], Any]) -> Callable[[str], Any]:
        def call(thread_id: str) -> Any:
            before = sum(pipeline.counts.values())
            result = fn(thread_id)
            executed[name].append(sum(pipeline.counts.values()) - before)
            return result

        return call

    def check(_: str, result: object) -> None:
        assert result == {"doc": "x", "done": NODES}, result

    timings = interleave(
        [
            Case("rewind", counted("rewind", rewind), fresh, check),
            Case("rerun", counted("rerun", rerun), fresh, check),
        ],
        reps,
    )
    nodes = {name: sorted(set(counts)) for name, counts in executed.items()}
    assert nodes == {"rewind": [NODES - CHANGED + 1], "rerun": [NODES]}, nodes
    floor = (NODES - CHANGED + 1) * SLEEP / (NODES * SLEEP)
    row = (
        f"4. Rewind after node {CHANGED}'s type changed, {NODES} nodes x "
        f"{SLEEP * 1000:.0f} ms, SQLite: `run()` (rewind) vs `delete_thread` + `run()`",
        f"{compared(timings, 'rewind', 'rerun')}; nodes run: "
        f"{nodes['rewind'][0]} vs {nodes['rerun'][0]}",
        f"saves {1 - timings.ratio('rewind', 'rerun'):.0%} of the time (sleep alone: {floor:.2f}x)",
    )
    return [Result(row)]


def run() -> list[Row]:
    with sqlite_saver() as saver:
        results = measure(saver, lambda a, b: copy_sqlite_thread(saver, a, b))
    return [result.row for result in results]


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row), file=sys.stdout)
