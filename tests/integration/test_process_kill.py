"""A process dies inside a node; another process resumes the thread from the database."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.cli.support import run_program

pytestmark = pytest.mark.kills


def worker(db: str, thread: str, log: Path, *exit_in: str) -> subprocess.CompletedProcess[str]:
    return run_program("-m", "tests.integration.kill_worker", db, thread, str(log), *exit_in)


# One way: the subject is a process boundary; the worker runs the sync driver (the
# reliability suite kills async workers too, ``worker --async``).
def test_killed_process_is_resumed_by_another_without_repeating_nodes(
    where: str, tmp_path: Path
) -> None:
    thread, log = str(uuid.uuid4()), tmp_path / "executions.log"

    killed = worker(where, thread, log, "c")
    assert killed.returncode == 17, killed.stderr
    assert log.read_text().split() == ["a", "b", "c"]

    resumed = worker(where, thread, log)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"log": ["a", "b", "c", "d"]}
    # Only the killed node and what follows ran again.
    assert log.read_text().split() == ["a", "b", "c", "c", "d"]
