"""``mypy --strict`` on a user's app (``user_app.py``): ``compile`` keeps LangGraph's generic
types, and the public errors' attributes are typed.

The package is found in this checkout (``MYPYPATH``), as a type checker finds an install
it can read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = Path(__file__).with_name("user_app.py")


@pytest.mark.slow
def test_mypy_strict_accepts_a_user_app_and_its_asserted_types(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", cache, str(APP)],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
