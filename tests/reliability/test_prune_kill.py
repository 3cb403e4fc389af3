"""A process pruning with ``apply`` is SIGKILLed in the middle of a thread's
transaction: nothing is lost, and the next prune finishes the job.

The victim is a real process (``python -c``) on a real database; it is killed by a real
SIGKILL sent from inside the deleting statement of its second thread, after that
thread's pending writes were deleted and before its checkpoints were: the moment a
kill would hurt most if a thread were not one transaction.
"""

from __future__ import annotations

import signal

import pytest

import neograph_ext as ne
from tests.cli.support import DATABASE_KINDS, Database, database, run_program
from tests.graphs.pruning import LAST, THREADS, ids, reads, written

pytestmark = pytest.mark.kills

VICTIM = """
import os, signal, sqlite3, sys
import psycopg
from psycopg.rows import dict_row
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
import neograph_ext as ne
from tests.graphs.pruning import LAST

url, at = sys.argv[1], int(sys.argv[2])
seen = [0]

def traced(sql):
    if str(sql).startswith("DELETE FROM checkpoints "):
        seen[0] += 1
        if seen[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)

if url.startswith("postgresql"):
    execute = psycopg.Cursor.execute
    def execute_traced(self, query, *args, **kwargs):
        traced(query)
        return execute(self, query, *args, **kwargs)
    psycopg.Cursor.execute = execute_traced
    conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    saver = PostgresSaver(conn)
else:
    conn = sqlite3.connect(url, check_same_thread=False)
    conn.set_trace_callback(traced)
    saver = SqliteSaver(conn)
ne.prune(ne.compile(LAST, checkpointer=saver), apply=True)
print("finished")
"""


db = pytest.fixture(params=DATABASE_KINDS)(database)


def test_a_kill_inside_a_threads_transaction_loses_nothing(db: Database) -> None:
    graph = written(db.saver)
    before, seen = ids(db.saver), {t: reads(graph, t) for t in THREADS}
    report = {t.thread_id: t for t in ne.prune(graph).threads}
    dry = {thread: set(t.checkpoints) for thread, t in report.items()}
    rows = db.rows()
    pruned = sorted(t for t, going in dry.items() if going)
    assert len(pruned) >= 2

    victim = run_program("-c", VICTIM, db.url, "2")

    assert victim.returncode == -signal.SIGKILL, victim.stderr
    assert "finished" not in victim.stdout
    after = ids(db.saver)
    # The first thread was pruned and committed; the second is whole, as before.
    assert after[pruned[0]] == before[pruned[0]] - dry[pruned[0]]
    assert after[pruned[1]] == before[pruned[1]]
    first = report[pruned[0]]
    # Not a row more is gone (the second thread's pending writes are all there).
    assert db.rows() == rows - len(first.checkpoints) - first.writes - first.blobs
    for thread in THREADS:
        assert reads(graph, thread) == seen[thread], thread

    ne.prune(ne.compile(LAST, checkpointer=db.saver), apply=True)
    finished = ids(db.saver)
    for thread in THREADS:
        assert finished[thread] == before[thread] - dry[thread], thread
        assert reads(graph, thread) == seen[thread], thread
