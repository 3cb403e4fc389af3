"""``examples/demo.py`` runs, and each of its four stages shows what the README promises.

The demo prints ``=== Stage N of 4: ... ===`` before each stage, one
``    <node> running...`` line per node execution, and ``  nodes run: ...`` after it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo.py"
PIPELINE = ["fetch", "extract", "summarize", "review", "publish"]


def run_demo(workdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DEMO), str(workdir)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo") / "work"


@pytest.fixture(scope="module")
def demo(workdir: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = run_demo(workdir)
    return done, time.monotonic() - started


@pytest.fixture(scope="module")
def stages(demo: tuple[subprocess.CompletedProcess[str], float]) -> dict[int, str]:
    done, _ = demo
    assert done.returncode == 0, f"the demo failed:\n{done.stdout}\n{done.stderr}"
    parts = re.split(r"^=== Stage (\d) of 4: .* ===$", done.stdout, flags=re.MULTILINE)
    found = {int(number): text for number, text in zip(parts[1::2], parts[2::2], strict=True)}
    assert sorted(found) == [1, 2, 3, 4], done.stdout
    return found


def ran(stage: str) -> list[str]:
    """The nodes a stage executed, from the line each node prints when it runs."""
    return re.findall(r"^ {4}(\w+) +running\.\.\.$", stage, flags=re.MULTILINE)


def summary_line(stage: str) -> str:
    (line,) = re.findall(r"^ {2}nodes run: (.*)$", stage, flags=re.MULTILINE)
    return line


def test_exits_cleanly_and_quickly(demo: tuple[subprocess.CompletedProcess[str], float]) -> None:
    done, elapsed = demo
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert elapsed < 15, f"the demo took {elapsed:.1f} s"
    assert done.stderr == "", "the demo should print no warnings"


def test_stage_1_crashes_in_review(stages: dict[int, str]) -> None:
    assert ran(stages[1]) == ["fetch", "extract", "summarize", "review"]
    assert "crashed" in stages[1] and "timed out" in stages[1]


def test_stage_2_resumes_without_repeating_finished_nodes(stages: dict[int, str]) -> None:
    assert "plan: continue" in stages[2]
    assert ran(stages[2]) == ["review", "publish"]
    assert summary_line(stages[2]) == "review, publish"


def test_stage_3_rewinds_and_reruns_the_changed_node_and_downstream(
    stages: dict[int, str],
) -> None:
    text = stages[3]
    assert "stands in for a deploy" in text
    assert "rewind" in text
    assert re.search(r"^ +rewind: thread 'report-42', fork from checkpoint \S+ \(step \d+\)$",
                     text, flags=re.MULTILINE)  # fmt: skip
    assert "node `summarize`: channel `summary` type changed" in text
    assert "Summary.word_count: added (int, required)" in text
    assert "kept: fetch, extract" in text  # in execution order
    downstream = PIPELINE[PIPELINE.index("summarize") :]
    assert ran(text) == downstream
    assert summary_line(text) == ", ".join(downstream)
    assert "plan after the rewind: up_to_date" in text


def test_stage_4_strict_mode_raises_before_anything_runs(stages: dict[int, str]) -> None:
    text = stages[4]
    assert "stands in for a deploy" in text
    assert "on_change='raise'" in text
    # A new user meets 0.4's API alone: older spellings are the CHANGELOG's and the
    # README's upgrade sections'.
    assert "auto_resume" not in text and "before 0." not in text
    assert "CheckpointSchemaError" in text
    assert "node `review`: channel `review` type changed" in text
    assert 'Review.verdict: str -> Literal["approve", "revise"]' in text
    assert "invalidated_nodes: ['review']" in text
    assert ran(text) == []
    assert summary_line(text) == "none"


@pytest.mark.slow
def test_starts_from_a_fresh_database_each_time(workdir: Path, stages: dict[int, str]) -> None:
    assert (workdir / "demo.sqlite").is_file(), "the first run left its database"
    done = run_demo(workdir)  # the same directory again
    assert done.returncode == 0, done.stderr
    (stage_1,) = re.findall(r"Stage 1 of 4.*?(?==== Stage 2)", done.stdout, flags=re.DOTALL)
    assert ran(stage_1) == ["fetch", "extract", "summarize", "review"]
