"""The command line is built on the public API: no module of ``neograph_ext.cli``
imports a private ``neograph_ext._`` module, and each stays under 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import neograph_ext.cli

CLI = Path(neograph_ext.cli.__file__).parent
MODULES = sorted(CLI.glob("*.py"))


def _imported(tree: ast.AST) -> list[str]:
    """Every module an import names, ``from x import y`` counting as ``x.y`` too."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found += [base, *(f"{base}.{alias.name}".replace("..", ".") for alias in node.names)]
    return found


def _private(name: str) -> bool:
    parts = name.split(".")
    return (
        parts[0] == "neograph_ext"
        and parts[1:2] != ["cli"]
        and any(part.startswith("_") for part in parts[1:])
    )


def test_the_cli_imports_no_private_module_of_the_library() -> None:
    assert {path.name for path in MODULES} >= {"__init__.py", "__main__.py", "_app.py"}
    for path in MODULES:
        names = _imported(ast.parse(path.read_text(), str(path)))
        assert not [n for n in names if n.startswith("..")], f"{path.name}: relative import"
        assert not [n for n in names if _private(n)], f"{path.name} imports {names}"


def test_the_scan_sees_each_spelling_of_a_private_import() -> None:
    for source in (
        "import neograph_ext.decision._history",
        "from neograph_ext.decision._stamp import Stamp",
        "from neograph_ext import _stamp_store",
    ):
        assert any(_private(n) for n in _imported(ast.parse(source))), source
    assert not any(_private(n) for n in _imported(ast.parse("from neograph_ext import plan")))
    cli_own = "from neograph_ext.cli._show import text"
    assert not any(_private(n) for n in _imported(ast.parse(cli_own)))


def test_each_cli_module_is_under_400_lines() -> None:
    for path in MODULES:
        assert len(path.read_text().splitlines()) < 400, path.name
