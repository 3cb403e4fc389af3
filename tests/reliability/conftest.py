"""Fixtures of the reliability suite: a real database that several processes share."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from langgraph.checkpoint.postgres import PostgresSaver

from tests.reliability import worker

DATABASES = (
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
)


@pytest.fixture(params=DATABASES)
def db(request: pytest.FixtureRequest) -> str:
    """A SQLite file path or the test PostgreSQL DSN, its tables created once here so
    that racing workers never race on migrations."""
    if request.param == "sqlite":
        path: Path = request.getfixturevalue("sqlite_path")
        with worker.open_saver(str(path)) as saver:
            saver.setup()
        return str(path)
    dsn: str = request.getfixturevalue("pg_dsn")
    with PostgresSaver.from_conn_string(dsn) as pg:
        pg.setup()
    return dsn


@pytest.fixture
def thread() -> str:
    """A thread id no other test uses (the PostgreSQL database is shared)."""
    return f"reliability-{uuid.uuid4()}"


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """The execution log every worker of the test appends to."""
    return tmp_path / "executions.log"
