"""The package's modules import one way, down the layers, and export public names.

The layers, lowest first: the pure decision (types, fingerprints, stamps, the plan),
the flows that yield operations, I/O (storage, locks, ledgers, what rewrites a thread),
the drivers that perform the operations and the graph class, the public API, the CLI.
A module imports its own layer and those below; the pure modules import no saver and no
database driver, as Temporal's workflow sandbox keeps I/O out of workflow code.

Read from the source with ``ast``, as a reader would: every import counts, at the top
of a module or inside a function, except those under ``TYPE_CHECKING`` (for the layers;
the pure modules' ban on savers and databases counts those too).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

import neograph_ext

PACKAGE = Path(neograph_ext.__file__).parent


def _name(path: Path) -> str:
    """A module as imports name it after ``neograph_ext.``: ``_flow``, ``cli._app``."""
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


MODULES = {_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
CHECKED = tuple(name for name in MODULES if name.split(".")[-1] != "__init__")
"""Every module of the package, the CLI's too."""
PACKAGE_ONLY = tuple(name for name in CHECKED if not name.startswith("cli."))
"""The library's modules: the CLI's, typer commands and options, export nothing."""


FOLDERS = {
    "pure": "decision",
    "flows": "flows",
    "I/O": "storage",
    "drivers": "drivers",
    "public API": "",
    "CLI": "cli",
}
"""Each layer's folder, lowest first: a module's place is the folder its file is in."""

LAYERS: dict[str, frozenset[str]] = {
    layer: frozenset(name for name in MODULES if name.rpartition(".")[0] == folder)
    for layer, folder in FOLDERS.items()
}
"""Every module's place, read from its folder."""

UPWARD = {
    ("flows._flow", "drivers._thread"): "ThreadCall, the call's record, names its graph's class",
    ("decision._fork_misread", "drivers._thread"): "ThreadCall, as for _flow",
    ("flows._keep_calls", "drivers._thread"): "ThreadCall, as for _flow",
    ("flows._migrate", "drivers._thread"): "ThreadCall, as for _flow",
    (
        "flows._migrate",
        "storage._stamp_order",
    ): "a carrying fork names its stamp: the Store operation that "
    "registers it names the storage function it runs",
    (
        "flows._migrate",
        "storage._stamp_store",
    ): "as for _stamp_order: the Store that saves the description",
    ("decision._steps", "drivers._thread"): "ThreadCall, as for _flow",
}
"""The imports that still point up a layer, each with why: the list is exact, so one that
goes must leave it too."""

SAVERS_AND_DATABASES = (
    "sqlite3",
    "aiosqlite",
    "psycopg",
    "psycopg_pool",
    "langgraph.checkpoint.memory",
    "langgraph.checkpoint.sqlite",
    "langgraph.checkpoint.postgres",
)
"""What the pure modules never import, nor ``BaseCheckpointSaver``."""


# Cached: every parametrized test reads every module.
@cache
def imports(module: str) -> list[ast.ImportFrom]:
    tree = ast.parse(MODULES[module].read_text())
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
    return {
        m: {name for node in imports(m) for name in (submodules(node) or [inner(node)])}
        for m in MODULES
    }


def inner(node: ast.ImportFrom) -> str:
    return (node.module or "").removeprefix("neograph_ext.")


def submodules(node: ast.ImportFrom) -> list[str]:
    """The modules ``from neograph_ext.storage import _storage_sqlite`` imports by name."""
    return [f"{inner(node)}.{a.name}" for a in node.names if f"{inner(node)}.{a.name}" in MODULES]


def layer(module: str) -> int:
    return next(i for i, names in enumerate(LAYERS.values()) if module in names)


def test_every_module_has_one_place_in_the_layers() -> None:
    placed = [name for names in LAYERS.values() for name in names]
    assert sorted(placed) == sorted(MODULES), (
        f"unplaced: {sorted(set(MODULES) - set(placed))}; "
        f"gone or twice: {sorted({n for n in placed if placed.count(n) > 1 or n not in MODULES})}"
    )


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_its_own_layer_and_those_below(module: str) -> None:
    up = sorted(
        f"{other} ({list(LAYERS)[layer(other)]})"
        for other in graph()[module]
        if other in MODULES and layer(other) > layer(module) and (module, other) not in UPWARD
    )
    assert not up, f"{module} ({list(LAYERS)[layer(module)]}) imports a higher layer: {up}"


def test_the_upward_imports_listed_are_exactly_those_left() -> None:
    left = {
        (module, other)
        for module, others in graph().items()
        for other in others
        if other in MODULES and layer(other) > layer(module)
    }
    assert left == set(UPWARD)


@pytest.mark.parametrize("module", sorted(LAYERS["pure"]))
def test_a_pure_module_imports_no_saver_and_no_database(module: str) -> None:
    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [node.module]
            found += [alias.name for alias in node.names if alias.name == "BaseCheckpointSaver"]
    banned = [
        name
        for name in found
        if name == "BaseCheckpointSaver"
        or any(name == b or name.startswith(f"{b}.") for b in SAVERS_AND_DATABASES)
    ]
    assert not banned, f"{module} is pure but imports {banned}"


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
        f"{module}.{node.name}"
        for module, path in MODULES.items()
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
        if name.name.startswith("_") and f"{inner(node)}.{name.name}" not in MODULES
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


@pytest.mark.parametrize("module", PACKAGE_ONLY)
def test_all_lists_the_public_names(module: str) -> None:
    tree = ast.parse(MODULES[module].read_text())
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
