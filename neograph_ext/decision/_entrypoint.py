"""What an ``@entrypoint`` declares, read into its stamp (``entrypoint_stamp``).

Rules:
- The stamp of an entrypoint has one node per ``@task`` it can see and one for the
  entrypoint itself (its return type), and one channel, ``__previous__``, typed with
  what the entrypoint saves for its next turn (``entrypoint.final[R, S]``'s ``S``, else
  its return type): a change of either is the entrypoint's.
- Tasks are found without running anything, from the entrypoint function's code:
  the globals it names (a module-level task), the cells it closes over (a task
  made in an enclosing function), and, recursively, the plain functions of its own
  module it names (helpers that call tasks) and the tasks those tasks name. A task
  defined inside the entrypoint body does not exist before the body runs: it is read
  from the source (``@task`` or ``@task(...)`` over a nested ``def``), its return
  annotation evaluated in the entrypoint's globals.
- Not seen: a task reached through an attribute (``tools.fetch``), passed in as an
  argument or made by calling ``task(fn)`` at run time, a helper of another module.
  Its cached result is served by LangGraph unchecked; when another task changed, it is
  dropped with everything after the change (its position is unknown).
- A task that calls tasks (a ``@task`` whose code names another) folds their digests
  into its own (``NodeStamp.sub``), as a node running a subgraph does: those calls are
  cached inside its own, under ids no name recomputes, so a change of one is its
  caller's change, and its caller's cached result (which consumed it) runs again.
- A type that cannot be fingerprinted is left out and logged at debug level.
"""

from __future__ import annotations

import ast
import inspect
import logging
import textwrap
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, get_args, get_origin

from langgraph.func import _TaskFunction, entrypoint
from langgraph.pregel import Pregel

from neograph_ext.decision._call_order import CallProgram, call_program
from neograph_ext.decision._fingerprint import Signature, UnresolvedTypeError, digest, signature
from neograph_ext.decision._introspect import return_type
from neograph_ext.decision._langgraph_calls import PREVIOUS_CHANNEL
from neograph_ext.decision._stamp import STAMP_FORMAT, NodeStamp, Stamp, canonical_digest, stamp_id

__all__ = ["EntrypointShape", "entrypoint_function", "entrypoint_stamp", "seen_tasks"]

logger = logging.getLogger("neograph_ext")


class EntrypointShape(typing.NamedTuple):
    """What planning an entrypoint's threads needs besides its stamp."""

    name: str
    """The entrypoint's name: its one node."""
    tasks: frozenset[str]
    """The names of the tasks its stamp covers."""
    save: object = None
    """What it saves for its next turn (``previous``): the type of ``__previous__``."""
    returns: Mapping[str, object] = types.MappingProxyType({})
    """Per task, the type it declares it returns (``output_types`` first): what its
    cached results must read back as."""
    program: CallProgram | None = None
    """The calls its body makes, as far as its code tells (``_call_order``); None when
    its source cannot be read."""


def entrypoint_function(graph: Pregel[Any, Any, Any, Any]) -> Callable[..., Any] | None:
    """The function an ``@entrypoint`` graph runs, or None when ``graph`` is none.

    An entrypoint is a ``Pregel`` of one node that writes ``__end__`` and
    ``__previous__`` (``langgraph.func.entrypoint.__call__``).
    """
    if len(graph.nodes) != 1 or PREVIOUS_CHANNEL not in graph.channels:
        return None
    node = next(iter(graph.nodes.values()))
    bound = node.bound
    for attr in ("func", "afunc"):
        fn = getattr(bound, attr, None)
        if callable(fn):
            return typing.cast("Callable[..., Any]", fn)
    return None


def seen_tasks(func: Callable[..., Any]) -> dict[str, object]:
    """The tasks ``func`` can call, as far as its code shows them, by task name: a
    ``_TaskFunction`` for one that exists, the return type (or None) of one defined
    inside a function body."""
    found: dict[str, object] = {}
    visited: set[int] = set()
    module = getattr(func, "__module__", None)
    pending: list[Callable[..., Any]] = [func]
    while pending:
        fn = inspect.unwrap(pending.pop())
        code = getattr(fn, "__code__", None)
        if code is None or id(code) in visited:
            continue
        visited.add(id(code))
        names = dict(getattr(fn, "__globals__", {}))
        cells = [cell.cell_contents for cell in (getattr(fn, "__closure__", None) or ())]
        values = [names[n] for n in _names(code) if n in names] + _filled(cells)
        for value in values:
            if isinstance(value, _TaskFunction):
                name = _task_name(value)
                if name:  # a partial without a name is not seen
                    found.setdefault(name, value)
                pending.append(value.func)
            elif isinstance(value, types.FunctionType) and value.__module__ == module:
                pending.append(value)
        for name, returns in _nested_tasks(fn).items():
            found.setdefault(name, returns)
    return found


def _filled(cells: list[Any]) -> list[Any]:
    return [value for value in cells if value is not None]


def _names(code: types.CodeType) -> list[str]:
    """The global names ``code`` and the code nested in it refer to."""
    found = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += _names(const)
    return found


def _task_name(task: _TaskFunction[Any, Any]) -> str:
    return str(getattr(task.func, "__name__", "") or "")


def _nested_tasks(fn: Callable[..., Any]) -> dict[str, object]:
    """Tasks defined inside ``fn``'s body, read from its source: name -> return type."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return {}
    top = tree.body[0] if tree.body else None
    if not isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef):
        return {}
    found: dict[str, object] = {}
    for node in ast.walk(top):
        if node is top or not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        name = _decorated_task(node)
        if name is not None:
            found[name] = _evaluated(node.returns, getattr(fn, "__globals__", {}))
    return found


def _decorated_task(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The task name of a ``def`` decorated with ``@task`` or ``@task(...)``, else None."""
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call is not None else decorator
        label = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if label != "task":
            continue
        for keyword in call.keywords if call is not None else ():
            if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                return str(keyword.value.value)
        return node.name
    return None


def _evaluated(returns: ast.expr | None, scope: Mapping[str, Any]) -> object:
    if returns is None:
        return None
    try:
        return eval(compile(ast.Expression(returns), "<annotation>", "eval"), dict(scope))
    except Exception as exc:  # an annotation naming a local name: not seen
        logger.debug("nested task annotation %r not resolved: %s", ast.unparse(returns), exc)
        return None


def _callees(tasks: Mapping[str, object]) -> dict[str, tuple[str, ...]]:
    """Per task of ``tasks``, the other tasks of ``tasks`` its code names, sorted."""
    found: dict[str, tuple[str, ...]] = {}
    for name, value in tasks.items():
        if isinstance(value, _TaskFunction):
            named = set(seen_tasks(value.func)) & set(tasks)
            found[name] = tuple(sorted(named - {name}))
    return found


def _folded(
    own: Mapping[str, dict[str, Any]], callees: Mapping[str, tuple[str, ...]]
) -> dict[str, NodeStamp]:
    """Each task's stamp, the digests of the tasks it calls folded in (``sub``), those of
    their callees with them; a task calling back up the chain is left out of it."""
    nodes: dict[str, NodeStamp] = {}

    def stamped(task: str, chain: frozenset[str]) -> NodeStamp:
        if task in nodes:
            return nodes[task]
        fields = dict(own[task])
        below = {c: stamped(c, chain | {task}) for c in callees.get(task, ()) if c not in chain}
        inner = None
        if below:
            fields["sub"] = {c: node.fp for c, node in below.items()}
            inner = {f"{c}/out": node.out for c, node in below.items() if node.out} or None
        nodes[task] = NodeStamp(fp=canonical_digest(fields), inner=inner, **fields)
        return nodes[task]

    for task in sorted(own):
        stamped(task, frozenset())
    return nodes


def _returns(func: Callable[..., Any]) -> tuple[object, object]:
    """An entrypoint's return type and save type (``entrypoint.final[R, S]``)."""
    try:
        hints = typing.get_type_hints(inspect.unwrap(func), include_extras=True)
    except (NameError, TypeError, AttributeError) as exc:
        logger.debug("return annotation of %r not resolved: %s", func, exc)
        return None, None
    tp: object = hints.get("return")
    origin = get_origin(tp)
    if origin in (typing.Coroutine, typing.Awaitable):
        tp = get_args(tp)[-1]
        origin = get_origin(tp)
    if tp is entrypoint.final:
        return None, None
    if origin is entrypoint.final:
        value, save = get_args(tp)
        return value, save
    return tp, tp


def _seen_apart(func: Callable[..., Any], name: str) -> dict[str, object]:
    """The tasks an entrypoint's function is seen to call, but one named as it."""
    tasks = seen_tasks(func)
    if name in tasks:
        # A drop-in raises nothing LangGraph would not: the task stays unseen.
        logger.warning(
            "entrypoint %r: a task has its name, so its cached results are not checked; "
            "rename one of them (@task(name=...)) so that they can be told apart",
            name,
        )
        del tasks[name]
    return tasks


def _remember(sigs: dict[str, Signature], tp: object, what: str) -> str | None:
    """``tp``'s digest, its signature kept in ``sigs``; None for no type, or one that
    cannot be fingerprinted."""
    if tp is None or tp is Any:
        return None
    try:
        sig = signature(tp)
    except UnresolvedTypeError as exc:
        logger.debug("%s: type not fingerprinted: %s", what, exc)
        return None
    key = digest(sig)
    sigs[key] = sig
    return key


def entrypoint_stamp(
    graph: Pregel[Any, Any, Any, Any],
    output_types: Mapping[str, object] | None = None,
    versions: Mapping[str, str] | None = None,
) -> tuple[Stamp, EntrypointShape]:
    """Fingerprint an ``@entrypoint``: each task it can see, its return and save types.

    Args:
        graph: What ``@entrypoint`` made.
        output_types: Per task name (or the entrypoint's name), a type that overrides
            the return annotation.
        versions: Per task name (or the entrypoint's name), an opaque string to bump
            after a prompt or logic change.

    Raises:
        ValueError: ``output_types`` or ``versions`` names neither a task seen nor the
            entrypoint.
    """
    func = entrypoint_function(graph)
    if func is None:
        raise ValueError("not an @entrypoint graph")
    name = next(iter(graph.nodes))
    tasks = _seen_apart(func, name)
    output_types, versions = dict(output_types or {}), dict(versions or {})
    known = {name, *tasks}
    for option, given in (("output_types", output_types), ("versions", versions)):
        unknown = sorted(set(given) - known)
        if unknown:
            raise ValueError(
                f"{option} names tasks the entrypoint does not call: {unknown}; the tasks "
                f"seen are {sorted(tasks)} and the entrypoint is {name!r} (a task reached "
                "through an attribute or an argument is not seen)"
            )
    sigs: dict[str, Signature] = {}
    value, save = _returns(func)
    own: dict[str, dict[str, Any]] = {}
    returns: dict[str, object] = {}
    for task, found in sorted(tasks.items()):
        declared = found if not isinstance(found, _TaskFunction) else return_type(found)
        returns[task] = output_types.get(task, declared)
        own[task] = {"out": _remember(sigs, returns[task], f"task {task!r}")}
        own[task]["ver"] = versions.get(task)
    nodes = _folded(own, _callees(tasks))
    fields = {
        "out": _remember(sigs, output_types.get(name, value), f"entrypoint {name!r}"),
        "ver": versions.get(name),
    }
    nodes[name] = NodeStamp(fp=canonical_digest(fields), **fields)  # type: ignore[arg-type]
    channels: dict[str, str] = {}
    saved = _remember(sigs, save, f"entrypoint {name!r} save")
    if saved is not None:
        channels[PREVIOUS_CHANNEL] = saved
    stamp = Stamp(
        v=STAMP_FORMAT, id=stamp_id(nodes, channels), nodes=nodes, channels=channels, sigs=sigs
    )
    return stamp, EntrypointShape(name, frozenset(tasks), save, returns, call_program(func))
