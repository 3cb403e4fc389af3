"""Figure 8: a rewind after a one-branch change, against re-running the whole superstep.

A fan-out ``split -> (branch_1 .. branch_5) -> merge`` whose branches each sleep 50 ms
(a stand-in for a model call) has completed a thread. Then ``branch_3``'s output type
changes. Each repetition gets its own copy of the completed thread (made untimed),
and either:

- ``neograph_ext.run(new_graph, None, config)``: rewinds to the checkpoint before the
  branches, keeps the four unchanged branches' writes, runs ``branch_3`` and ``merge``;
- ``new_graph.invoke(None, config_at_that_checkpoint)``: LangGraph's time travel from
  the same checkpoint, which re-runs the whole superstep (what a rewind did before).

Node executions are counted on every call. LangGraph runs the branches of a
superstep concurrently, so the wall time of the two differs by much less than the
node count: what keeping saves is mostly the calls themselves (tokens, money).
"""

from __future__ import annotations

import itertools
import operator
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from _harness import Case, Result, Row, compared, copy_sqlite_thread, interleave, sqlite_saver
from langgraph.graph import START, StateGraph
from pydantic import BaseModel, create_model

import neograph_ext

BRANCHES = 5
CHANGED = 3
SLEEP = 0.050
REPS = 7


class FanState(TypedDict, total=False):
    doc: str
    notes: Annotated[list[str], operator.add]


def branch(index: int) -> str:
    return f"branch_{index}"


def output_model(score: type) -> type[BaseModel]:
    """``branch_3``'s declared output: ``score`` is ``int`` before, ``float`` after."""
    return create_model("Analysis", __module__=__name__, score=(score, ...))


class FanOut:
    """The fan-out graph; ``counts`` records every node execution."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def node(self, name: str, sleep: float) -> Callable[[FanState], dict[str, list[str]]]:
        def work(state: FanState) -> dict[str, list[str]]:
            self.counts[name] += 1
            time.sleep(sleep)
            return {"notes": [name]}

        return work

    def compile(self, saver: Any, score: type) -> Any:
        builder: StateGraph[Any, Any, Any, Any] = StateGraph(FanState)
        builder.add_node("split", self.node("split", 0.0))
        builder.add_node("merge", self.node("merge", 0.0))
        builder.add_edge(START, "split")
        names = [branch(i) for i in range(1, BRANCHES + 1)]
        for name in names:
            builder.add_node(name, self.node(name, SLEEP))
            builder.add_edge("split", name)
        builder.add_edge(names, "merge")
        return neograph_ext.compile(
            builder, checkpointer=saver, output_types={branch(CHANGED): output_model(score)}
        )


def measure(saver: Any, copy: Callable[[str, str], None], reps: int = REPS) -> list[Result]:
    fan = FanOut()
    old, new = fan.compile(saver, int), fan.compile(saver, float)
    source = "fan-out-before-change"
    neograph_ext.run(old, {"doc": "x"}, {"configurable": {"thread_id": source}})
    plan = neograph_ext.plan(new, {"configurable": {"thread_id": source}})
    assert plan.kind == "rewind" and plan.rerun == {branch(CHANGED), "merge"}, plan
    ids = itertools.count()
    executed: dict[str, list[int]] = {"keep": [], "superstep": []}

    def fresh() -> str:
        thread_id = f"{source}-{next(ids)}"
        copy(source, thread_id)
        return thread_id

    def keep(thread_id: str) -> Any:
        return neograph_ext.run(new, None, {"configurable": {"thread_id": thread_id}})

    def superstep(thread_id: str) -> Any:
        # The copy keeps checkpoint ids: this is the checkpoint the plan forks from.
        at = {"configurable": {"thread_id": thread_id, "checkpoint_id": plan.checkpoint_id}}
        return new.invoke(None, at)

    def counted(name: str, fn: Callable[[str], Any]) -> Callable[[str], Any]:
        def call(thread_id: str) -> Any:
            before = sum(fan.counts.values())
            result = fn(thread_id)
            executed[name].append(sum(fan.counts.values()) - before)
            return result

        return call

    def check(_: str, result: object) -> None:
        assert isinstance(result, dict) and len(result["notes"]) == BRANCHES + 2, result

    timings = interleave(
        [
            Case("keep", counted("keep", keep), fresh, check),
            Case("superstep", counted("superstep", superstep), fresh, check),
        ],
        reps,
    )
    nodes = {name: sorted(set(counts)) for name, counts in executed.items()}
    assert nodes == {"keep": [2], "superstep": [BRANCHES + 1]}, nodes
    row = (
        f"8. Rewind after one branch's type changed, fan-out of {BRANCHES} branches x "
        f"{SLEEP * 1000:.0f} ms, SQLite: `run()` (keeps the unchanged branches) vs "
        "LangGraph time travel re-running the superstep",
        f"{compared(timings, 'keep', 'superstep')}; nodes run: "
        f"{nodes['keep'][0]} vs {nodes['superstep'][0]}",
        f"{BRANCHES - 1} of {BRANCHES} branch calls saved; the branches run concurrently, "
        "so the time saved is small",
    )
    return [Result(row)]


def run() -> list[Row]:
    with sqlite_saver() as saver:
        results = measure(saver, lambda a, b: copy_sqlite_thread(saver, a, b))
    return [result.row for result in results]


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row), file=sys.stdout)
