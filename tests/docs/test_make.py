"""The README's set-up as a new user meets it: a bare ``make`` lists the targets and
builds nothing, and the everyday loop the README names is a target of the Makefile."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_bare_make_lists_the_targets_and_builds_nothing(tmp_path: Path) -> None:
    # A Python that does not exist: any target that builds the venv would fail on it.
    env = {**os.environ, "PYTHON": str(tmp_path / "no-python")}
    done = subprocess.run(
        ["make", "-s"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    listed = set(re.findall(r"^\s*make ([\w-]+)", done.stdout, re.MULTILINE))
    assert {"demo", "test", "test-fast", "lint", "compat"} <= listed
    assert not (tmp_path / "no-python").exists()


def test_the_readme_names_the_fast_tier_and_the_makefile_has_it() -> None:
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert "`make test-fast`" in readme
    assert re.search(r"^test-fast:", makefile, re.MULTILINE)
    assert re.search(r"^\.DEFAULT_GOAL := help$", makefile, re.MULTILINE)
