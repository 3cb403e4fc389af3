"""What every public entry point refuses, and what two racing ``accept`` calls write.

- A thread id of a stamp description (``neograph-ext-stamp:<id>``) is refused by
  ``run``, ``arun``, ``stream``, ``astream``, ``plan``, ``aplan``, ``accept``,
  ``aaccept`` and the plain calls of a graph compiled with ``auto_resume``, before
  anything is read or written (the command line too: ``tests/cli/test_reserved.py``).
  A plain call of a graph compiled without ``auto_resume`` behaves as LangGraph's, and
  no longer hides the description it writes over: a later deploy re-runs what is due,
  not everything.
- ``Command(resume=...)`` on a thread with no checkpoint is refused (plain LangGraph
  runs the whole graph on an empty input).
- ``renames`` onto a node the graph lacks, or from one it still has, is refused at
  compile.
- ``accept`` on a head that is current writes nothing: racing or retried calls write one
  fork in all.

The entry-point tables name every twin themselves; the rest run through ``drive``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

import neograph_ext as ne
from neograph_ext.storage._stamp_store import THREAD_PREFIX
from tests.drive import Drive
from tests.reliability import harness as h
from tests.reliability import worker
from tests.reliability.paths import crashed_in


def _graph(saver: Any, log: Path, code: str | None = None, **options: Any) -> Any:
    parsed = worker.parse_code(code)
    builder = worker.build(log, parsed)
    types = {n: worker.TYPES[t] for n, t in parsed.items()}
    return ne.compile(builder, checkpointer=saver, output_types=types, **options)


@contextmanager
def _opened(drive: Drive, db: str, log: Path) -> Iterator[tuple[Any, Any]]:
    """The database's saver, opened the drive's way, and the reliability graph on it."""
    with drive.opened(lambda: worker.open_saver(db), lambda: worker.aopen_saver(db)) as saver:
        yield saver, _graph(saver, log)


@pytest.fixture
def lite(tmp_path: Path) -> Any:
    with SqliteSaver.from_conn_string(str(tmp_path / "db.sqlite")) as sqlite_saver:
        yield sqlite_saver


def _drained(chunks: Any) -> list[Any]:
    return list(chunks)


async def _adrained(chunks: Any) -> list[Any]:
    return [chunk async for chunk in chunks]


CALLS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "run": lambda g, c: ne.run(g, dict(worker.INPUT), c),
    "arun": lambda g, c: asyncio.run(ne.arun(g, dict(worker.INPUT), c)),
    "stream": lambda g, c: _drained(ne.stream(g, dict(worker.INPUT), c)),
    "astream": lambda g, c: asyncio.run(_adrained(ne.astream(g, dict(worker.INPUT), c))),
    "resume": lambda g, c: ne.run(g, Command(resume="yes"), c),
    "plan": lambda g, c: ne.plan(g, c),
    "aplan": lambda g, c: asyncio.run(ne.aplan(g, c)),
    "accept": lambda g, c: ne.accept(g, c),
    "aaccept": lambda g, c: asyncio.run(ne.aaccept(g, c)),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_entry_point_refuses_a_reserved_thread_id(
    lite: SqliteSaver, log: Path, name: str
) -> None:
    graph = _graph(lite, log)
    config = {"configurable": {"thread_id": THREAD_PREFIX + graph.neograph_ext_stamp.id}}
    with pytest.raises(ne.GraphError, match=r"is reserved: .* use another thread_id"):
        CALLS[name](graph, config)
    assert list(lite.list(None)) == [], "a refused call wrote"
    assert not log.exists(), "a refused call ran a node"


@pytest.mark.parametrize("call", ["invoke", "stream"])
def test_a_graph_compiled_with_auto_resume_refuses_a_reserved_thread_id(
    lite: SqliteSaver, log: Path, call: str
) -> None:
    graph = _graph(lite, log, attach=[ne.AutoResume()])
    config = {"configurable": {"thread_id": THREAD_PREFIX + "x"}}
    with pytest.raises(ne.GraphError, match="is reserved"):
        list(graph.stream(dict(worker.INPUT), config)) if call == "stream" else graph.invoke(
            dict(worker.INPUT), config
        )
    assert not log.exists()


def test_a_plain_call_on_a_description_thread_no_longer_hides_it(
    drive: Drive, db: str, log: Path, thread: str
) -> None:
    config = {"configurable": {"thread_id": thread}}
    with _opened(drive, db, log) as (saver, graph):
        drive.run(graph, dict(worker.INPUT), config)
        # Plain LangGraph (no auto_resume) runs on any thread id, this one included.
        hidden = {"configurable": {"thread_id": THREAD_PREFIX + graph.neograph_ext_stamp.id}}
        drive.invoke(graph, dict(worker.INPUT), hidden)
        before = h.counts(log)

        drive.run(_graph(saver, log, "e=float"), dict(worker.INPUT), config)

    assert h.since(log, before) == Counter("ef"), "the description was hidden: all re-ran"


def test_an_answer_to_a_thread_that_does_not_exist_is_refused(
    drive: Drive, db: str, log: Path, thread: str
) -> None:
    config = {"configurable": {"thread_id": thread}}
    with _opened(drive, db, log) as (saver, graph):
        with pytest.raises(ne.GraphError, match="has no checkpoint: a Command"):
            drive.run(graph, Command(resume="yes"), config)
        # Nothing at all in the test's own SQLite file; nothing of the thread in the
        # PostgreSQL database every test shares.
        scope = config if db.startswith(("postgresql://", "postgres://")) else None
        assert not log.exists() and list(saver.list(scope)) == []


@pytest.mark.parametrize(
    ("renames", "message"),
    [
        ({"old": "nope"}, r"renames \(new names\) names nodes the graph does not have: \['nope'\]"),
        ({"c": "d"}, r"renames maps old names that are still nodes of the graph: \['c'\]"),
    ],
)
def test_renames_naming_an_unknown_or_a_current_node_are_refused_at_compile(
    lite: SqliteSaver, log: Path, renames: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _graph(lite, log, renames=renames)


def test_racing_accepts_write_one_fork(db: str, thread: str, log: Path) -> None:
    config = {"configurable": {"thread_id": thread}}
    with worker.open_saver(db) as saver:
        crashed_in(saver, log, config, "c", frozenset("d"))
    forks = h.sources(db, thread)["fork"]

    def accept() -> str:
        with worker.open_saver(db) as saver:
            written = ne.accept(_graph(saver, log, "d=float"), config)
            return str(written["configurable"]["checkpoint_id"])

    with ThreadPoolExecutor(4) as pool:
        written = set(pool.map(lambda _: accept(), range(4)))

    assert h.sources(db, thread)["fork"] == forks + 1
    assert len(written) == 1, "the accepts returned different checkpoints"
