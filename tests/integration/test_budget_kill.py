"""A process dies inside a node of a budgeted graph; another resumes the thread. The
ledger keeps what the dead process spent: every call whose start and end were written."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

import neograph_ext as ne
from tests.cli.support import run_program
from tests.graphs.budget import CALLS, STEPS, TOKENS
from tests.integration.kill_worker import open_saver

pytestmark = pytest.mark.kills


def _worker(db: str, thread: str, *kill: str) -> subprocess.CompletedProcess[str]:
    return run_program("-m", "tests.integration.budget_worker", db, thread, *kill)


# One way: the subject is a process boundary; the worker runs the sync driver.
def test_a_kill_mid_run_then_a_resume_lowers_no_spend(where: str, tmp_path: Path) -> None:
    thread = str(uuid.uuid4())

    killed = _worker(where, thread, "publish")  # after publish's model call, inside the subgraph
    assert killed.returncode == 17, killed.stderr
    with open_saver(where) as saver:
        spent = ne.budget.ledger(saver, {"configurable": {"thread_id": thread}})
    # Nothing was lost: the dead step's call was written as it started and as it ended.
    assert spent is not None
    assert spent.total == ne.budget.Spend(STEPS, CALLS, CALLS * TOKENS)

    resumed = _worker(where, thread)
    assert resumed.returncode == 0, resumed.stderr
    # publish ran again (one superstep, one call); draft and review were kept.
    assert json.loads(resumed.stdout) == {
        "supersteps": STEPS + 1,
        "model_calls": CALLS + 1,
        "tokens": (CALLS + 1) * TOKENS,
    }
