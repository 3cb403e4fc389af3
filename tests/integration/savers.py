"""A fresh saver instance on a saver's database, to read a thread back with."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from tests.drive import Drive

__all__ = ["copied", "reopened"]


@contextmanager
def reopened(saver: BaseCheckpointSaver[Any], tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    """A new sync saver instance on ``saver``'s database (the same one in memory, which
    no other instance can read)."""
    if isinstance(saver, InMemorySaver):
        yield saver
    elif isinstance(saver, SqliteSaver | AsyncSqliteSaver):
        if isinstance(saver, SqliteSaver):
            path = saver.conn.execute("PRAGMA database_list").fetchone()[2]
        else:
            path = str(tmp_path / "async_saver.sqlite")  # conftest's async_saver
        with SqliteSaver.from_conn_string(path) as sqlite_saver:
            yield sqlite_saver
    else:
        assert isinstance(saver, PostgresSaver | AsyncPostgresSaver)
        with PostgresSaver.from_conn_string(os.environ["NEOGRAPH_EXT_PG_DSN"]) as fresh:
            yield fresh


def copied(drive: Drive, database: Path, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    """A saver of the drive's mode on a copy of the checked-in ``database``: tests never
    touch the original."""
    path = str(tmp_path / database.name)
    shutil.copyfile(database, path)
    with drive.opened(
        lambda: SqliteSaver.from_conn_string(path), lambda: AsyncSqliteSaver.from_conn_string(path)
    ) as opened:
        yield opened
