"""The package's modules import one way and export public names.

Read from the source with ``ast``, as a reader would: every import counts, at the top
of a module or inside a function, except those under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

import neograph_ext

PACKAGE = Path(neograph_ext.__file__).parent

CHECKED = tuple(sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__"))
"""Every module of the package."""


# Cached: every parametrized test reads every module.
@cache
def imports(module: str) -> list[ast.ImportFrom]:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    typing_only = {
        id(node)
        for top in tree.body
        if isinstance(top, ast.If) and "TYPE_CHECKING" in ast.unparse(top.test)
        for node in ast.walk(top)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("neograph_ext.")
        and id(node) not in typing_only
    ]


@cache
def graph() -> dict[str, set[str]]:
    modules = [path.stem for path in PACKAGE.glob("*.py")]
    return {m: {node.module.split(".")[1] for node in imports(m) if node.module} for m in modules}


def reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    seen: set[str] = set()
    stack = list(edges.get(start, ()))
    while stack:
        found = stack.pop()
        if found == goal:
            return True
        if found not in seen:
            seen.add(found)
            stack.extend(edges.get(found, ()))
    return False


def test_no_module_imports_the_package_inside_a_function() -> None:
    """An import inside a function body is how a cycle is dodged: none is left."""
    found = [
        f"{path.stem}.{node.name}"
        for path in PACKAGE.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for inner in ast.walk(node)
        if isinstance(inner, ast.ImportFrom | ast.Import)
        and any(
            name.startswith("neograph_ext")
            for name in (
                [inner.module or ""]
                if isinstance(inner, ast.ImportFrom)
                else [alias.name for alias in inner.names]
            )
        )
    ]
    assert not found, f"imports of the package inside functions: {found}"


@pytest.mark.parametrize("module", CHECKED)
def test_no_checked_module_is_in_an_import_cycle(module: str) -> None:
    edges = graph()
    back = sorted(m for m in edges[module] if reaches(edges, m, module))
    assert not back, f"{module} imports {back}, which import {module} back"


@pytest.mark.parametrize("module", CHECKED)
def test_names_imported_from_or_by_a_checked_module_are_public(module: str) -> None:
    used = [
        f"{name.name} from {node.module}"
        for node in imports(module)
        for name in node.names
        if name.name.startswith("_")
    ]
    used += [
        f"{name.name} by {other}"
        for other in graph()
        if other != module
        for node in imports(other)
        if node.module == f"neograph_ext.{module}"
        for name in node.names
        if name.name.startswith("_")
    ]
    assert not used, f"{module}: underscore names cross modules: {used}"


@pytest.mark.parametrize("module", CHECKED)
def test_all_lists_the_public_names(module: str) -> None:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    defined: set[str] = set()
    listed: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id == "__all__":
                    assert isinstance(node.value, ast.List)
                    listed = [ast.literal_eval(item) for item in node.value.elts]
                elif isinstance(target, ast.Name):
                    defined.add(target.id)
    public = {name for name in defined if not name.startswith("_")} - {"logger"}
    namespace = vars(__import__(f"neograph_ext.{module}", fromlist=["_"]))
    assert public <= set(listed), f"{module}: public but not in __all__: {public - set(listed)}"
    assert all(name in namespace for name in listed), f"{module}: __all__ names a missing name"
