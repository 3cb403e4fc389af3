"""A declared release orders code before the database's order does: a test suite that
shares one database gets the same answers whatever order its tests run in.

Three tests of one suite share a database, run in every order, on a fresh database each
time and then all on one (as CI runs share one PostgreSQL database): one appends node
``c`` to a finished thread (release 2 after release 1), the others store release 2's
stamp, and release 1's, on threads of their own. Without declared releases, the
database's order decides and the appended node's test depends on the order."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from neograph_ext import GraphError
from neograph_ext.storage._stamp_order import RELEASE_ENV
from tests.cli.support import Database, postgres_database, sqlite_database
from tests.drive import SYNC_ONLY, Drive, Saver
from tests.graphs.pipelines import linear

Test = Callable[[Drive, BaseCheckpointSaver[Any], pytest.MonkeyPatch, bool, int], object]
"""A test of the suite: the saver, whether it declares releases, and the run of the suite
(its threads' ids are the run's own)."""

V1, V2 = ("a", "b"), ("a", "b", "c")


def _compiled(
    saver: BaseCheckpointSaver[Any],
    monkeypatch: pytest.MonkeyPatch,
    names: tuple[str, ...],
    runs: Counter[str],
    declared: bool,
) -> Any:
    if declared:
        monkeypatch.setenv(RELEASE_ENV, str(len(names) - 1))  # V1: release 1, V2: 2
    graph = ne.compile(linear(runs, names=names), checkpointer=saver)
    monkeypatch.delenv(RELEASE_ENV, raising=False)
    return graph


def appends_a_node(
    drive: Drive, saver: BaseCheckpointSaver[Any], mp: pytest.MonkeyPatch, declared: bool, run: int
) -> object:
    runs: Counter[str] = Counter()
    config = {"configurable": {"thread_id": f"finished-{run}"}}
    drive.run(_compiled(saver, mp, V1, runs, declared), {"log": []}, config)
    new = _compiled(saver, mp, V2, runs, declared)
    kind = drive.plan(new, config).kind
    try:
        log = drive.run(new, None, config)["log"]
    except ne.ThreadSupersededError:
        log = "superseded"
    return (str(kind), log, dict(runs))


def stores(names: tuple[str, ...]) -> Test:
    def test(
        drive: Drive, saver: Saver, mp: pytest.MonkeyPatch, declared: bool, run: int
    ) -> object:
        graph = _compiled(saver, mp, names, Counter(), declared)
        thread = {"configurable": {"thread_id": f"{'-'.join(names)}-{run}"}}
        return drive.run(graph, {"log": []}, thread)

    return test


SUITE: dict[str, Test] = {
    "appends": appends_a_node,
    "stores-v2": stores(V2),
    "stores-v1": stores(V1),
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def databases(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[int], AbstractContextManager[Database]]:
    """A fresh database per run of the suite: a SQLite file, or a PostgreSQL schema of
    the one shared server database."""

    @contextmanager
    def fresh(index: int) -> Iterator[Database]:
        if request.param == "sqlite":
            yield from sqlite_database(tmp_path / f"suite-{index}.sqlite")
        else:
            yield from postgres_database(request.getfixturevalue("pg_dsn"))

    return fresh


def _outcomes(
    drive: Drive,
    databases: Callable[[int], AbstractContextManager[Database]],
    monkeypatch: pytest.MonkeyPatch,
    declared: bool,
    shared: bool = False,
) -> list[dict[str, object]]:
    """Each test's outcome, for every order of the suite, each order on a fresh database
    or (``shared``) all of them one after the other on one."""
    found = []
    with databases(-1) if shared else nullcontext(None) as kept:
        for run, order in enumerate(itertools.permutations(SUITE)):
            with nullcontext(kept) if kept is not None else databases(run) as db:
                saver = db.saver
                found.append(
                    {name: SUITE[name](drive, saver, monkeypatch, declared, run) for name in order}
                )
    return found


@SYNC_ONLY  # its subject is the order a database keeps, not a driver
def test_declared_releases_give_the_suite_one_answer_in_every_order(
    drive: Drive,
    databases: Callable[[int], AbstractContextManager[Database]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for shared in (False, True):
        outcomes = _outcomes(drive, databases, monkeypatch, declared=True, shared=shared)
        assert all(found == outcomes[0] for found in outcomes), outcomes
        # Appending `c` re-ran `b` (its successors changed) and ran `c`, in every order.
        assert outcomes[0]["appends"] == ("rewind", ["a", "b", "c"], {"a": 1, "b": 2, "c": 1})


@SYNC_ONLY
def test_undeclared_the_databases_order_decides(
    drive: Drive,
    databases: Callable[[int], AbstractContextManager[Database]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outcomes = _outcomes(drive, databases, monkeypatch, declared=False)
    appended = {str(found["appends"][1]) for found in outcomes}  # type: ignore[index]
    assert appended == {"superseded", str(["a", "b", "c"])}


@pytest.mark.parametrize("bad", ["with space", "x" * 101, "é", "tab\t"])
def test_a_release_that_is_no_release_is_a_graph_error_at_compile(
    bad: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RELEASE_ENV, bad)
    with pytest.raises(GraphError, match=RELEASE_ENV):
        ne.compile(linear(Counter()), checkpointer=None)


def _released(
    saver: Saver, mp: pytest.MonkeyPatch, names: str, runs: Counter[str], release: str | None
) -> Any:
    """``names`` compiled with ``release`` declared, or none."""
    if release is not None:
        mp.setenv(RELEASE_ENV, release)
    graph = ne.compile(linear(runs, names=tuple(names)), checkpointer=saver)
    mp.delenv(RELEASE_ENV, raising=False)
    return graph


def test_the_running_codes_release_is_compared_whatever_its_stamp_was_stored_with(
    drive: Drive, saver: Saver, monkeypatch: pytest.MonkeyPatch, config: RunnableConfig
) -> None:
    """A test run before stored ``abcd``'s stamp undeclared; ``abc`` (release 1) wrote the
    thread; ``abcd`` compiled as release 2 resumes it: release 2 is the newer code."""
    other: RunnableConfig = {
        "configurable": {"thread_id": f"{config['configurable']['thread_id']}-0"}
    }
    drive.run(_released(saver, monkeypatch, "abcd", Counter(), None), {"log": []}, other)
    drive.run(_released(saver, monkeypatch, "abc", Counter(), "1"), {"log": []}, config)
    runs: Counter[str] = Counter()
    graph = _released(saver, monkeypatch, "abcd", runs, "2")
    assert drive.plan(graph, config).kind is ne.PlanKind.REWIND
    assert drive.run(graph, None, config)["log"] == list("abcd")
    assert runs == Counter("cd")  # `c` re-runs (its successors changed), `d` is appended
    # Once written, the database keeps release 2 for the stamp: release 1 is the older code.
    assert drive.plan(_released(saver, monkeypatch, "abc", Counter(), "1"), config).kind is (
        ne.PlanKind.SUPERSEDED
    )
