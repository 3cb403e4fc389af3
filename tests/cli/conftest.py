"""The ``db`` (each kind) and ``lite`` (SQLite only) fixtures of the CLI tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.support import Database, postgres_database, sqlite_database


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        yield from sqlite_database(tmp_path / "threads.sqlite")
    else:
        yield from postgres_database(request.getfixturevalue("pg_dsn"))


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Database]:
    """For tests about SQLite files themselves."""
    yield from sqlite_database(tmp_path / "threads.sqlite")
