"""The SQLite lock's file: who holds it, which database it stands for, and what blocks it.

A forked child must not keep its parent's lock; every path to one database file must
take one lock; a lock folder that cannot be used is named, with the fix.
Not through ``drive``: the subject is the lock file, and the one async test is about an
async saver's own connection.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import aiosqlite
import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph

import neograph_ext as ne
from neograph_ext.storage._file_lock import LOCK_DIR, FileLock, lock_file
from neograph_ext.storage._lock import athread_lock, thread_lock
from tests.reliability import worker

NOBODY = 65534
"""The user a root test process becomes to play another user."""


class State(TypedDict, total=False):
    seed: str
    out: str


@pytest.fixture
def children() -> Iterator[list[int]]:
    """Process ids of children forked by nodes; killed at the end of the test."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def _forking_graph(saver: Any, children: list[int]) -> Any:
    def node(state: State) -> State:
        pid = os.fork()
        if pid == 0:  # a helper that outlives the run, as a node's subprocess may
            try:
                signal.pause()
            finally:
                os._exit(0)
        children.append(pid)
        return {"out": f"done({state.get('seed')})"}

    builder = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    return ne.compile(builder, checkpointer=saver)


def test_a_child_forked_by_a_node_does_not_keep_the_lock(
    db: str, thread: str, children: list[int]
) -> None:
    config = {"configurable": {"thread_id": thread}}
    with worker.open_saver(db) as saver:
        graph = _forking_graph(saver, children)
        assert ne.run(graph, {"seed": "1"}, config) == {"seed": "1", "out": "done(1)"}
        assert len(children) == 1
        # A new input starts a new turn: work to do, so the lock is taken at once or never.
        assert (
            ne.run(graph, {"seed": "2"}, config, lock=ne.LockPolicy(on_busy="raise"))["out"]
            == "done(2)"
        )
        with thread_lock(saver, thread, on_busy="raise"):
            pass


def _saver(path: Path | str) -> Any:
    return SqliteSaver.from_conn_string(str(path))


@pytest.mark.parametrize("link", ["hard link", "symlink", "relative path"])
def test_every_path_to_one_database_takes_one_lock(
    link: str, tmp_path: Path, thread: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "db.sqlite"
    sqlite3.connect(db).close()
    other: Path | str
    if link == "hard link":
        other = tmp_path / "same.sqlite"
        os.link(db, other)
    elif link == "symlink":
        (tmp_path / "elsewhere").mkdir()
        other = tmp_path / "elsewhere" / "same.sqlite"
        other.symlink_to(db)
    else:
        monkeypatch.chdir(tmp_path)
        other = "db.sqlite"
    with _saver(db) as a, _saver(other) as b, thread_lock(a, thread):
        with pytest.raises(ne.ThreadBusyError), thread_lock(b, thread, on_busy="raise"):
            pass
        with thread_lock(b, thread + "-other", on_busy="raise"):
            pass
    assert lock_file(other, thread) == lock_file(db, thread)
    assert lock_file(db, thread).parent == tmp_path / LOCK_DIR


def _two_databases(tmp_path: Path) -> list[Path]:
    """Two SQLite databases in two folders."""
    databases = [tmp_path / folder / "db.sqlite" for folder in ("one", "two")]
    for database in databases:
        database.parent.mkdir()
        sqlite3.connect(database).close()
    return databases


def test_a_path_that_comes_to_name_another_database_takes_that_databases_lock(
    tmp_path: Path, thread: str
) -> None:
    databases = _two_databases(tmp_path)
    link = tmp_path / "current.sqlite"
    link.symlink_to(databases[0])
    with _saver(link) as saver, thread_lock(saver, thread):  # the path's folder is now known
        assert lock_file(link, thread).parent == databases[0].parent / LOCK_DIR
    link.unlink()
    link.symlink_to(databases[1])
    assert lock_file(link, thread) == lock_file(databases[1], thread)
    with (
        _saver(databases[1]) as holder,
        thread_lock(holder, thread),
        _saver(link) as other,
        pytest.raises(ne.ThreadBusyError),
        thread_lock(other, thread, on_busy="raise"),
    ):
        pass


def test_two_databases_in_one_directory_lock_apart(tmp_path: Path, thread: str) -> None:
    first, second = tmp_path / "one.sqlite", tmp_path / "two.sqlite"
    with (
        _saver(first) as a,
        _saver(second) as b,
        thread_lock(a, thread),
        thread_lock(b, thread, on_busy="raise"),
    ):
        pass


def test_a_file_in_place_of_the_lock_folder_is_named_with_the_fix(
    tmp_path: Path, thread: str
) -> None:
    db = tmp_path / "db.sqlite"
    (tmp_path / LOCK_DIR).write_text("not a folder")
    with (
        _saver(db) as saver,
        pytest.raises(ne.GraphError, match="move away the file") as raised,
        thread_lock(saver, thread),
    ):
        pass
    assert str(tmp_path / LOCK_DIR) in str(raised.value)
    assert isinstance(raised.value.__cause__, NotADirectoryError)


def test_a_lock_folder_of_another_user_is_named_with_the_fix(thread: str) -> None:
    # A folder anyone may enter, so a root test process can play another user.
    top = Path(tempfile.mkdtemp(prefix="neograph-lock-"))
    try:
        top.chmod(0o777)
        db = top / "db.sqlite"
        sqlite3.connect(db).close()
        db.chmod(0o666)
        (top / LOCK_DIR).mkdir(mode=0o555)
        message = _in_a_child_as_another_user(db, thread)
    finally:
        (top / LOCK_DIR).chmod(0o755)
        for path in sorted(top.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        top.rmdir()
    assert message.startswith("GraphError: PermissionError"), message
    assert str(top / LOCK_DIR) in message and "create files in" in message


def _in_a_child_as_another_user(db: Path, thread: str) -> str:
    """Try the lock in a forked child (as ``nobody`` when root); the outcome, as text."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        outcome = "no error"
        try:
            if os.geteuid() == 0:
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            with _saver(db) as saver, thread_lock(saver, thread, on_busy="raise"):
                pass
        except BaseException as exc:
            cause = type(exc.__cause__).__name__ if exc.__cause__ else "-"
            outcome = f"{type(exc).__name__}: {cause}: {exc}"
        finally:
            os.write(write, outcome.encode())
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


def test_a_saver_given_another_connection_takes_that_databases_lock(
    tmp_path: Path, thread: str
) -> None:
    databases = _two_databases(tmp_path)
    first = sqlite3.connect(databases[0], check_same_thread=False)
    second = sqlite3.connect(databases[1], check_same_thread=False)
    saver = SqliteSaver(first)
    with thread_lock(saver, thread):  # the saver's database is now known
        pass
    saver.conn = second
    with (
        _saver(databases[1]) as holder,
        thread_lock(holder, thread),
        pytest.raises(ne.ThreadBusyError),
        thread_lock(saver, thread, on_busy="raise"),
    ):
        pass
    first.close()
    second.close()


async def test_an_async_saver_given_another_connection_takes_that_databases_lock(
    tmp_path: Path, thread: str
) -> None:
    databases = await asyncio.to_thread(_two_databases, tmp_path)
    async with aiosqlite.connect(databases[0]) as first, aiosqlite.connect(databases[1]) as second:
        saver = AsyncSqliteSaver(first)
        async with athread_lock(saver, thread):  # the saver's database is now known
            pass
        saver.conn = second
        async with athread_lock(AsyncSqliteSaver(second), thread):
            with pytest.raises(ne.ThreadBusyError):
                async with athread_lock(saver, thread, on_busy="raise"):
                    pass


async def test_a_lock_taken_for_a_cancelled_wait_is_let_go(tmp_path: Path) -> None:
    """The async twin takes the lock in a thread, off the event loop: a wait cancelled
    meanwhile still releases what the thread took."""
    path = str(tmp_path / "thread.lock")
    waiting = asyncio.create_task(FileLock(path, "t").atry_acquire())
    await asyncio.sleep(0)  # handed to the thread
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    other = FileLock(path, "t")
    taken = False
    for _ in range(200):
        taken = await other.atry_acquire()
        if taken:
            break
        await asyncio.sleep(0.01)
    assert taken, "the cancelled wait's lock is still held"
    await other.arelease()
