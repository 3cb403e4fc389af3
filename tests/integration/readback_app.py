"""A two-node graph (``write -> publish``) whose ``draft`` may not read back, run as the
writer or the resumer of a thread in a process of its own.

``LANGGRAPH_STRICT_MSGPACK`` is read when LangGraph is imported, and a class of
``__main__`` belongs to one process, so these effects need processes of their own::

    python -c "from tests.integration.readback_app import main; main()" ROLE SAVER THREAD [FLAG...]
    python tests/integration/readback_app.py ROLE SAVER THREAD [FLAG...]   # Draft in __main__

ROLE: ``write`` (``publish`` crashes), ``resume`` (``run`` with input None),
``strict`` (the same in strict mode), ``verify`` (a fresh run with ``verify_writes``).
SAVER: ``sqlite:<path>`` or ``postgres:<dsn>``. FLAG: ``untyped`` (``draft: Any``, the
writer declaring ``Draft``), ``keep`` (``keep_compatible=True``). Prints one JSON object:
the nodes that ran, ``publish``'s output, the plan, the warnings logged, the error raised.
"""

from __future__ import annotations

import json
import logging
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from pydantic import BaseModel

import neograph_ext as ne


class Draft(BaseModel):
    text: str


class Typed(TypedDict, total=False):
    draft: Draft
    out: str


class Untyped(TypedDict, total=False):
    draft: Any
    out: str


class Written(TypedDict):
    draft: Draft


class Crash(RuntimeError):
    """``publish`` failing, as a process dying mid-run."""


def build(
    saver: BaseCheckpointSaver[Any],
    runs: Counter[str],
    *,
    crash: bool = False,
    untyped: bool = False,
    **options: Any,
) -> Any:
    """The graph; ``publish`` reports the type of the ``draft`` it was handed."""

    def write(state: dict[str, Any]) -> Written:
        runs["write"] += 1
        return {"draft": Draft(text="hello")}

    def publish(state: dict[str, Any]) -> dict[str, Any]:
        runs["publish"] += 1
        if crash:
            raise Crash("publish")
        draft = state["draft"]
        return {"out": f"{type(draft).__name__}:{getattr(draft, 'text', None)}"}

    builder = StateGraph(Untyped if untyped else Typed)
    builder.add_sequence([write, publish]).add_edge(START, "write")
    return ne.compile(builder, checkpointer=saver, **options)


@contextmanager
def opened(spec: str) -> Iterator[BaseCheckpointSaver[Any]]:
    """The saver a ``sqlite:<path>`` or ``postgres:<dsn>`` spec names."""
    kind, _, where = spec.partition(":")
    if kind == "sqlite":
        with SqliteSaver.from_conn_string(where) as sqlite_saver:
            yield sqlite_saver
        return
    with PostgresSaver.from_conn_string(where) as saver:
        saver.setup()
        yield saver


class _Logged(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []
        self.info: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        said = self.lines if record.levelno >= logging.WARNING else self.info
        said.append(record.getMessage())


def main(argv: list[str] | None = None) -> None:
    role, spec, thread, *flags = argv if argv is not None else sys.argv[1:]
    logged = _Logged()
    logging.getLogger("neograph_ext").addHandler(logged)
    logging.getLogger("neograph_ext").setLevel(logging.INFO)
    runs: Counter[str] = Counter()
    config: Any = {"configurable": {"thread_id": thread}}
    report: dict[str, Any] = {}
    options: dict[str, Any] = {"untyped": "untyped" in flags}
    if "keep" in flags:
        options["keep_compatible"] = True
    with opened(spec) as saver:
        try:
            if role == "write":
                ne.run(build(saver, runs, crash=True, **options), {}, config)
            elif role == "verify":
                ne.run(
                    build(saver, runs, attach=[ne.WriteChecks(readback=True)], **options),
                    {},
                    config,
                )
            else:
                graph = build(saver, runs, **options)
                report["plan"] = str(ne.plan(graph, config))
                # Strict: raise instead of rewinding; else the graph's own policy.
                strict = {"resume": ne.ResumePolicy(on_change="raise")} if role == "strict" else {}
                result = ne.run(graph, None, config, **strict)
                report["out"] = result.get("out")
        except Exception as exc:
            report["error"] = f"{type(exc).__name__}: {exc}"
    report.update(runs=dict(runs), warnings=logged.lines, info=logged.info)
    report.update(module=Draft.__module__)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
