"""The suites ``make compat`` runs: LangGraph's own, and those of the agent builders most
graphs are made with. Each comes from the sdist of the installed version, so its tests
import the installed package.

Rules:
- Only the sdist's ``tests/`` and ``pyproject.toml`` are unpacked (into
  ``.compat/<distribution>-<version>/``); the suite runs ``Suite.tests`` of it.
- A suite's own settings are kept (its pyproject's pytest options, its conftest
  fixtures, LangChain's ``blockbuster`` fixture), except ``addopts``: no ``--full-trace``,
  ``--durations`` or ``-vv`` pages in the logs.
- Deselected tests need something the harness does not start; each says what.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SUITES", "Suite", "unpacked"]

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Suite:
    """One project's test suite, run through ``neograph_ext.compile``."""

    name: str
    distribution: str
    tests: str
    """The folder of the sdist's checkout the suite runs."""
    plugins: tuple[str, ...] = ()
    """pytest options of this suite's passes, before the harness's own."""
    ci: tuple[str, ...] | None = None
    """The pytest ids ``--selection ci`` runs; None: the whole suite (it is short)."""
    deselected: Mapping[str, str] = field(default_factory=dict)
    """Node id -> what it needs that the harness does not start."""

    @property
    def metadata_only(self) -> Path:
        """The checked-in list of this suite's metadata-only differences (none: no file)."""
        return HERE / f"metadata_only{self._suffix}.txt"

    @property
    def exceptions(self) -> Path:
        """The checked-in list of this suite's auto-resume exceptions (none: no file)."""
        return HERE / f"auto_resume_exceptions{self._suffix}.txt"

    @property
    def _suffix(self) -> str:
        return "" if self.name == "langgraph" else f".{self.name}"


def _ci_selection() -> tuple[str, ...]:
    lines = (HERE / "ci_selection.txt").read_text().splitlines()
    return tuple(line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip())


# LangGraph's and langgraph-prebuilt's suites run without `langchain` in their own CI: the
# plugin answers langchain-core's version probe as if it were absent (without_langchain.py).
# LangChain's suite needs it, and runs its async tests under pytest-asyncio, as upstream.
SUITES = (
    Suite(
        "langgraph",
        "langgraph",
        "tests",
        # LangGraph runs its async tests with anyio's plugin, not pytest-asyncio.
        plugins=("-p", "no:asyncio", "-p", "without_langchain"),
        ci=_ci_selection(),
    ),
    Suite(
        "langchain",
        "langchain",
        "tests/unit_tests/agents",
        # Interrupts answered through ainvoke, the middleware graph's shapes and jumps,
        # structured output, a tool's retries.
        ci=(
            "tests/unit_tests/agents/middleware/implementations/test_human_in_the_loop.py",
            "tests/unit_tests/agents/middleware/core/test_framework.py",
            "tests/unit_tests/agents/test_response_format.py",
            "tests/unit_tests/agents/middleware/implementations/test_tool_retry.py",
        ),
    ),
    Suite(
        "prebuilt",
        "langgraph-prebuilt",
        "tests",
        plugins=("-p", "without_langchain"),
        ci=("tests/test_react_agent.py", "tests/test_tool_node.py"),
    ),
)


def unpacked(suite: Suite, cache: Path) -> Path:
    """The unpacked ``tests/`` of the installed version's sdist (cached): its checkout."""
    version = importlib.metadata.version(suite.distribution)
    base = f"{suite.distribution.replace('-', '_')}-{version}"
    tree = cache / f"{suite.distribution}-{version}"
    if (tree / "pyproject.toml").exists():
        return tree
    sdist_dir = cache / "sdist"
    found = [p for p in sdist_dir.glob("*.tar.gz") if p.name.lower() in {f"{base}.tar.gz"}]
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", f"{suite.distribution}=={version}", "-d", str(sdist_dir)],
        )  # fmt: skip
        found = [p for p in sdist_dir.glob("*.tar.gz") if p.name.lower() == f"{base}.tar.gz"]
    if not found:
        sys.exit(
            f"[compat] could not download the sdist of {suite.distribution}=={version}; "
            f"put {base}.tar.gz in {sdist_dir} and run again"
        )
    with tarfile.open(found[0]) as tar:
        prefix = tar.getmembers()[0].name.split("/", 1)[0] + "/"
        wanted = [
            m
            for m in tar.getmembers()
            if m.name.startswith(prefix + "tests/") or m.name == prefix + "pyproject.toml"
        ]
        for member in wanted:
            member.name = member.name[len(prefix) :]
        tar.extractall(tree, members=wanted, filter="data")
    return tree
