"""``examples/functional.py`` runs, and each stage shows what docs/functional.md promises:
after a deploy changing ``draft``, ``outline``'s cached result is kept and only ``draft``
and ``polish`` run again."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "functional.py"


def _stages(out: str) -> list[list[str]]:
    parts = re.split(r"^=== Stage \d of 3: .* ===$", out, flags=re.M)[1:]
    return [re.findall(r"^    (\w+) running\.\.\.$", part, flags=re.M) for part in parts]


def test_the_example_keeps_the_unchanged_task_and_reruns_from_the_changed_one(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path / "work")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert _stages(done.stdout) == [["outline", "draft", "polish"], ["draft", "polish"], []]
    assert "Draft.words: added (int, required)" in done.stdout
    assert "kept: outline" in done.stdout
    assert "plan: up_to_date" in done.stdout
    assert done.stderr == ""
