"""No LangGraph serializer warning in the command line's output for the demo's graph.

Each command runs in a process of its own: LangGraph warns once per class and process.
The demo stores three pydantic models (``demo_models.Facts``, ``Summary``, ``Review``)
that the demo's graph declares; read through GRAPH's allowlist, they revive silently.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neograph_ext.cli._serde import allowlist
from tests.cli.support import ROOT, program

GRAPH = "examples/demo.py:builder"
THREAD = "report-42"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("demo")
    done = subprocess.run(
        [sys.executable, "examples/demo.py", str(workdir)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return workdir / "demo.sqlite"


def commands(db: Path) -> dict[str, list[str]]:
    where = ["--db", str(db), "--thread", THREAD]
    return {
        "plan": ["plan", GRAPH, *where],
        "plan --json": ["plan", GRAPH, *where, "--json"],
        "plan --mermaid": ["plan", GRAPH, *where, "--mermaid"],
        "history": ["history", GRAPH, *where],
        "history without GRAPH": ["history", *where],
        "check": ["check", GRAPH, "--db", str(db)],
        "threads": ["threads", GRAPH, "--db", str(db)],
        "threads without GRAPH": ["threads", "--db", str(db)],
        "show": ["show", GRAPH, *where],
        "show --json": ["show", GRAPH, *where, "--json"],
        "diff": ["diff", GRAPH, *where],
        "accept --dry-run": ["accept", GRAPH, *where, "--dry-run"],
        "prune": ["prune", GRAPH, "--db", str(db)],
        "export": ["export", GRAPH, "--db", str(db), "--out", str(db.parent / "fixtures")],
    }


NAMES = [
    "plan",
    "plan --json",
    "plan --mermaid",
    "history",
    "history without GRAPH",
    "check",
    "threads",
    "threads without GRAPH",
    "show",
    "show --json",
    "diff",
    "accept --dry-run",
    "prune",
    "export",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_no_command_prints_a_serializer_warning(demo_db: Path, name: str) -> None:
    done = program(*commands(demo_db)[name])
    assert done.returncode in (0, 1), done.stderr
    for stream in (done.stdout, done.stderr):
        assert "Deserializing unregistered type" not in stream
        assert "Blocked deserialization" not in stream
    assert done.stderr == ""


@pytest.mark.slow
def test_show_revives_the_demo_s_models(demo_db: Path) -> None:
    done = program("show", GRAPH, "--db", str(demo_db), "--thread", THREAD)
    assert done.returncode == 0, done.stderr
    assert "Summary(text='A proposal" in done.stdout and "word_count=9" in done.stdout
    assert "Review(verdict='approve')" in done.stdout


@pytest.mark.slow
def test_accept_yes_on_the_demo_prints_no_warning(demo_db: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.sqlite"
    shutil.copy(demo_db, copy)
    done = program("accept", GRAPH, "--db", str(copy), "--thread", THREAD, "--yes")
    assert done.returncode == 0, done.stderr
    assert "accepted as written by this graph (was rewind)" in done.stdout
    assert done.stderr == ""


@pytest.mark.slow
def test_the_same_read_through_langgraph_s_default_serializer_warns(demo_db: Path) -> None:
    """What the allowlist prevents: a plain SqliteSaver reading the demo's database."""
    code = (
        "import sqlite3, sys; sys.path.insert(0, 'examples');"
        "from langgraph.checkpoint.sqlite import SqliteSaver;"
        f"saver = SqliteSaver(sqlite3.connect({str(demo_db)!r}));"
        "list(saver.list(None))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert "Deserializing unregistered type demo_models.Summary" in done.stderr


def test_the_allowlist_names_every_class_the_demo_s_graph_declares() -> None:
    """Fails loudly if LangGraph's allowlist builder moves or changes what it gathers."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import demo  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(ROOT / "examples"))
    found = allowlist(demo.builder)
    assert found is not None
    assert {
        ("demo_models", "Facts"),
        ("demo_models", "Summary"),
        ("demo_models", "Review"),
    } <= found
    assert allowlist(42) is None


@pytest.mark.slow
def test_the_plan_read_through_the_allowlist_is_the_app_s(demo_db: Path) -> None:
    """The allowlist changes no decision: the app, reading through LangGraph's default
    serializer, plans the same."""
    code = (
        "import json, sqlite3, sys; sys.path.insert(0, 'examples'); import demo;"
        "from langgraph.checkpoint.sqlite import SqliteSaver; import neograph_ext as ne;"
        f"saver = SqliteSaver(sqlite3.connect({str(demo_db)!r}));"
        "g = ne.compile(demo.builder, checkpointer=saver);"
        f"p = ne.plan(g, {{'configurable': {{'thread_id': {THREAD!r}}}}});"
        "print(json.dumps([p.kind, p.checkpoint_id, list(p.rerun), list(p.kept)]))"
    )
    app = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert app.returncode == 0, app.stderr
    done = program("plan", GRAPH, "--db", str(demo_db), "--thread", THREAD, "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert json.loads(app.stdout) == [got["kind"], got["checkpoint_id"], got["rerun"], got["kept"]]
    assert got["kind"] == "rewind"
