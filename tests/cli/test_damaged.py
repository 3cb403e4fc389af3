"""A damaged checkpoint is one clear line on stderr and exit 2, and nothing else.

The damage is written straight into the database: metadata that is a number, a list or
a string instead of an object, nested past Python's recursion limit, not UTF-8, not
JSON. PostgreSQL keeps metadata as ``jsonb``, which refuses the last two, so it gets the
first four. The CLI runs as a program: what Python prints at interpreter exit (such as
"Exception ignored in: <generator object SqliteSaver.list ...>" from a listing left
open) is on its stderr too.
"""

from __future__ import annotations

import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from tests.cli import cli_graphs
from tests.cli.support import V1, Database, run_program

pytestmark = pytest.mark.slow

DEEP = "[" * 5000 + "]" * 5000
DAMAGE: dict[str, str | bytes] = {
    "a number": "5",
    "a list": "[1, 2]",
    "a string": '"metadata"',
    "nested too deep": DEEP,
    "not UTF-8": b"\xff\xfe\x00",
    "not JSON": b"not json {",
}
NOT_IN_JSONB = {"not UTF-8", "not JSON"}
COMMANDS = {
    "plan": ["plan", V1, "--thread", "t1"],
    "history": ["history", "--thread", "t1", V1],
    "check": ["check", V1],
}


def damage(db: Database, what: str) -> None:
    """Overwrites the metadata of one checkpoint in the middle of thread ``t1``."""
    value = DAMAGE[what]
    middle = "SELECT checkpoint_id FROM checkpoints ORDER BY checkpoint_id LIMIT 1 OFFSET 2"
    if isinstance(db.saver, SqliteSaver):
        update = f"UPDATE checkpoints SET metadata = ? WHERE checkpoint_id = ({middle})"
        db.saver.conn.execute(update, (value,))
        db.saver.conn.commit()
    else:
        assert isinstance(db.saver, PostgresSaver) and isinstance(value, str)
        update = f"UPDATE checkpoints SET metadata = %s::jsonb WHERE checkpoint_id = ({middle})"
        db.saver.conn.execute(update, (value,))


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("what", sorted(set(DAMAGE) - NOT_IN_JSONB))
def test_damaged_metadata_is_one_line_and_exit_2(db: Database, what: str, command: str) -> None:
    assert_one_line_and_exit_2(db, what, command)


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("what", sorted(NOT_IN_JSONB))
def test_undecodable_metadata_is_one_line_and_exit_2(
    lite: Database, what: str, command: str
) -> None:
    assert_one_line_and_exit_2(lite, what, command)


def assert_one_line_and_exit_2(db: Database, what: str, command: str) -> None:
    db.run(cli_graphs.v1, "t1")
    damage(db, what)

    result = run_program("-m", "neograph_ext.cli", *COMMANDS[command], "--db", db.url)

    # The library reads a checkpoint whose metadata decodes but is no mapping as
    # unverified, and one that does not decode as an UnreadableCheckpointError: either a
    # plan, or one line naming the thread and exit 2. Never a traceback at exit.
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
    if result.returncode != 2:
        assert result.returncode in (0, 1) and result.stderr == "", result.stderr
        assert "t1" in result.stdout or "1 thread checked" in result.stdout, result.stdout
        return
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert "cannot be read" in lines[0] or "cannot read" in lines[0], lines[0]
