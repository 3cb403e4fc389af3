"""One batch of the peer comparison, run in a subprocess: prints its timings as JSON.

    python bench/peer_driver.py ours REPS     # neograph-ext, in this project's venv
    python bench/peer_driver.py peer REPS     # neograph, in a venv of its own

Both sides build the same 4-node pipeline (``first -> second -> third -> fourth``,
each node returning a pydantic model built from the previous one) in their own
API, on a ``SqliteSaver`` over a fresh database file, and time, after one warm-up:

- ``resume``: the library's ``run`` on a completed thread, with the same input, no
  code change (nothing should execute);
- ``rewind``: ``run`` with a graph whose ``third`` node returns a changed model
  (one field added), on a fresh copy of a thread the old graph completed. Each
  repetition gets its own thread, written untimed just before.
- ``again``: ``run`` once more with the changed graph on the thread just rewound
  (nothing should execute a second time).

Node executions are counted and reported for each kind. This file imports only the
standard library, pydantic and LangGraph at module level, so either venv can run it.
Annotations are evaluated eagerly (no ``from __future__ import annotations``): neograph
reads node signatures, and ``third``'s type is a local variable.
"""

import json
import logging
import os
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from _harness import copy_sqlite_thread
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel, create_model


class First(BaseModel):
    text: str


class Second(BaseModel):
    words: int


class Fourth(BaseModel):
    summary: str


def third_model(changed: bool) -> type[BaseModel]:
    """The model ``third`` returns: the changed one has one field more."""
    fields: dict[str, Any] = {"score": (int, ...)}
    if changed:
        fields["label"] = (str, "")
    return create_model("Third", __module__=__name__, **fields)


COUNTS: Counter[str] = Counter()

Build = Callable[[bool], Any]
"""Compile the pipeline on the saver: ``changed`` selects the new ``third`` model."""
Run = Callable[[Any, str], Any]
"""Run or resume a thread with the pipeline's input."""


def ours(saver: SqliteSaver) -> tuple[Build, Run]:
    """The pipeline as a LangGraph StateGraph compiled by neograph-ext."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    import neograph_ext

    def build(changed: bool) -> Any:
        third_type = third_model(changed)

        class State(TypedDict, total=False):
            doc: str
            first: First
            second: Second
            third: third_type  # type: ignore[valid-type]
            fourth: Fourth

        def first(s: Any) -> dict[str, Any]:
            COUNTS["first"] += 1
            return {"first": First(text=s["doc"].upper())}

        def second(s: Any) -> dict[str, Any]:
            COUNTS["second"] += 1
            return {"second": Second(words=len(s["first"].text.split()))}

        def third(s: Any) -> dict[str, Any]:
            COUNTS["third"] += 1
            return {"third": third_type(score=s["second"].words * 2)}

        def fourth(s: Any) -> dict[str, Any]:
            COUNTS["fourth"] += 1
            return {"fourth": Fourth(summary=f"score {s['third'].score}")}

        builder: StateGraph[Any, Any, Any, Any] = StateGraph(State)
        for fn in (first, second, third, fourth):
            builder.add_node(fn.__name__, fn)
        builder.add_edge(START, "first")
        builder.add_edge("first", "second")
        builder.add_edge("second", "third")
        builder.add_edge("third", "fourth")
        builder.add_edge("fourth", END)
        types = {"first": First, "second": Second, "third": third_type, "fourth": Fourth}
        return neograph_ext.compile(builder, checkpointer=saver, output_types=types)

    def run(graph: Any, thread_id: str) -> Any:
        config = {"configurable": {"thread_id": thread_id}}
        return neograph_ext.run(graph, {"doc": "a b c"}, config)

    return build, run


def peer(saver: SqliteSaver) -> tuple[Build, Run]:
    """The pipeline as neograph ``@node`` functions (scripted mode: no LLM)."""
    from typing import Annotated

    import structlog
    from neograph import FromInput, compile, construct_from_functions, node, run

    # neograph logs every node start and end at info level; time the work, not a console.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

    def build(changed: bool) -> Any:
        third_type = third_model(changed)

        @node(outputs=First)
        def first(doc: Annotated[str, FromInput]) -> First:
            COUNTS["first"] += 1
            return First(text=doc.upper())

        @node(outputs=Second)
        def second(first: First) -> Second:
            COUNTS["second"] += 1
            return Second(words=len(first.text.split()))

        @node(outputs=third_type)
        def third(second: Second) -> third_type:  # type: ignore[valid-type]
            COUNTS["third"] += 1
            return third_type(score=second.words * 2)

        @node(outputs=Fourth)
        def fourth(third: third_type) -> Fourth:  # type: ignore[valid-type]
            COUNTS["fourth"] += 1
            return Fourth(summary=f"score {third.score}")

        pipeline = construct_from_functions("pipeline", [first, second, third, fourth])
        return compile(pipeline, checkpointer=saver)

    def run_(graph: Any, thread_id: str) -> Any:
        return run(graph, input={"doc": "a b c"}, config={"configurable": {"thread_id": thread_id}})

    return build, run_


def timed(fn: Callable[[], Any]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and nodes executed by one call."""
    before = sum(COUNTS.values())
    cpu = time.process_time()
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    return wall, time.process_time() - cpu, sum(COUNTS.values()) - before


def _version(side: str) -> str:
    from importlib.metadata import version

    return version("neograph-ext" if side == "ours" else "neograph")


def main(side: str, reps: int) -> dict[str, Any]:
    directory = os.environ.get("NEOGRAPH_EXT_BENCH_DIR") or None
    with tempfile.TemporaryDirectory(prefix="neograph-ext-peer-", dir=directory) as tmp:
        conn = sqlite3.connect(os.path.join(tmp, "checkpoints.db"), check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        build, run = (ours if side == "ours" else peer)(saver)
        old, new = build(False), build(True)
        run(old, "template")  # a completed thread written by the old code
        kinds = ("resume", "rewind", "again")
        out: dict[str, Any] = {"side": side, "wall": {k: [] for k in kinds}}
        out["cpu"] = {k: [] for k in kinds}
        nodes: dict[str, set[int]] = {k: set() for k in kinds}
        for rep in range(reps + 1):
            thread_id = f"t{rep}"
            copy_sqlite_thread(saver, "template", thread_id)
            resume = timed(lambda: run(old, "template"))
            rewind = timed(lambda t=thread_id: run(new, t))
            again = timed(lambda t=thread_id: run(new, t))
            if rep == 0:
                continue  # warm-up
            for key, (wall, cpu, count) in zip(kinds, (resume, rewind, again), strict=True):
                out["wall"][key].append(wall)
                out["cpu"][key].append(cpu)
                nodes[key].add(count)
        out["nodes"] = {key: sorted(values) for key, values in nodes.items()}
        out["version"] = _version(side)
        conn.close()
        return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]))))
