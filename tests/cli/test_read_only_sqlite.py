"""The CLI reads a SQLite database in WAL mode without writing anything next to it.

``SqliteSaver.setup()`` puts every database it makes in WAL mode. A read-only
connection (``mode=ro``) to such a database still creates its ``-wal`` and ``-shm``
files and writes the ``-shm``; where the folder is not writable it cannot open it at
all. With no ``-wal`` file there is no open connection, and the CLI opens the file as
immutable; with one, it reads through it like any reader and sees every commit.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

import neograph_ext
from neograph_ext.cli._database import sqlite_uri
from tests.cli import cli_graphs
from tests.cli.support import INPUT, V2, Database, cli, run_program, sqlite_database


@pytest.fixture
def closed(tmp_path: Path) -> Path:
    """A WAL database with two threads, written by an app that has since closed it."""
    path = tmp_path / "app" / "threads.sqlite"
    path.parent.mkdir()
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        graph = neograph_ext.compile(cli_graphs.v1, checkpointer=saver)
        for thread in ("t1", "t2"):
            neograph_ext.run(graph, INPUT, {"configurable": {"thread_id": thread}})
    finally:
        conn.close()
    # Closed: the last connection removed the -wal and -shm files.
    assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists()
    return path


@pytest.fixture
def open_writer(tmp_path: Path) -> Iterator[Database]:
    """A WAL database whose writer is still open, its commits still in the -wal file."""
    for db in sqlite_database(tmp_path / "threads.sqlite"):
        assert isinstance(db.saver, SqliteSaver)
        db.saver.conn.execute("PRAGMA wal_autocheckpoint=0")  # commits stay in the -wal file
        db.run(cli_graphs.v1, "t1")
        yield db


def listing(folder: Path) -> dict[str, bytes | None]:
    return {p.name: p.read_bytes() if p.is_file() else None for p in folder.iterdir()}


def test_plan_history_and_check_leave_the_folder_as_it_was(closed: Path) -> None:
    before = listing(closed.parent)

    runs = [
        cli("plan", V2, "--db", closed, "--thread", "t1"),
        cli("history", "--db", closed, "--thread", "t1", V2),
        cli("check", V2, "--db", closed),
    ]

    assert [result.exit_code for result in runs] == [0, 0, 1], [r.output for r in runs]
    assert "rewind" in runs[0].stdout and "2 threads checked: 2 rewind" in runs[2].stdout
    assert listing(closed.parent) == before  # no -wal, no -shm, the same bytes


def test_the_connection_is_immutable_only_without_a_wal_file(closed: Path, tmp_path: Path) -> None:
    wal = Path(f"{closed}-wal")
    rollback = tmp_path / "rollback.sqlite"
    shutil.copy(closed, rollback)
    conn = sqlite3.connect(rollback)
    assert conn.execute("PRAGMA journal_mode=DELETE").fetchone() == ("delete",)
    conn.close()

    assert sqlite_uri(closed, wal) == f"{closed.as_uri()}?mode=ro&immutable=1"
    wal.touch()  # a writer has the database open
    assert sqlite_uri(closed, wal) == f"{closed.as_uri()}?mode=ro"
    # A rollback-journal database makes no side files: mode=ro also respects its locks.
    assert sqlite_uri(rollback, tmp_path / "none") == f"{rollback.as_uri()}?mode=ro"


def read_only_folder(folder: Path, *cli_args: object) -> subprocess.CompletedProcess[str]:
    """The CLI as a program, ``folder`` mounted read-only for it alone (a private mount
    namespace): a folder it cannot write, even for root, which ignores permission bits."""
    if (
        shutil.which("unshare") is None
        or subprocess.run([*UNSHARE, "true"], capture_output=True).returncode
    ):
        pytest.skip("needs unshare with user and mount namespaces for a read-only mount")
    script = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'
    return run_program(
        "-m",
        "neograph_ext.cli",
        *(str(arg) for arg in cli_args),
        prefix=(*UNSHARE, "sh", "-c", script, "sh", str(folder)),
    )


UNSHARE = ("unshare", "--user", "--map-root-user", "--mount")


@pytest.mark.slow
def test_a_folder_the_cli_cannot_write(closed: Path) -> None:
    before = listing(closed.parent)

    result = read_only_folder(closed.parent, "plan", V2, "--db", closed, "--thread", "t1")

    assert result.returncode == 0, result.stderr
    assert "rewind" in result.stdout and result.stderr == ""
    assert listing(closed.parent) == before


def test_a_live_writer_s_commits_are_seen(open_writer: Database) -> None:
    wal = Path(f"{open_writer.url}-wal")
    assert wal.stat().st_size > 0  # the checkpoints are in the -wal file only

    result = cli("plan", V2, "--db", open_writer.url, "--thread", "t1", "--json")

    assert result.exit_code == 0, result.output
    assert '"kind": "rewind"' in result.stdout


@pytest.mark.slow
def test_a_live_writer_in_a_folder_the_cli_cannot_write(open_writer: Database) -> None:
    folder = Path(open_writer.url).parent

    result = read_only_folder(folder, "plan", V2, "--db", open_writer.url, "--thread", "t1")

    assert result.returncode == 0, result.stderr
    assert "rewind" in result.stdout and result.stderr == ""


@pytest.mark.slow
def test_a_wal_file_without_its_shm_in_a_folder_the_cli_cannot_write(
    open_writer: Database, tmp_path: Path
) -> None:
    # As an app that crashed, its -shm lost: reading the -wal means making a new -shm.
    folder = tmp_path / "copy"
    folder.mkdir()
    for suffix in ("", "-wal"):
        shutil.copy(f"{open_writer.url}{suffix}", folder / f"threads.sqlite{suffix}")
    copy = folder / "threads.sqlite"

    result = read_only_folder(folder, "plan", V2, "--db", copy, "--thread", "t1")

    assert result.returncode == 2, result.stdout
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
    assert "it is in WAL mode and 'threads.sqlite-wal' exists" in result.stderr
    assert "run where the folder is writable" in result.stderr
