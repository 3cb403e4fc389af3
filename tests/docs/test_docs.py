"""Every ```python block of README.md and docs/*.md runs, and every local link resolves.

Conventions for writing docs:
- The ```python blocks of one file run in order, in one namespace, like one module
  named ``docs_<file stem>``: a page may build on its earlier blocks. Each file starts
  from a fresh namespace.
- Blocks of any other language (``bash``, ``text``, ...) are not run. There is no
  "skip" marker: a Python example that cannot run does not belong in ```python.
- Each file runs in its own empty temporary directory, so a block may create
  ``checkpoints.sqlite`` or similar next to itself.
- A file whose ```python blocks mention ``DATABASE_URL`` needs PostgreSQL: its blocks
  get the server that ``make test`` starts (``NEOGRAPH_EXT_PG_DSN``) as ``DATABASE_URL``,
  and the test is marked ``postgres``.
- A failure names the file, the block and its first line; the traceback's line numbers
  are those of the Markdown file.
"""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
PG_VARIABLE = "DATABASE_URL"

_FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    """One fenced code block."""

    language: str
    """The fence's info string, lowercased (``python``, ``bash``, or empty)."""
    line: int
    """The 1-based line number of the block's first line of code."""
    source: str
    """The code between the fences."""


def blocks(text: str, name: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, in order."""
    found: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        index += 1
        if not opening:
            continue
        fence, language = opening.group(1), opening.group(2).lower()
        start = index
        while index < len(lines) and not lines[index].startswith(fence):
            index += 1
        if index == len(lines):
            raise AssertionError(f"{name}: the code block at line {start} is never closed")
        found.append(Block(language, start + 1, "\n".join(lines[start:index]) + "\n"))
        index += 1
    return found


def python_blocks(path: Path) -> list[Block]:
    """The blocks of a file that the test runs."""
    relative = path.relative_to(ROOT).as_posix()
    found = blocks(path.read_text(encoding="utf-8"), relative)
    return [block for block in found if block.language == "python"]


def needs_pg(path: Path) -> bool:
    return any(PG_VARIABLE in block.source for block in python_blocks(path))


def _param(path: Path) -> object:
    relative = path.relative_to(ROOT).as_posix()
    return pytest.param(path, id=relative, marks=[pytest.mark.postgres] if needs_pg(path) else [])


def test_the_pages_exist() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in FILES}
    for page in (
        "README.md",
        "docs/concepts.md",
        "docs/strict-mode.md",
        "docs/savers.md",
        "docs/not-detected.md",
        "docs/troubleshooting.md",
    ):
        assert page in names


@pytest.mark.parametrize("path", [_param(path) for path in FILES])
def test_python_blocks_run(
    path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    relative = path.relative_to(ROOT).as_posix()
    runnable = python_blocks(path)
    if needs_pg(path):
        monkeypatch.setenv(PG_VARIABLE, request.getfixturevalue("pg_dsn"))
    monkeypatch.chdir(tmp_path)
    name = "docs_" + re.sub(r"\W", "_", path.stem.lower())
    module = types.ModuleType(name)
    # Registered, so classes defined by a block can be found by their import path,
    # as the checkpoint serializer and typing.get_type_hints look them up.
    monkeypatch.setitem(sys.modules, name, module)
    for number, block in enumerate(runnable, start=1):
        # Padding makes traceback line numbers those of the Markdown file; the blocks
        # must not inherit this module's `from __future__ import annotations`.
        source = "\n" * (block.line - 1) + block.source
        code = compile(source, str(path), "exec", dont_inherit=True)
        try:
            exec(code, module.__dict__)
        except Exception as exc:
            where = f"{relative}: python block {number} of {len(runnable)} (line {block.line})"
            raise AssertionError(f"{where} failed: {type(exc).__name__}: {exc}") from exc


@pytest.mark.parametrize("path", FILES, ids=[p.relative_to(ROOT).as_posix() for p in FILES])
def test_local_links_resolve(path: Path) -> None:
    """Links to other files of the repository, and to their headings, resolve."""
    prose = "\n".join(_outside_code(path.read_text(encoding="utf-8").splitlines()))
    broken = []
    for target in _LINK.findall(prose):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # a URL
        name, _, anchor = target.partition("#")
        file = (path.parent / name).resolve() if name else path
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    assert not broken, f"{path.relative_to(ROOT).as_posix()}: broken links {broken}"


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings."""
    found: set[str] = set()
    for line in _outside_code(path.read_text(encoding="utf-8").splitlines()):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        candidate, count = slug, 0
        while candidate in found:
            count += 1
            candidate = f"{slug}-{count}"
        found.add(candidate)
    return found


def _outside_code(lines: list[str]) -> list[str]:
    kept: list[str] = []
    fence: str | None = None
    for line in lines:
        opening = _FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None and line.startswith(fence):
            fence = None
        elif fence is None:
            kept.append(line)
    return kept


def test_anchors(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Savers\n## Scaling out: many workers, one database\n## `run`\n## `run`\n")
    assert anchors(page) == {"savers", "scaling-out-many-workers-one-database", "run", "run-1"}


def test_block_parser() -> None:
    text = "intro\n```python\nx = 1\n```\n\n```bash\nls\n```\n````md\n```python\n````\n"
    parsed = blocks(text, "t.md")
    assert [(b.language, b.line, b.source) for b in parsed] == [
        ("python", 3, "x = 1\n"),
        ("bash", 7, "ls\n"),
        ("md", 10, "```python\n"),
    ]
    with pytest.raises(AssertionError, match="never closed"):
        blocks("```python\nx = 1\n", "t.md")
