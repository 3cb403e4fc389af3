"""What ``compile(telemetry=Telemetry())`` costs a fresh ``run()``.

The same 20-node builder (trivial nodes) is compiled twice on one SQLite file saver,
with and without telemetry. Each repetition starts a new thread on both. OpenTelemetry's
API is installed and no SDK is configured (its no-op providers), as in an application
that installed the ``otel`` extra but exports nothing; a LangChain callback handler is
given to both, so the custom event has somewhere to go.

The target is an absolute budget read as a ratio: on this worst case (nodes that do
nothing, 7-9 ms a run) a tenth is under a millisecond a call, against the seconds of
the model calls a real resume makes.

    python bench/bench_telemetry.py
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

from _harness import Case, Result, Row, chain_builder, compared, interleave, sqlite_saver, verdict
from langchain_core.callbacks import BaseCallbackHandler

import neograph_ext

NODES = 20
REPS = 41
TARGET = 1.10


class _Listener(BaseCallbackHandler):
    """A handler that takes every event, as a tracer would, and keeps the custom ones."""

    def __init__(self) -> None:
        self.told = 0

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.told += 1


def measure(saver: Any, reps: int = REPS) -> list[Result]:
    told = neograph_ext.compile(
        chain_builder(NODES), checkpointer=saver, attach=[neograph_ext.Telemetry()]
    )
    quiet = neograph_ext.compile(chain_builder(NODES), checkpointer=saver)
    listener = _Listener()
    ids = itertools.count()

    def fresh(_: Any = None) -> dict[str, Any]:
        return {"configurable": {"thread_id": f"fresh-{next(ids)}"}, "callbacks": [listener]}

    def check(_: Any, result: object) -> None:
        assert result == {"n": NODES}, result

    timings = interleave(
        [
            Case("told", lambda config: neograph_ext.run(told, {"n": 0}, config), fresh, check),
            Case("quiet", lambda config: neograph_ext.run(quiet, {"n": 0}, config), fresh, check),
        ],
        reps,
    )
    assert listener.told == reps + 1  # one event per told run, the warm-up's included
    ratio = timings.ratio("told", "quiet")
    row = (
        f"Fresh run, {NODES} trivial nodes, SQLite: `run()` with telemetry vs without",
        compared(timings, "told", "quiet"),
        verdict(ratio, TARGET),
    )
    return [Result(row, ratio > TARGET)]


def run() -> list[Row]:
    with sqlite_saver() as saver:
        return [result.row for result in measure(saver)]


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row), file=sys.stdout)
