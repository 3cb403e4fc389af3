"""The ``db`` (each kind) and ``lite`` (SQLite only) fixtures of the CLI tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.support import DATABASE_KINDS, Database, database, sqlite_database

db = pytest.fixture(params=DATABASE_KINDS)(database)


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Database]:
    """For tests about SQLite files themselves."""
    yield from sqlite_database(tmp_path / "threads.sqlite")
