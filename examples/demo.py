"""neograph-ext in four runs of one LangGraph thread, on an SQLite file.

    python examples/demo.py [WORKDIR]

1. The first run crashes in ``review`` (a simulated LLM timeout).
2. The second run resumes: finished nodes are not repeated.
3. A deploy changes what ``summarize`` returns; the third run rewinds to just before
   ``summarize`` and re-runs it and what follows, keeping ``fetch`` and ``extract``.
4. Another deploy changes ``review``; in strict mode (as in CI) the fourth run raises
   ``CheckpointSchemaError`` before any node runs.

Nodes sleep briefly instead of calling an LLM, so no API key is needed. The database
is created fresh in WORKDIR (default: a fixed directory under the system's temp dir).
"""

import shlex
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any, TypedDict

from demo_models import Facts, ReviewV1, ReviewV3, SummaryV1, SummaryV2, sample
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

import neograph_ext as ne

THREAD = "report-42"
INPUT = {"doc_id": "RFC-42"}
CONFIG = {"configurable": {"thread_id": THREAD}}
LLM_LATENCY = 0.2  # seconds each node sleeps instead of calling a model
NODES = ("fetch", "extract", "summarize", "review", "publish")


class LLMTimeout(RuntimeError):
    """Stands in for a provider timeout, or the process dying mid-run."""


def build(
    summary_model: type[BaseModel],
    review_model: type[BaseModel],
    ran: list[str],
    *,
    crash_in: str | None = None,
) -> StateGraph:
    """The pipeline as one deploy wrote it.

    ``summary_model`` and ``review_model`` are what ``summarize`` and ``review`` return
    (an LLM's structured output). Each node appends its name to ``ran``; the node named
    ``crash_in`` fails after its LLM call.
    """

    class State(TypedDict, total=False):
        doc_id: str
        doc: str
        facts: Facts
        summary: summary_model
        review: review_model
        report: str

    answers: dict[str, Callable[[], dict[str, Any]]] = {
        "fetch": lambda: {"doc": "RFC-42: Versioned pipeline outputs. ..."},
        "extract": lambda: {"facts": sample(Facts)},
        "summarize": lambda: {"summary": sample(summary_model)},
        "review": lambda: {"review": sample(review_model)},
        "publish": lambda: {"report": "Versioned pipeline outputs: approved"},
    }

    def llm_node(name: str) -> Callable[[State], dict[str, Any]]:
        def node(state: State) -> dict[str, Any]:
            ran.append(name)
            print(f"    {name:<10} running...", flush=True)
            time.sleep(LLM_LATENCY)
            if name == crash_in:
                raise LLMTimeout(f"{name}: the LLM call timed out")
            return answers[name]()

        return node

    builder = StateGraph(State)
    for name in NODES:
        builder.add_node(name, llm_node(name))
    builder.add_edge(START, NODES[0])
    for before, after in pairwise(NODES):
        builder.add_edge(before, after)
    builder.add_edge(NODES[-1], END)
    return builder


builder = build(SummaryV2, ReviewV3, [])
"""The pipeline as the last deploy left it: what the command line loads as GRAPH
(``examples/demo.py:builder``) to look at the demo's thread."""


def cli_hints(db: Path) -> list[str]:
    """Commands to look at the thread with, as they run from here: ``neograph-ext`` is
    in the virtualenv's ``bin`` (rarely on PATH), else ``python -m neograph_ext.cli``."""
    script = Path(sys.executable).with_name("neograph-ext")
    program = [str(script)] if script.is_file() else [sys.executable, "-m", "neograph_ext.cli"]
    here = Path.cwd()

    def shown(path: str | Path) -> str:
        path = Path(path).absolute()
        return str(path.relative_to(here)) if path.is_relative_to(here) else str(path)

    cli = shlex.join([shown(program[0]), *program[1:]])
    graph = shlex.quote(f"{shown(__file__)}:builder")
    where = f"--db {shlex.quote(shown(db))} --thread {THREAD}"
    return [f"{cli} plan {graph} {where}", f"{cli} history {graph} {where}"]


def stage(number: int, title: str) -> None:
    print(f"\n=== Stage {number} of 4: {title} ===", flush=True)


def report(ran: list[str], *, crashed: bool = False) -> None:
    names = ", ".join(ran) or "none"
    print(f"  nodes run: {names}{' (the last one crashed)' if crashed else ''}", flush=True)


def indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines())


def main(workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "demo.sqlite"
    # A fresh database every time: remove the last run's file, its journals and the
    # thread lock files neograph-ext keeps beside it.
    for leftover in workdir.glob("demo.sqlite*"):
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            leftover.unlink()
    # Revive the demo's models from checkpoints without LangGraph's warning about
    # unregistered types: name them, as production code should.
    serde = JsonPlusSerializer(
        allowed_msgpack_modules=[("demo_models", n) for n in ("Facts", "Summary", "Review")]
    )
    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(conn, serde=serde)
    started = time.monotonic()
    print(f"database: {db} (fresh), thread: {THREAD!r}")
    print(f"pipeline: {' -> '.join(NODES)}; each node sleeps {LLM_LATENCY} s for an LLM call")

    stage(1, "first run; the LLM call in `review` times out")
    ran: list[str] = []
    graph = ne.compile(build(SummaryV1, ReviewV1, ran, crash_in="review"), checkpointer=saver)
    try:
        ne.run(graph, INPUT, CONFIG)
    except LLMTimeout as exc:
        print(f"  crashed: {exc}")
    report(ran, crashed=True)

    stage(2, "run again: resume after the crash")
    ran = []
    graph = ne.compile(build(SummaryV1, ReviewV1, ran), checkpointer=saver)
    print(f"  plan: {ne.plan(graph, CONFIG).kind}")
    result = ne.run(graph, INPUT, CONFIG)
    report(ran)
    print(f"  result: {result['report']!r}")

    stage(3, "a deploy adds `word_count` to Summary, what `summarize` returns: rewind")
    print("  (the graph is rebuilt with the new model: this stands in for a deploy)")
    ran = []
    graph = ne.compile(build(SummaryV2, ReviewV1, ran), checkpointer=saver)
    plan = ne.plan(graph, CONFIG)
    print("  ResumePlan from neograph_ext.plan():")
    print(indent(str(plan)))
    result = ne.run(graph, INPUT, CONFIG)
    report(ran)
    print(f"  summary now: {result['summary']!r}")
    print(f"  plan after the rewind: {ne.plan(graph, CONFIG).kind}")

    stage(4, "another deploy changes Review, what `review` returns: strict mode, as in CI")
    print("  (the graph is rebuilt with the new model: this stands in for a deploy)")
    ran = []
    graph = ne.compile(build(SummaryV2, ReviewV3, ran), checkpointer=saver)
    try:
        ne.run(graph, INPUT, CONFIG, resume=ne.ResumePolicy(on_change="raise"))
    except ne.CheckpointSchemaError as exc:
        print("  run(..., resume=ResumePolicy(on_change='raise')) raised CheckpointSchemaError:")
        print(indent(str(exc)))
        print(f"  invalidated_nodes: {sorted(exc.invalidated_nodes)}")
        rerun = [node for node in exc.plan.order if node in exc.plan.rerun]  # execution order
        print(f"  on_change='rewind' would re-run: {', '.join(rerun)}")
    else:
        raise SystemExit("strict mode should have raised CheckpointSchemaError")
    report(ran)

    conn.close()
    print(f"\ndone in {time.monotonic() - started:.1f} s. Inspect the thread with:")
    for hint in cli_hints(db):
        print(f"  {hint}")


if __name__ == "__main__":
    default = Path(tempfile.gettempdir()) / "neograph-ext-demo"
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
