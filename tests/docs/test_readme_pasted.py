"""README.md's ```python blocks, pasted in order into one script, run as ``__main__``.

That is how a new user tries them: their classes are the script's, so the strict-mode
example must not refuse them, and the resumed runs print no line of LangGraph's
serializer, nor any other line on stderr.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def test_the_readme_blocks_run_pasted_into_one_script(tmp_path: Path) -> None:
    blocks = _BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 4
    script = tmp_path / "readme.py"
    script.write_text("\n".join(blocks), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    # A script's own classes are guidance at INFO, not a refusal nor a warning: a new
    # user's first run prints nothing but its own output.
    assert done.stderr == ""
    # The plan printed is the one the README shows, line for line.
    (shown,) = re.findall(r"^print\(plan\)\n((?:# .*\n)+)", blocks[1], re.MULTILINE)
    expected = [line.removeprefix("# ") for line in shown.splitlines()]
    printed = done.stdout.splitlines()
    start = next(i for i, line in enumerate(printed) if line.startswith("rewind: "))
    got = printed[start : start + len(expected) + 1]
    assert [re.sub(r"checkpoint \S+ ", "checkpoint 1f0... ", got[0]), *got[1:-1]] == expected
    assert got[-1].startswith("thread 'doc-42': checkpoints were written"), "a line unshown"
