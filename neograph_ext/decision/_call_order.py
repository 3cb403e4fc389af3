"""Which calls an entrypoint's body will make, as far as its code shows without running
it: what ``plan`` compares a turn's cached calls with (``call_program``, ``judged``).

Rules:
- Read once, at compile time, from the body's source: its statements in order, while
  each is an expression, an assignment to one name or a ``return``. The first other
  statement (a branch, a loop, a ``with``, a nested ``def``) ends what is known: calls
  after it are known only when they are made.
- In an expression, a call of a task the body names (``_entrypoint.seen_tasks``) is a
  call, its arguments read before it; a builtin, one of LangGraph's functions
  (``interrupt``) or a method of a ``str``, ``bytes`` or number calls no task; any other
  call may, and ends what is known, as a short-circuit (``and``, ``if ... else``) or a
  comprehension holding a call does.
- At plan time (pure), the body is followed over known values: constants, the turn's
  input, the names assigned, and the cached result of a call that matches (``.result()``
  or ``await`` of its future). A call's arguments are known when each value is; its
  digest is then ``_call_digest.call_digest``'s, as the call records it when it runs.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import logging
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from langgraph.func import _TaskFunction

from neograph_ext.decision._call_digest import call_digest

__all__ = ["CallProgram", "Judged", "StoredCall", "call_program", "judged"]

logger = logging.getLogger("neograph_ext")


class StoredCall(NamedTuple):
    """A finished call cached on the turn's base."""

    task: str | None
    """Its task; None for a task not seen."""
    digest: str | None
    """The digest it recorded; None when it recorded none (older code)."""
    value: Any
    """Its cached result."""


@dataclass(frozen=True)
class CallProgram:
    """An entrypoint body's statements, as far as they tell its calls."""

    statements: tuple[ast.stmt, ...]
    """The body's statements up to the first that does not tell (``complete``: all)."""
    complete: bool
    """Whether every statement of the body is among them."""
    parameter: str | None
    """The name the body gets its input under."""
    tasks: Mapping[str, str]
    """The names the body calls tasks by: name -> task name."""
    pure: frozenset[str]
    """The names of functions that call no task (builtins, LangGraph's)."""


class _Stop(Exception):
    """What the body does next is not known without running it."""


@dataclass(frozen=True)
class _Future:
    index: int


_UNKNOWN: Any = object()
_STATEMENTS = (ast.Expr, ast.Assign, ast.AnnAssign, ast.Return, ast.Pass)
_BRANCHING = (
    ast.BoolOp,
    ast.IfExp,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
"""Expressions that may make a call they hold any number of times, or not at all."""
_IMMUTABLE = (str, bytes, int, float, bool)
"""The types whose methods are followed (they call no task and change nothing)."""


def call_program(func: Callable[..., Any]) -> CallProgram | None:
    """The calls ``func``'s body tells, or None when its source cannot be read."""
    fn = inspect.unwrap(func)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError) as exc:
        logger.debug("entrypoint %r: source not read: %s", fn, exc)
        return None
    top = tree.body[0] if tree.body else None
    if not isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    told: list[ast.stmt] = []
    for statement in top.body:
        if not isinstance(statement, _STATEMENTS) or not _simple(statement):
            break
        told.append(statement)
    params = [a.arg for a in (*top.args.posonlyargs, *top.args.args)]
    scope = dict(getattr(fn, "__globals__", {}))
    cells = getattr(fn, "__closure__", None) or ()
    scope.update(zip(fn.__code__.co_freevars, (_content(c) for c in cells), strict=False))
    tasks, pure = {}, set()
    for node in ast.walk(top):
        if isinstance(node, ast.Name):
            value = scope.get(node.id, getattr(builtins, node.id, None))
            if isinstance(value, _TaskFunction):
                tasks[node.id] = str(getattr(value.func, "__name__", "") or node.id)
            elif (node.id not in scope and hasattr(builtins, node.id)) or str(
                getattr(value, "__module__", "")
            ).startswith("langgraph."):
                pure.add(node.id)
    return CallProgram(
        tuple(told),
        len(told) == len(top.body),
        params[0] if params else None,
        tasks,
        frozenset(pure),
    )


def _content(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def _simple(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Assign):
        return len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
    if isinstance(statement, ast.AnnAssign):
        return isinstance(statement.target, ast.Name) and statement.value is not None
    return True


class Judged(NamedTuple):
    """What following the body told of a turn's cached calls."""

    verdicts: dict[int, bool | None]
    """Per stored call (by position), whether the body makes that call again: True (the
    same task, with the digest it recorded, or it recorded none), False (another task,
    other arguments, or no call at that position), None (known only when made)."""
    made: tuple[str, ...]
    """The tasks of the calls the body makes, in call order, as far as it was followed."""


def judged(program: CallProgram, input: Any, stored: Mapping[int, StoredCall]) -> Judged:
    """The body ``program`` followed from ``input``, served the ``stored`` calls that
    match (``Judged``)."""
    run = _Run(program, stored)
    if program.parameter is not None:
        run.names[program.parameter] = input
    try:
        for statement in program.statements:
            value = getattr(statement, "value", None)
            found = run.value(value) if isinstance(value, ast.expr) else None
            if isinstance(statement, ast.Assign | ast.AnnAssign):
                target = (
                    statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
                )
                run.names[getattr(target, "id", "")] = found
            if isinstance(statement, ast.Return):
                break
        else:
            if not program.complete:
                raise _Stop
    except _Stop:
        unknown: bool | None = None
    else:
        unknown = False
    later = {i: unknown for i in stored if i >= len(run.made)}
    return Judged({**later, **run.verdicts}, tuple(run.made))


class _Run:
    """One walk of the body over known values."""

    def __init__(self, program: CallProgram, stored: Mapping[int, StoredCall]) -> None:
        self.program, self.stored = program, stored
        self.names: dict[str, Any] = {}
        self.verdicts: dict[int, bool | None] = {}
        self.made: list[str] = []

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.names.get(node.id, _UNKNOWN)
        if isinstance(node, ast.Await):
            return self.result(self.value(node.value))
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.List | ast.Tuple):
            items = [self.value(item) for item in node.elts]
            return _UNKNOWN if any(isinstance(e, ast.Starred) for e in node.elts) else items
        if isinstance(node, _BRANCHING):
            if any(self._calls_task(n) for n in ast.walk(node)):
                raise _Stop
            return _UNKNOWN
        if isinstance(node, ast.Subscript):
            held, key = self.value(node.value), self.value(node.slice)
            try:
                return held[key] if _known(held) and _known(key) else _UNKNOWN
            except Exception:
                return _UNKNOWN
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.value(child)
        return _UNKNOWN

    def _calls_task(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        if isinstance(node.func, ast.Attribute) and node.func.attr == "result":
            return False
        named = node.func.id if isinstance(node.func, ast.Name) else None
        return named is None or named not in self.program.pure

    def call(self, node: ast.Call) -> Any:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "result" and not node.args:
            return self.result(self.value(func.value))
        named = func.id if isinstance(func, ast.Name) else None
        holder = self.value(func.value) if isinstance(func, ast.Attribute) else _UNKNOWN
        # Python reads the arguments before it calls: their calls are made either way.
        args = tuple(self.value(a) for a in node.args)
        kwargs = {str(k.arg): self.value(k.value) for k in node.keywords}
        if isinstance(func, ast.Attribute) and type(holder) in _IMMUTABLE:
            return _method(holder, func.attr, args, kwargs)
        if named is None or (named not in self.program.tasks and named not in self.program.pure):
            raise _Stop
        if named not in self.program.tasks:
            return _UNKNOWN
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            args, kwargs = (_UNKNOWN,), {}
        task = self.program.tasks[named]
        index = len(self.made)
        self.made.append(task)
        known = all(_known(a) for a in (*args, *kwargs.values()))
        digest = call_digest(task, args, kwargs) if known else None
        stored = self.stored.get(index)
        if stored is not None:
            self.verdicts[index] = _verdict(stored, task, digest, known)
        return _Future(index)

    def result(self, future: Any) -> Any:
        if not isinstance(future, _Future) or self.verdicts.get(future.index) is not True:
            return _UNKNOWN
        return self.stored[future.index].value


def _method(holder: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A method of a value of an immutable builtin type (``topic.upper()``): it calls no
    task, and its result is known when its arguments are."""
    if not all(_known(a) for a in (*args, *kwargs.values())):
        return _UNKNOWN
    try:
        return getattr(holder, name)(*args, **kwargs)
    except Exception:
        return _UNKNOWN


def _verdict(stored: StoredCall, task: str, digest: str | None, known: bool) -> bool | None:
    if stored.task != task:
        return False
    if stored.digest is None:
        return True  # recorded by older code: judged as before, by task and position
    if not known:
        return None
    return digest == stored.digest


def _known(value: Any) -> bool:
    if value is _UNKNOWN or isinstance(value, _Future):
        return False
    if isinstance(value, list | tuple | set | frozenset):
        return all(_known(v) for v in value)
    if isinstance(value, dict):
        return all(_known(k) and _known(v) for k, v in value.items())
    return True
