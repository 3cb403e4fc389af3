"""``upgrade --apply --rewind`` killed at a write after a rewind started, once or twice,
then run again: the re-run finishes each rewind cut short (``rewound``, never
``nothing``), every node a rewind runs ran, at most the one in flight at each kill ran
once more, and the next resume of every thread runs nothing; on SQLite and PostgreSQL.

The command runs in a process of its own whose saver ends it (``os._exit``, as a kill
would) right before its Nth ``put`` or ``put_writes``; every model call of every process
is logged to a file (the prompt names the node and the thread). The fleet's writes, in
the threads' order: the carry (writes 1 to 5), then ``rewind-0``'s rewind (6 to 18), then
``unrecorded-0``'s (19 to 32).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.cli.support import Database, cli, killed_at_write, program
from tests.graphs.releases import PER_RUN, fleet, resumed_calls

GRAPH = "tests.graphs.releases:current"
APPLY = ("--apply", "--yes", "--rewind", "--json")

_LOGGED = """
import tests.graphs.budget as budget
answer = budget.UsageChat.answer
def logged(self, messages):
    with open({log!r}, "a") as calls:
        calls.write(str(messages[-1].content) + "\\n")
    return answer(self, messages)
budget.UsageChat.answer = logged
"""


def _upgrade(db: Database, log: Path, at: int = 0) -> tuple[int, str]:
    """``upgrade --apply --rewind`` in a process of its own, ended before its write ``at``
    (0: never): its exit code and its stdout."""
    prelude = killed_at_write(at) + _LOGGED.format(log=str(log))
    done = program("upgrade", GRAPH, "--db", db.url, *APPLY, prelude=prelude)
    return done.returncode, done.stdout


def _kinds(db: Database) -> dict[str, str]:
    plans = json.loads(cli("check", GRAPH, "--db", db.url, "--json").stdout)["plans"]
    return {p["thread_id"]: p["kind"] for p in plans}


def _node_runs(log: Path) -> Counter[tuple[str, str]]:
    """Per (thread, node), the runs the model calls logged make."""
    calls = Counter(tuple(line.split(" ", 1)[::-1]) for line in log.read_text().splitlines())
    return Counter({(thread, node): n // PER_RUN[node] for (thread, node), n in calls.items()})


def _killed_then_finished(db: Database, tmp_path: Path, kills: tuple[int, ...]) -> list[str]:
    """The fleet upgraded by a command killed at each of ``kills`` in turn, then run
    again unkilled, and checked; returns the threads the kills left a rewind cut short."""
    made = fleet(db.saver, each=1)
    rewinds = made["rewind"] + made["unrecorded"]
    log = tmp_path / "calls.log"
    log.touch()

    codes = [_upgrade(db, log, at)[0] for at in kills]
    cut_short = [t for t, kind in _kinds(db).items() if kind == "continue"]
    code, out = _upgrade(db, log)

    assert set(codes) <= {17, 0}  # 0: the kill point was past the last write
    assert code == 0, out
    actions = {t["thread_id"]: t["action"] for t in json.loads(out)["threads"]}
    assert {actions[t] for t in cut_short} <= {"rewound"}  # before: "nothing", exit 0
    assert {actions[t] for t in rewinds} <= {"rewound", "nothing"}
    runs = _node_runs(log)
    for thread in rewinds:
        assert runs[thread, "review"] >= 1 and runs[thread, "publish"] >= 1, runs
        assert runs[thread, "draft"] == 0, runs  # upstream of the change: kept
    assert sum(runs.values()) - 2 * len(rewinds) <= len(kills), runs  # the nodes in flight
    # Nothing is left owed: the next resume of each thread makes no model call.
    assert all(not spent for spent in resumed_calls(db.saver, list(actions)).values())
    return cut_short


@pytest.mark.kills
@pytest.mark.parametrize(
    "kills",
    [(8,), (27,), (9, 12)],
    ids=["in-the-first-rewind", "in-the-second-rewind", "and-in-its-continuation"],
)
def test_a_killed_rewind_upgrade_is_finished_by_the_same_command(
    db: Database, tmp_path: Path, kills: tuple[int, ...]
) -> None:
    assert _killed_then_finished(db, tmp_path, kills)  # the kills cut a rewind short


@pytest.mark.storm
@pytest.mark.parametrize("at", range(1, 34))
def test_killed_at_every_write_the_same_command_finishes(
    db: Database, tmp_path: Path, at: int
) -> None:
    _killed_then_finished(db, tmp_path, (at,))
