"""The demo's closing hint runs as printed, from the project's root, as after ``make demo``.

``make demo`` runs ``.venv/bin/python examples/demo.py``; the virtualenv's ``bin`` is
not on PATH, so the hint must name the program by a path that works from there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.support import ROOT, run_program


@pytest.fixture(scope="module")
def hints(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    workdir = tmp_path_factory.mktemp("demo")
    done = run_program("examples/demo.py", str(workdir))
    assert done.returncode == 0, done.stderr
    tail = done.stdout.split("Inspect the thread with:\n", 1)[1]
    return [line.strip() for line in tail.splitlines() if line.strip()]


def run_hint(hint: str) -> subprocess.CompletedProcess[str]:
    bin_dir = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != bin_dir)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "PYTHONPATH")}
    return subprocess.run(
        hint, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**env, "PATH": path},
    )  # fmt: skip


def test_the_hint_names_the_program_by_a_path_that_exists_and_the_demo_graph(
    hints: list[str],
) -> None:
    assert [hint.split()[1] for hint in hints] == ["plan", "history"]
    for hint in hints:
        program = hint.split()[0]
        assert (ROOT / program).is_file(), hint
        assert " examples/demo.py:builder " in hint


@pytest.mark.slow
def test_the_plan_hint_shows_the_pending_rewind_of_review(hints: list[str]) -> None:
    done = run_hint(hints[0])
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert re.search(r"kind +rewind", done.stdout)
    assert "node `review`: channel `review` type changed" in done.stdout
    assert re.search(r"re-runs +review, publish", done.stdout)  # the order they run in
    assert re.search(r"kept +fetch, extract, summarize", done.stdout)


@pytest.mark.slow
def test_the_history_hint_lists_the_lineage_with_each_step_compared(hints: list[str]) -> None:
    done = run_hint(hints[1])
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    rows = re.findall(r"(\w+) +│ (same|changed) ", done.stdout)
    assert rows == [
        ("fetch", "same"),
        ("extract", "same"),
        ("summarize", "same"),
        ("review", "changed"),
        ("publish", "same"),
    ]


def test_without_the_script_beside_python_the_hint_runs_the_module(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A Python whose ``bin`` has no ``neograph-ext`` (an install without the script)."""
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    import demo  # type: ignore[import-not-found]

    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    plan, history = demo.cli_hints(tmp_path / "demo.sqlite")
    assert plan.startswith(f"{tmp_path / 'python'} -m neograph_ext.cli plan ")
    assert history.startswith(f"{tmp_path / 'python'} -m neograph_ext.cli history ")
