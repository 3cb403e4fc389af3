"""A process dies inside a node of a budgeted graph; another resumes the thread. The
ledger keeps what the dead process spent: every call whose start and end were written."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import neograph_ext as ne
from tests.graphs.budget import CALLS, STEPS, TOKENS
from tests.integration.kill_worker import open_saver


def _worker(db: str, thread: str, *kill: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.integration.budget_worker", db, thread, *kill],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# One way: the subject is a process boundary; the worker runs the sync driver.
@pytest.mark.parametrize("where", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_kill_mid_run_then_a_resume_lowers_no_spend(
    where: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    db = (
        str(tmp_path / "threads.sqlite") if where == "sqlite" else request.getfixturevalue("pg_dsn")
    )
    thread = str(uuid.uuid4())

    killed = _worker(db, thread, "publish")  # after publish's model call, inside the subgraph
    assert killed.returncode == 17, killed.stderr
    with open_saver(db) as saver:
        spent = ne.budget.ledger(saver, {"configurable": {"thread_id": thread}})
    # Nothing was lost: the dead step's call was written as it started and as it ended.
    assert spent is not None
    assert spent.total == ne.budget.Spend(STEPS, CALLS, CALLS * TOKENS)

    resumed = _worker(db, thread)
    assert resumed.returncode == 0, resumed.stderr
    # publish ran again (one superstep, one call); draft and review were kept.
    assert json.loads(resumed.stdout) == {
        "supersteps": STEPS + 1,
        "model_calls": CALLS + 1,
        "tokens": (CALLS + 1) * TOKENS,
    }
