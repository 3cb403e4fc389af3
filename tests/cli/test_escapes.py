"""Text read from the database reaches the terminal escaped, never raw.

Thread ids, node names, class names in diffs: whoever can write a checkpoint (or name a
thread) must not be able to retitle the terminal, clear it, or style the output with
rich markup. Control characters (C0, DEL, C1) are shown as ``\\xNN``; markup is shown as
typed. ``--json`` escapes them as JSON does (``\\u001b``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import Result

from tests.cli import cli_graphs
from tests.cli.cli_graphs import HOSTILE
from tests.cli.support import Database, cli, one_error_line

OLD, NEW = "tests.cli.cli_graphs:hostile_v1", "tests.cli.cli_graphs:hostile_v2"
THREAD = f"t{HOSTILE}"
RAW = ("\x1b", "\x07", "\x9b", "\x7f")
SHOWN = r"\x1b]0;pwned\x07\x1b[2J[red]x[/red]\x9b\x7f"


def assert_escaped(result: Result, *, times: int) -> None:
    out = result.stdout + result.stderr
    assert not [char for char in RAW if char in out], out
    assert out.count(SHOWN) >= times, out


@pytest.fixture
def rewound(db: Database) -> Database:
    """A thread named ``THREAD`` whose node and model names carry ``HOSTILE``."""
    db.run(cli_graphs.hostile_v1, THREAD)
    return db


def test_plan_escapes_thread_node_and_class_names(rewound: Database) -> None:
    result = cli("plan", NEW, "--db", rewound.url, "--thread", THREAD)

    assert result.exit_code == 0, result.output
    # The title (thread), the kept node, and the diff's class name.
    assert_escaped(result, times=3)
    assert f"Review{SHOWN}.score: int -> float" in result.stdout
    assert f"kept         n{SHOWN}" in result.stdout


def test_history_escapes_thread_and_node_names(rewound: Database) -> None:
    result = cli("history", "--db", rewound.url, "--thread", THREAD, OLD)

    assert result.exit_code == 0, result.output
    assert_escaped(result, times=2)
    assert f"thread t{SHOWN}" in result.stdout


def test_check_escapes_thread_names_and_diffs(rewound: Database) -> None:
    result = cli("check", NEW, "--db", rewound.url)

    assert result.exit_code == 1, result.output
    assert_escaped(result, times=2)
    assert f"t{SHOWN}" in result.stdout and f"Review{SHOWN}.score" in result.stdout


@pytest.mark.parametrize("command", ["plan", "history", "check"])
def test_json_escapes_them_too(rewound: Database, command: str) -> None:
    args = {
        "plan": ["plan", NEW, "--thread", THREAD],
        "history": ["history", "--thread", THREAD, NEW],
        "check": ["check", NEW],
    }[command]

    result = cli(*args, "--db", rewound.url, "--json")

    assert result.exit_code in (0, 1), result.output
    assert not [char for char in RAW if char in result.stdout]
    assert HOSTILE in result.stdout.encode().decode("unicode_escape")  # nothing lost
    json.loads(result.stdout)


def test_an_error_line_escapes_them(lite: Database, tmp_path: Path) -> None:
    graphs = tmp_path / "graphs.py"
    graphs.write_text(f"raise RuntimeError({HOSTILE!r})\n")
    lite.run(cli_graphs.v1, "t1")

    line = one_error_line(cli("plan", f"{graphs}:g", "--db", lite.url, "--thread", "t1"))

    assert not [char for char in RAW if char in line]
    assert f"RuntimeError: {SHOWN}" in line
