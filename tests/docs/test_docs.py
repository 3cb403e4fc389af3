"""Every page of README.md, CHANGELOG.md and docs/*.md runs as a user pastes it, and every
local link resolves.

Conventions for writing docs:
- The ```python blocks of one page, pasted in order into one file, run as a script
  (``python page.py``, so as ``__main__``), in a fresh interpreter, with the page's own
  empty temporary directory as the working directory: a page may build on its earlier
  blocks and create ``checkpoints.sqlite`` or similar next to itself.
- A block right below a line ``<!-- docs-test: file app/pipeline.py -->`` is saved to
  that file instead (a module the script imports, as a server imports an app module).
- Blocks of any other language (``bash``, ``text``, ...) are not run.
- A page that is deliberately fragments says so, with why, in a line
  ``<!-- docs-test: fragment: why -->``: its blocks are compiled, not run, and the test
  reports the page as a warning.
- A page whose ```python blocks mention ``DATABASE_URL`` needs PostgreSQL, and says so
  in its first lines: its script gets the server that ``make test`` starts
  (``NEOGRAPH_EXT_PG_DSN``) as ``DATABASE_URL``, and the test is marked ``postgres``.
- A failure shows the script's stderr; its traceback's line numbers are the page's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

import neograph_ext

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
PG_VARIABLE = "DATABASE_URL"

_FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
_FRAGMENT = re.compile(r"<!--\s*docs-test:\s*fragment\b:?(.*?)-->", re.DOTALL)
_FILE = re.compile(r"<!--\s*docs-test:\s*file\s+(\S+)\s*-->")
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
    file: str | None = None
    """Where a ``<!-- docs-test: file NAME -->`` line just above the fence saves the block
    (a module the page's script imports); None: the block is part of the script."""


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
        saved = _FILE.fullmatch(lines[start - 2].strip()) if start >= 2 else None
        code = "\n".join(lines[start:index]) + "\n"
        found.append(Block(language, start + 1, code, saved.group(1) if saved else None))
        index += 1
    return found


def python_blocks(path: Path) -> list[Block]:
    """The blocks of a file that the test runs."""
    relative = path.relative_to(ROOT).as_posix()
    found = blocks(path.read_text(encoding="utf-8"), relative)
    return [block for block in found if block.language == "python"]


def needs_pg(path: Path) -> bool:
    return any(PG_VARIABLE in block.source for block in python_blocks(path))


def pasted(runnable: list[Block], script: str) -> dict[str, str]:
    """The files a user makes from a page's blocks: ``script``, holding every block not
    saved elsewhere, in order, and each ``file`` block's file. Each block sits at its
    Markdown line, so a traceback's line numbers are the page's."""
    files: dict[str, list[str]] = {}
    for block in runnable:
        lines = files.setdefault(block.file or script, [])
        lines.extend([""] * (block.line - 1 - len(lines)))
        lines.extend(block.source.splitlines())
    return {name: "\n".join(lines) + "\n" for name, lines in files.items()}


def fragment_reason(path: Path) -> str | None:
    """Why a page's blocks are fragments, from its marker; None for a page that runs."""
    marker = _FRAGMENT.search(path.read_text(encoding="utf-8"))
    return marker.group(1).strip() if marker else None


def _param(path: Path) -> object:
    relative = path.relative_to(ROOT).as_posix()
    marks = [pytest.mark.postgres] if needs_pg(path) else []
    return pytest.param(path, id=relative, marks=marks)


def test_the_pages_exist() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in FILES}
    for page in (
        "README.md",
        "CHANGELOG.md",
        "docs/concepts.md",
        "docs/strict-mode.md",
        "docs/savers.md",
        "docs/not-detected.md",
        "docs/troubleshooting.md",
    ):
        assert page in names


@pytest.mark.slow
@pytest.mark.parametrize("path", [_param(path) for path in FILES if python_blocks(path)])
def test_page_runs_as_a_script(path: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The page's python blocks, pasted in order into one file, run as ``python page.py``."""
    relative = path.relative_to(ROOT).as_posix()
    script = path.stem + ".py"
    files = pasted(python_blocks(path), script)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
        # A syntax error fails here, also in a file nothing imports.
        compile(text, f"{relative} ({name})", "exec", dont_inherit=True)
    reason = fragment_reason(path)
    if reason is not None:
        warnings.warn(f"{relative} is a fragment, compiled but not run: {reason}", stacklevel=1)
        return
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    if needs_pg(path):
        env[PG_VARIABLE] = request.getfixturevalue("pg_dsn")
    done = subprocess.run(
        [sys.executable, script], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"{relative} fails as a script:\n{done.stderr[-4000:]}"


def test_the_changelog_opens_with_this_version() -> None:
    """The newest release the changelog names is pyproject.toml's, in Keep a Changelog's form."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", text, re.MULTILINE)
    assert releases[:1] == [version["version"]], releases
    assert releases == sorted(releases, key=lambda v: tuple(map(int, v.split("."))), reverse=True)


def test_the_package_is_the_release_the_readme_documents() -> None:
    """The installed version (``__version__``, ``--version``) is the release whose upgrade
    section the README opens with: 0.4 documents "Upgrading from 0.3"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    newest = re.findall(r"^## Upgrading from (\d+\.\d+)", readme, re.MULTILINE)[0]
    major, minor = map(int, neograph_ext.__version__.split(".")[:2])
    assert newest == f"{major}.{minor - 1}", (newest, neograph_ext.__version__)


def test_a_page_needing_postgresql_says_so_before_its_first_example() -> None:
    for path in filter(needs_pg, FILES):
        text = path.read_text(encoding="utf-8")
        top = text.split("\n```", 1)[0]
        assert PG_VARIABLE in top, f"{path.relative_to(ROOT).as_posix()}: needs {PG_VARIABLE}"


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


def test_pasted_files() -> None:
    text = "```python\nx = 1\n```\n<!-- docs-test: file app/m.py -->\n```python\ny = 2\n```\n"
    parsed = blocks(text, "t.md")
    assert [b.file for b in parsed] == [None, "app/m.py"]
    assert pasted(parsed, "page.py") == {"page.py": "\nx = 1\n", "app/m.py": "\n" * 5 + "y = 2\n"}


def test_fragment_reason(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Page\n<!-- docs-test: fragment: needs a served deployment -->\n")
    assert fragment_reason(page) == "needs a served deployment"
    page.write_text("# Page\n<!-- a comment -->\n")
    assert fragment_reason(page) is None
