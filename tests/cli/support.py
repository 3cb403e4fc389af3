"""What the CLI tests share: fresh databases the engine wrote, and ways to run the CLI.

Threads are made with ``neograph_ext.run`` under ``cli_graphs.v1``; the CLI then looks
at them through ``v2``, where node ``c``'s output model changed (``Review.score``:
``int -> float``). Every database is fresh: a SQLite file, or a PostgreSQL schema of its
own, so ``check`` sees exactly the threads a test made.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import psycopg
import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import StateGraph
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from typer.testing import CliRunner, Result

import neograph_ext
from neograph_ext.cli import app
from tests.cli import cli_graphs

ROOT = Path(__file__).resolve().parents[2]
V1, V2 = "tests.cli.cli_graphs:v1", "tests.cli.cli_graphs:v2"
INPUT = {"doc": "a long document", "log": []}


@dataclass
class Database:
    """A checkpoint database, its URL for the CLI, and a writable saver for the test."""

    url: str
    saver: BaseCheckpointSaver[Any]
    rows: Callable[[], int]
    """Rows in every checkpoint table: proves the CLI wrote nothing."""

    def run(
        self, builder: StateGraph[Any, Any, Any, Any], *threads: str, doc: str = "a document"
    ) -> None:
        graph = neograph_ext.compile(builder, checkpointer=self.saver)
        for thread in threads:
            neograph_ext.run(graph, {**INPUT, "doc": doc}, {"configurable": {"thread_id": thread}})

    def run_unstamped(self, thread: str) -> None:
        """Written by plain LangGraph, as before neograph-ext was adopted."""
        graph = cli_graphs.v1.compile(checkpointer=self.saver)
        graph.invoke(INPUT, {"configurable": {"thread_id": thread}})

    def plan(self, builder: StateGraph[Any, Any, Any, Any], thread: str) -> neograph_ext.ResumePlan:
        graph = neograph_ext.compile(builder, checkpointer=self.saver)
        return neograph_ext.plan(graph, {"configurable": {"thread_id": thread}})


def sqlite_database(path: Path) -> Iterator[Database]:
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()

    def rows() -> int:
        count = "SELECT (SELECT count(*) FROM checkpoints) + (SELECT count(*) FROM writes)"
        return int(conn.execute(count).fetchone()[0])

    try:
        yield Database(str(path), saver, rows)
    finally:
        conn.close()


DATABASE_KINDS = ("sqlite", pytest.param("postgres", marks=pytest.mark.postgres))
"""The kinds a ``db`` fixture made from ``database`` runs a test on."""


def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A database of the test's own, of the kind ``request.param`` names; a module's
    ``db = pytest.fixture(params=DATABASE_KINDS)(database)`` runs its tests on each."""
    if request.param == "sqlite":
        yield from sqlite_database(tmp_path / "threads.sqlite")
    else:
        yield from postgres_database(request.getfixturevalue("pg_dsn"))


def pg_url(dsn: str, schema: str | None = None) -> str:
    """``dsn`` as a ``postgresql://`` URL, its tables looked up in ``schema``."""
    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    if schema:
        params["options"] = f"{params.get('options', '')} -c search_path={schema}".strip()
    return "postgresql://?" + urlencode(params, quote_via=quote)


def postgres_database(dsn: str) -> Iterator[Database]:
    schema = f"cli_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    url = pg_url(dsn, schema)
    conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    saver = PostgresSaver(conn)
    saver.setup()

    def rows() -> int:
        tables = ("checkpoints", "checkpoint_writes", "checkpoint_blobs")
        count = " + ".join(f"(SELECT count(*) FROM {table})" for table in tables)
        row = conn.execute(f"SELECT {count} AS n").fetchone()
        return int(row["n"]) if row else 0

    try:
        yield Database(url, saver, rows)
    finally:
        conn.close()
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def cli(*args: object, env: dict[str, str] | None = None) -> Result:
    # A wide console: table cells are asserted on, and must not wrap.
    return CliRunner().invoke(
        app, [str(arg) for arg in args], env={"COLUMNS": "240", **(env or {})}
    )


def one_error_line(result: Result) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def killed_at_write(at: int) -> str:
    """A prelude for ``program``: the process ends (``os._exit(17)``) just before the
    ``at``-th write of LangGraph's SQLite or PostgreSQL saver (0: never)."""
    return f"""
import os
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
writes = [0]
def counted(method):
    def wrapper(self, *args, **kwargs):
        writes[0] += 1
        if writes[0] == {at}:
            os._exit(17)
        return method(self, *args, **kwargs)
    return wrapper
for saver in (SqliteSaver, PostgresSaver):
    saver.put = counted(saver.put)
    saver.put_writes = counted(saver.put_writes)
"""


def program(*args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"{prelude}import runpy; runpy.run_module('neograph_ext.cli', run_name='__main__')"
    return run_program("-c", code, *args)


def answered(answer: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with ``args`` in a process whose stdin is a pseudo-terminal, on which
    ``answer`` is typed."""
    primary, secondary = os.openpty()
    try:
        os.write(primary, answer.encode() + b"\n")
        return subprocess.run(
            [sys.executable, "-m", "neograph_ext.cli", *args],
            cwd=ROOT, stdin=secondary, capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    finally:
        os.close(primary)
        os.close(secondary)


def run_program(*args: str, prefix: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """Python with ``args``, in the project's root; ``prefix`` is a command to run it under."""
    # Off a terminal and without COLUMNS, the CLI prints unwrapped: cells can be asserted on.
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    return subprocess.run(
        [*prefix, sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PYTHONPATH": str(ROOT)},
    )


def program_report(*args: str) -> Any:
    """Run Python with ``args`` as ``run_program`` does; it must succeed: the last line it
    printed, read as JSON."""
    done = run_program(*args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextlib.asynccontextmanager
async def async_saver(url: str) -> AsyncIterator[Any]:
    """An async saver on the database ``url`` names."""
    if url.startswith("postgresql"):
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
        async with conn:
            yield AsyncPostgresSaver(conn)
    else:
        async with AsyncSqliteSaver.from_conn_string(url) as saver:
            yield saver
