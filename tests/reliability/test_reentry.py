"""No saver call is made while the same saver holds its own lock.

LangGraph's sync savers hold a non-reentrant lock until a listing ends; a ``get_tuple``
made on the same saver while a listing is open waits forever. Each call here runs in a
thread of its own and must return in time: a hang fails the test instead of the suite.
Each test runs through the sync drivers and through the async ones (``drive``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from tests.drive import Drive
from tests.reliability import harness as h
from tests.reliability import worker


class _Killed(Exception):
    """Stands in for a SIGKILL in the saver's first ``put_writes``: the keeping fork
    is stored, the kept writes are not (a kill itself is in test_owed.py)."""


def _graph(saver: BaseCheckpointSaver[Any], log: Path, code: str | None = None) -> Any:
    parsed = worker.parse_code(code)
    return worker.compiled(saver, worker.build(log, parsed), parsed)


def _fail_first_put_writes(saver: BaseCheckpointSaver[Any], name: str) -> Callable[[], None]:
    """Make the saver's next ``put_writes`` (or ``aput_writes``) raise; returns the undo."""
    original = getattr(saver, name)

    def failing(*args: Any, **kwargs: Any) -> Any:
        setattr(saver, name, original)
        raise _Killed

    setattr(saver, name, failing)
    return lambda: setattr(saver, name, original)


def test_plan_accept_and_run_return_after_a_fork_left_without_its_kept_writes(
    drive: Drive, db: str, thread: str, log: Path
) -> None:
    config = {"configurable": {"thread_id": thread}}
    with drive.opened(lambda: worker.open_saver(db), lambda: worker.aopen_saver(db)) as saver:
        drive.run(_graph(saver, log), dict(worker.INPUT), config)
        graph = _graph(saver, log, "c=float")
        _fail_first_put_writes(saver, "aput_writes" if drive.is_async else "put_writes")
        with pytest.raises(_Killed):
            drive.run(graph, dict(worker.INPUT), config)

        assert h.in_time(lambda: drive.plan(graph, config)).kind is not ne.PlanKind.UP_TO_DATE
        h.in_time(lambda: drive.accept(graph, config))
        h.in_time(lambda: drive.run(graph, dict(worker.INPUT), config))
        assert h.in_time(lambda: drive.plan(graph, config)).kind is ne.PlanKind.UP_TO_DATE
