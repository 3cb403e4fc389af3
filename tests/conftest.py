"""Shared fixtures: a fresh checkpoint saver of each kind, sync and async.

Rules:
- `saver` and `async_saver` run a test once per kind in `SAVER_KINDS`; the
  PostgreSQL runs get the `postgres` marker, so `-m "not postgres"` leaves
  them out of a quick local run.
- `drive` runs a test once per mode in `MODES`: through the sync drivers, and
  through their async twins (`tests.drive`). The integration suite's `saver`
  is then the mode's saver, opened on the drive's loop when it is async. The async
  drive runs on SQLite and PostgreSQL, not in memory (`_a_repeat`): InMemorySaver's
  async methods call its sync ones, and the package's async path (the async entry
  points, the drivers, the saver-API reads) is the same on every saver, so async x
  memory repeated async x SQLite and sync x memory step for step.
- PostgreSQL tests never skip: without `NEOGRAPH_EXT_PG_DSN` they fail and
  say why. `make test` starts a throwaway server and sets it.
- Every PostgreSQL test of one process shares one database, so a test must use
  its own thread ids: the `config` fixture gives a new one each time. Under
  `pytest -n`, each worker gets a database of its own (`pytest_configure`):
  the stamp order and advisory locks are database-wide, and a test resets the
  order as a fresh database has it.
- Tests marked `storm` (minutes of random kills) or `oracle` (the long oracle suite)
  are deselected unless `-m` names them: `pytest -m storm tests/reliability`.
- The fast tier (`pytest --fast`, `make test-fast`) is what a developer runs after each
  step: every test that neither starts a process (`slow`), sweeps kill points (`kills`),
  serves a graph (`server`) nor needs PostgreSQL, on one saver (`FAST_SAVER`: SQLite,
  which serializes as a deployment does) and on the sync path (no `async` drive, no
  coroutine test, no `async_saver`). In it a test that starts a process fails and says
  which mark it lacks, so the tier stays fast as tests are added.
- Every async test (a coroutine, or one on an `async` drive) runs under `blockbuster`,
  as LangChain's tests do: a blocking call on a running event loop fails it, as it fails
  under `langgraph dev` (`no_blocking_on_the_loop`).
"""

from __future__ import annotations

import inspect
import multiprocessing.process
import os
import subprocess
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

import psycopg
import pytest
import pytest_asyncio
from blockbuster import blockbuster_ctx
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from psycopg import sql

from neograph_ext.storage._stamp_order import ORDER_THREAD
from tests.drive import MODES, Drive

SAVER_KINDS = ("memory", "sqlite", "postgres")
FAST_SAVER = "sqlite"
# Marks whose tests the fast tier leaves out; `postgres` is added at collection.
_NOT_FAST = ("slow", "kills", "server", "postgres", "storm", "oracle")

PG_DSN_ENV = "NEOGRAPH_EXT_PG_DSN"
# Set by scripts/pg.sh when it could not start a server: the reason.
PG_ERROR_ENV = "NEOGRAPH_EXT_PG_ERROR"
PG_MISSING = (
    f"PostgreSQL tests need {PG_DSN_ENV}; run them through `make test`, which starts a server"
)

# Fixtures whose "postgres" parameter needs the server.
_SAVER_FIXTURES = ("saver", "async_saver")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help=f"the fast tier: no process, no PostgreSQL, the {FAST_SAVER} saver, sync only",
    )


def pytest_configure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    dsn = os.environ.get(PG_DSN_ENV)
    if worker and dsn:
        # Through the environment, so a test's subprocesses use the worker's database too.
        os.environ[PG_DSN_ENV] = _own_database(dsn, f"neograph_ext_{worker}")


def _own_database(dsn: str, name: str) -> str:
    """A new, empty database ``name`` on the server of ``dsn`` (a URL, as the tests and
    ``neograph-ext --db`` take it); its URL."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return urlsplit(dsn)._replace(path=f"/{name}").geturl()


def _require_pg_dsn() -> str:
    dsn = os.environ.get(PG_DSN_ENV)
    if not dsn:
        reason = os.environ.get(PG_ERROR_ENV)
        pytest.fail(PG_MISSING + (f" (none started: {reason})" if reason else ""), pytrace=False)
    return dsn


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for marker in ("storm", "oracle"):
        if marker in (config.getoption("markexpr", "") or ""):
            continue
        # Minutes long: run on purpose (`-m storm`, `make oracle`), never as part of a suite.
        long = [item for item in items if item.get_closest_marker(marker)]
        if long:
            config.hook.pytest_deselected(items=long)
            items[:] = [item for item in items if not item.get_closest_marker(marker)]
    repeats = [item for item in items if _a_repeat(item)]
    if repeats:
        config.hook.pytest_deselected(items=repeats)
        items[:] = [item for item in items if not _a_repeat(item)]
    for item in items:
        params = getattr(item, "callspec", None)
        uses_pg = "pg_dsn" in getattr(item, "fixturenames", ()) or (
            params is not None
            and any(params.params.get(name) == "postgres" for name in _SAVER_FIXTURES)
        )
        if uses_pg:
            item.add_marker(pytest.mark.postgres)
    if config.getoption("fast"):
        slow = [item for item in items if not _in_the_fast_tier(item)]
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if _in_the_fast_tier(item)]


def _a_repeat(item: pytest.Item) -> bool:
    """An async drive on the in-memory saver: see the module's rules."""
    params = getattr(item, "callspec", None)
    return (
        params is not None
        and params.params.get("drive") == "async"
        and params.params.get("saver") == "memory"
    )


def _in_the_fast_tier(item: pytest.Item) -> bool:
    if any(item.get_closest_marker(mark) for mark in _NOT_FAST):
        return False
    if inspect.iscoroutinefunction(getattr(item, "function", None)):
        return False
    if "async_saver" in getattr(item, "fixturenames", ()):
        return False
    params = getattr(item, "callspec", None)
    values = params.params.values() if params is not None else ()
    others = set(SAVER_KINDS) - {FAST_SAVER}
    return not any(isinstance(v, str) and (v in others or v == "async") for v in values)


@pytest.fixture(autouse=True)
def no_process_in_the_fast_tier(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the fast tier, starting a process fails the test and names the mark it lacks."""
    if not request.config.getoption("fast"):
        return

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError(
            f"{request.node.nodeid} starts a process: mark it `slow` "
            "(or `kills` if it sweeps kill points), which leaves it out of the fast tier"
        )

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)


@pytest.fixture
def pg_dsn() -> str:
    """The DSN of the shared PostgreSQL test database; fails the test if unset."""
    return _require_pg_dsn()


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    """A path for a new SQLite file, e.g. for a test that spawns subprocesses."""
    return tmp_path / "checkpoints.sqlite"


@pytest.fixture
def config() -> RunnableConfig:
    """A config naming a thread no other test uses."""
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


@pytest.fixture
def runs() -> Counter[str]:
    """A test's counter of node (or task) executions: what ran is what it counts."""
    return Counter()


@contextmanager
def opened_saver(kind: str, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    """A fresh sync saver of ``kind``: in memory, on a SQLite file, or on the test database."""
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "saver.sqlite")) as sqlite_saver:
            yield sqlite_saver
    else:
        with PostgresSaver.from_conn_string(_require_pg_dsn()) as pg_saver:
            pg_saver.setup()
            # Tests share the database, not a history of releases: as in a fresh one,
            # the order of stamps starts empty, so a test's releases take their places
            # in the order it runs them (``_stamp_order``).
            pg_saver.delete_thread(ORDER_THREAD)
            yield pg_saver


@asynccontextmanager
async def aopened_saver(kind: str, tmp_path: Path) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """A fresh async saver of ``kind``, bound to the running loop."""
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "async_saver.sqlite")) as lite:
            yield lite
    else:
        async with AsyncPostgresSaver.from_conn_string(_require_pg_dsn()) as pg_saver:
            await pg_saver.setup()
            await pg_saver.adelete_thread(ORDER_THREAD)  # as in ``opened_saver``
            yield pg_saver


@pytest.fixture(params=SAVER_KINDS, ids=SAVER_KINDS)
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    """A fresh sync saver: in memory, on a SQLite file, or on the test database."""
    with opened_saver(request.param, tmp_path) as opened:
        yield opened


@pytest_asyncio.fixture(params=SAVER_KINDS, ids=SAVER_KINDS)
async def async_saver(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """A fresh async saver: in memory, on a SQLite file, or on the test database."""
    async with aopened_saver(request.param, tmp_path) as opened:
        yield opened


@pytest.fixture(params=MODES)
def drive(request: pytest.FixtureRequest) -> Iterator[Drive]:
    """The execution API called one way: ``sync``, or the async twins on a loop of the
    test's own (``tests.drive``)."""
    driving = Drive(request.param)
    try:
        yield driving
    finally:
        driving.close()


@pytest.fixture(autouse=True)
def no_blocking_on_the_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """``blockbuster`` for an async test, over every module, the test's own included.

    It only judges calls made on a running event loop, so it is left off a sync test,
    whose calls are allowed to block, and spared the cost of its wrappers there.
    """
    params = getattr(request.node, "callspec", None)
    on_a_loop = inspect.iscoroutinefunction(request.function) or (
        params is not None and params.params.get("drive") == "async"
    )
    if not on_a_loop:
        yield
        return
    with blockbuster_ctx() as buster:
        for function in buster.functions.values():
            for file, names in _NOT_OURS:
                function.can_block_in(file, names)
        yield


_NOT_OURS = (
    ("_pytest/tmpdir.py", {"mktemp", "getbasetemp"}),  # pytest making a test's tmp_path
    ("redis/utils.py", {"get_lib_version"}),  # redis-py reading its version as it connects
)
"""The blocking calls made on a test's loop that are neither neograph-ext's nor the test's."""
