"""The compiled graphs a node's code reaches: subgraphs it calls (``sub.invoke(state)``).

LangGraph treats a compiled graph invoked inside a node's body as a subgraph (with a
checkpointer, its checkpoints are written under the calling task's namespace), so its
types are the calling node's as much as an added subgraph's are its node's.

Rules:
- Objects are read, never run or imported, and never source (no I/O, as an async suite
  with a blocking-call detector requires): a function's closure cells, defaults and the
  module globals its code names (nested code objects included); a bound method's
  function and its instance's attributes; a ``functools.partial``'s function and
  arguments; a tool's ``func`` and ``coroutine``; a ``ToolNode``'s tools; dicts, lists
  and tuples (only built-in containers: a mapping of another kind may read a file or a
  database; and not sets, whose order is not the same in every process).
- The code of LangGraph, LangChain and deep agents is not walked: what their builders
  hold is known through ``_langgraph_agents`` alone, and a graph a user's code hands
  them is reached through that code.
- The walk is total and cheap: each object is visited once, to a bounded depth and
  count, and a compiled graph ends its branch (what it calls is its own stamp's).
- A graph is named by the name the code holds it by (a global, a free variable, an
  attribute, a subagent spec's ``name``): its fingerprints are keyed by that name in the
  node's, as a deep agent's sub-agents are by theirs.
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Iterator
from itertools import islice
from typing import Any

from langgraph.pregel import Pregel

__all__ = ["MAX_DEPTH", "MAX_OBJECTS", "called_graphs"]

MAX_DEPTH = 8
"""How many references deep the walk follows from a node."""

MAX_OBJECTS = 4_000
"""How many objects one node's walk visits at most."""

_MAX_ITEMS = 256
"""How many items of one container are looked at."""

_LIBRARIES = ("langgraph", "langchain", "deepagents")
"""Roots of the packages whose code is not walked (``langchain`` covers its partners:
``langchain_core``, ``langchain_openai``, ...)."""

_LIBRARY_ATTRIBUTES = ("func", "afunc", "coroutine", "tools_by_name")
"""What a library object (LangGraph's node wrapper, a LangChain tool, a ``ToolNode``)
runs of the user's: the only attributes of one that are followed."""

_SKIPPED = (str, bytes, int, float, complex, bool, type(None), type, types.ModuleType)


def called_graphs(start: object) -> dict[str, Pregel[Any, Any, Any, Any]]:
    """The compiled graphs ``start`` (a node's runnable, a tool) reaches, by the name
    its code holds each by; a name held twice gets ``#2``, ``#3``.

    Args:
        start: What a node runs.

    Returns:
        Each graph once, in the order of the walk (deterministic for the same code).
    """
    walk = _Walk()
    if not isinstance(start, Pregel):  # an added subgraph is its node's, not a call
        walk.visit("", start, 0)
    return walk.found


class _Walk:
    """One bounded walk: what was seen, what was found."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.found: dict[str, Pregel[Any, Any, Any, Any]] = {}

    def visit(self, name: str, obj: object, depth: int) -> None:
        if isinstance(obj, _SKIPPED) or depth > MAX_DEPTH or len(self.seen) >= MAX_OBJECTS:
            return
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        if isinstance(obj, Pregel):
            self._record(name, obj)
            return
        for key, ref in _references(obj):
            self.visit(key or name, ref, depth + 1)

    def _record(self, name: str, graph: Pregel[Any, Any, Any, Any]) -> None:
        key, n = name or graph.name, 1
        while key in self.found:
            n += 1
            key = f"{name or graph.name}#{n}"
        self.found[key] = graph


def _references(obj: object) -> Iterator[tuple[str | None, object]]:
    """What ``obj`` holds that the walk follows, each with the name it is held by (None:
    the holder's name)."""
    if isinstance(obj, types.FunctionType):
        if not _is_library(obj.__module__):
            yield from _function_references(obj)
    elif isinstance(obj, types.MethodType):
        yield None, obj.__func__
        yield None, obj.__self__
    elif isinstance(obj, functools.partial):
        yield None, obj.func
        code = getattr(obj.func, "__code__", None)
        params = code.co_varnames[: code.co_argcount] if code is not None else ()
        for i, arg in enumerate(obj.args[:_MAX_ITEMS]):
            yield (params[i] if i < len(params) else None), arg
        yield from obj.keywords.items()
    elif isinstance(obj, dict):
        spec = obj.get("name")
        for key, value in islice(obj.items(), _MAX_ITEMS):
            yield (spec if isinstance(spec, str) else key if isinstance(key, str) else None), value
    elif isinstance(obj, list | tuple):
        yield from ((None, item) for item in islice(obj, _MAX_ITEMS))
    elif _is_library(type(obj).__module__):
        yield from _library_attributes(obj)
    else:
        yield from _attributes(obj)


def _library_attributes(obj: object) -> Iterator[tuple[str | None, object]]:
    for attr in _LIBRARY_ATTRIBUTES:
        try:
            ref = getattr(obj, attr, None)
        except Exception:  # a property that raises: nothing of the user's there
            continue
        if ref is not None:
            yield None, ref


def _function_references(fn: types.FunctionType) -> Iterator[tuple[str | None, object]]:
    code = fn.__code__
    for var, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
        try:
            yield var, cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
    positional = code.co_varnames[: code.co_argcount]
    defaults = fn.__defaults__ or ()
    yield from zip(positional[len(positional) - len(defaults) :], defaults, strict=False)
    yield from (fn.__kwdefaults__ or {}).items()
    module_globals = fn.__globals__
    named = {
        name
        for name in _names(code)
        if name in module_globals and not isinstance(module_globals[name], _SKIPPED)
    }
    # Disassembling is the walk's dearest part: only code naming a global worth
    # following is told whether it loads it as a global or as an attribute.
    for global_name in _loaded_globals(code) if named else ():
        if global_name in named:
            named.discard(global_name)
            yield global_name, module_globals[global_name]
    wrapped = getattr(fn, "__wrapped__", None)
    if wrapped is not None:
        yield None, wrapped


_LOADS_GLOBAL = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and the code objects nested in it (inner functions, comprehensions)."""
    stack, seen = [code], set()
    while stack:
        current = stack.pop()
        if id(current) not in seen:
            seen.add(id(current))
            yield current
            stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))


def _names(code: types.CodeType) -> Iterator[str]:
    """The global and attribute names ``code`` and the code nested in it use."""
    for current in _codes(code):
        yield from current.co_names


def _loaded_globals(code: types.CodeType) -> Iterator[str]:
    """The names ``code`` and the code nested in it load as globals, in order (an
    attribute of the same name, ``self.sub``, is no global)."""
    for current in _codes(code):
        for ins in dis.get_instructions(current):
            if ins.opname in _LOADS_GLOBAL and isinstance(ins.argval, str):
                yield ins.argval


def _attributes(obj: object) -> Iterator[tuple[str | None, object]]:
    """An instance's own attributes (what a bound method's ``self`` holds) and the
    methods its user-defined classes declare (a callable object's ``__call__``)."""
    try:
        held = getattr(obj, "__dict__", None)
    except Exception:  # a proxy that raises: nothing to follow
        held = None
    if isinstance(held, dict):  # slots and builtins have none
        yield from islice(held.items(), _MAX_ITEMS)
    root = type(obj).__module__.split(".", 1)[0]
    for cls in type(obj).__mro__:
        if cls.__module__.split(".", 1)[0] == root:  # the user's classes, not pydantic's
            yield from ((None, f) for f in vars(cls).values() if isinstance(f, types.FunctionType))


def _is_library(module: object) -> bool:
    root = module.split(".", 1)[0] if isinstance(module, str) else ""
    return root.startswith(_LIBRARIES)
