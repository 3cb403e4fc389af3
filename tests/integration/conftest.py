"""The integration suite runs under the plan == run harness (``agreement``), each test
once per saver kind and once per drive mode (``tests.drive``): ``saver`` is a sync saver
for the ``sync`` drive, an async one opened on the drive's loop for the ``async`` drive."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

from tests.conftest import SAVER_KINDS, aopened_saver, opened_saver
from tests.drive import Drive
from tests.integration.agreement import install


@pytest.fixture(autouse=True)
def plan_agrees_with_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``run``/``arun``/``stream``/``astream`` call is checked against ``plan()``."""
    install(monkeypatch)


@pytest.fixture(params=SAVER_KINDS, ids=SAVER_KINDS)
def saver(
    request: pytest.FixtureRequest, drive: Drive, tmp_path: Path
) -> Iterator[BaseCheckpointSaver[Any]]:
    """A fresh saver of each kind, of the drive's mode."""
    kind = request.param
    with drive.opened(
        lambda: opened_saver(kind, tmp_path), lambda: aopened_saver(kind, tmp_path)
    ) as opened:
        yield opened


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's worker processes open their saver: a SQLite file or the test database."""
    if request.param == "sqlite":
        return str(tmp_path / "threads.sqlite")
    dsn: str = request.getfixturevalue("pg_dsn")
    return dsn
