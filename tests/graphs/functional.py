"""Entrypoints for the Functional API tests: ``t1 -> t2 -> t3`` and its variants, each
task counting its runs; sync for the sync drive, async for the async one.

A deploy is the same entrypoint compiled with other declared types (``output_types``)
or ``versions``: the tasks' names and call order stay, as after a real deploy that
changed only what a task returns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.func import entrypoint, task
from langgraph.pregel import Pregel
from langgraph.types import CachePolicy, interrupt

import neograph_ext
from tests.drive import Drive, Saver
from tests.graphs.pipelines import Crash

__all__ = [
    "asking_chain",
    "asking_task",
    "cached",
    "chain",
    "crashed_in",
    "fan_out",
    "nesting",
    "saving",
    "task_of",
]

Workflow = Pregel[Any, Any, Any, Any]


def _counted(name: str, runs: Counter[str], crash: set[str], fn: Callable[[int], int]) -> Any:
    def body(x: int) -> int:
        runs[name] += 1
        if name in crash:
            raise Crash(name)
        return fn(x)

    async def abody(x: int) -> int:
        return body(x)

    return body, abody


def crashed_in(
    drive: Drive,
    saver: Saver,
    config: RunnableConfig,
    runs: Counter[str],
    build: Callable[..., Workflow],
    at: str,
) -> tuple[Workflow, Counter[str]]:
    """The workflow ``build(runs, crash, is_async=...)`` makes, run on 1 until its task
    ``at`` crashes; then the crash lifted and ``runs`` cleared. Returns the workflow and
    what the crashed run ran."""
    crash = {at}
    workflow = build(runs, crash, is_async=drive.is_async)
    with pytest.raises(Crash):
        drive.run(neograph_ext.compile(workflow, checkpointer=saver), 1, config)
    ran = runs.copy()
    crash.clear()
    runs.clear()
    return workflow, ran


def task_of(
    name: str, body: Callable[..., Any], annotations: dict[str, Any], *, is_async: bool
) -> Any:
    """``body`` as the task ``name`` (awaited through a coroutine when ``is_async``),
    annotated as given: what the stamp reads of it."""

    async def abody(*args: Any, **kwargs: Any) -> Any:
        return body(*args, **kwargs)

    chosen: Any = abody if is_async else body
    chosen.__name__ = name
    chosen.__annotations__ = annotations
    return task(chosen)


def _task(
    name: str,
    runs: Counter[str],
    crash: set[str],
    fn: Callable[[int], int],
    is_async: bool,
    **kw: Any,
) -> Any:
    body, abody = _counted(name, runs, crash, fn)
    chosen = abody if is_async else body
    chosen.__name__ = name
    chosen.__annotations__ = {"x": int, "return": int}
    return task(chosen, **kw)


def _three(runs: Counter[str], crash: set[str], is_async: bool) -> tuple[Any, Any, Any]:
    """``t1`` adds one, ``t2`` doubles, ``t3`` takes one away."""
    return (
        _task("t1", runs, crash, lambda x: x + 1, is_async),
        _task("t2", runs, crash, lambda x: x * 2, is_async),
        _task("t3", runs, crash, lambda x: x - 1, is_async),
    )


def chain(runs: Counter[str], crash: set[str], *, is_async: bool) -> Workflow:
    """``t1(x) -> t2 -> t3``, returning t3's result; a task named in ``crash`` raises."""
    t1, t2, t3 = _three(runs, crash, is_async)
    if is_async:

        @entrypoint()
        async def workflow(x: int) -> int:
            a = await t1(x)
            b = await t2(a)
            return await t3(b)

        return workflow

    @entrypoint()
    def workflow(x: int) -> int:  # type: ignore[no-redef]
        return t3(t2(t1(x).result()).result()).result()

    return workflow


def asking_twice(runs: Counter[str], *, is_async: bool) -> Workflow:
    """``t1``, then a question, then ``t2`` on its answer, then a second question, then
    ``t3`` on both answers."""
    t1, t2, t3 = _three(runs, set(), is_async)
    if is_async:

        @entrypoint()
        async def workflow(x: int) -> int:
            a = await t1(x)
            b = await t2(a + int(interrupt("first?")))
            return await t3(b + int(interrupt("second?")))

        return workflow

    @entrypoint()
    def workflow(x: int) -> int:  # type: ignore[no-redef]
        a = t1(x).result()
        b = t2(a + int(interrupt("first?"))).result()
        return t3(b + int(interrupt("second?"))).result()

    return workflow


def asking_chain(runs: Counter[str], *, is_async: bool) -> Workflow:
    """``t1 -> t2``, then ``interrupt()`` in the entrypoint, then ``t3`` on the answer."""
    t1, t2, t3 = _three(runs, set(), is_async)
    if is_async:

        @entrypoint()
        async def workflow(x: int) -> int:
            b = await t2(await t1(x))
            answer = interrupt(f"ok with {b}?")
            return await t3(b + int(answer))

        return workflow

    @entrypoint()
    def workflow(x: int) -> int:  # type: ignore[no-redef]
        b = t2(t1(x).result()).result()
        answer = interrupt(f"ok with {b}?")
        return t3(b + int(answer)).result()

    return workflow


def fan_out(runs: Counter[str], crash: set[str], *, is_async: bool) -> Workflow:
    """``p1``, ``p2``, ``p3`` started together (three futures before any result), then
    ``join`` on their sum."""
    p1 = _task("p1", runs, crash, lambda x: x + 1, is_async)
    p2 = _task("p2", runs, crash, lambda x: x + 2, is_async)
    p3 = _task("p3", runs, crash, lambda x: x + 3, is_async)
    join = _task("join", runs, crash, lambda x: x * 10, is_async)
    if is_async:

        @entrypoint()
        async def workflow(x: int) -> int:
            futures = [p1(x), p2(x), p3(x)]
            values = [await f for f in futures]
            return await join(sum(values))

        return workflow

    @entrypoint()
    def workflow(x: int) -> int:  # type: ignore[no-redef]
        futures = [p1(x), p2(x), p3(x)]
        return join(sum(f.result() for f in futures)).result()

    return workflow


def saving(
    runs: Counter[str],
    *,
    is_async: bool,
    save: type = str,
    crash: set[str] | None = None,
    ask_at: int | None = None,
) -> Workflow:
    """A two-turn counter: ``add`` adds the input to ``previous``, saved as ``save``
    (``entrypoint.final[int, save]``); ``add`` raises while named in ``crash``; given
    the input ``ask_at``, the entrypoint asks for a number to add too (``interrupt``)."""
    add = _task("add", runs, crash if crash is not None else set(), lambda x: x + 100, is_async)

    def body(x: int, previous: Any, total: int) -> Any:
        runs["workflow"] += 1
        total += int(previous) if previous is not None else 0
        if x == ask_at:
            total += int(interrupt("how much more?"))
        return entrypoint.final(value=total, save=save(total))

    if is_async:

        async def workflow(x: int, *, previous: Any = None) -> Any:
            return body(x, previous, await add(x))

    else:

        def workflow(x: int, *, previous: Any = None) -> Any:  # type: ignore[misc]
            return body(x, previous, add(x).result())

    workflow.__annotations__["return"] = entrypoint.final[int, save]  # type: ignore[valid-type]
    return entrypoint()(workflow)


def cached(runs: Counter[str], *, is_async: bool) -> Workflow:
    """``slow(x)`` with a cache policy, then ``t2``."""
    slow = _task("slow", runs, set(), lambda x: x + 1, is_async, cache_policy=CachePolicy())
    t2 = _task("t2", runs, set(), lambda x: x * 2, is_async)
    if is_async:

        @entrypoint()
        async def workflow(x: int) -> int:
            return await t2(await slow(x))

        return workflow

    @entrypoint()
    def workflow(x: int) -> int:  # type: ignore[no-redef]
        return t2(slow(x).result()).result()

    return workflow


def nesting(runs: Counter[str], crash: set[str], *, is_async: bool) -> Workflow:
    """``outer(x)``, which calls ``inner`` inside its own body, then ``last``; a task
    named in ``crash`` raises."""
    inner = _task("inner", runs, crash, lambda x: x * 2, is_async)
    last = _task("last", runs, crash, lambda x: x, is_async)
    if is_async:

        @task
        async def outer(x: int) -> int:
            runs["outer"] += 1
            return await inner(x) + 1

        @entrypoint()
        async def workflow(x: int) -> int:
            return await last(await outer(x))

        return workflow

    @task  # type: ignore[no-redef]
    def outer(x: int) -> int:
        runs["outer"] += 1
        return int(inner(x).result()) + 1

    @entrypoint()
    def workflow(x: int) -> int:  # type: ignore[no-redef]
        return last(outer(x).result()).result()

    return workflow


def asking_task(runs: Counter[str], *, is_async: bool) -> Workflow:
    """``t1``, then ``ask``, a task that asks (``interrupt()``) for a number to add, then
    ``t3``."""
    t1 = _task("t1", runs, set(), lambda x: x + 1, is_async)
    t3 = _task("t3", runs, set(), lambda x: x * 10, is_async)

    def asked(x: int) -> int:
        runs["ask"] += 1
        return x + int(interrupt(f"add to {x}?"))

    ask = task_of("ask", asked, {"x": int, "return": int}, is_async=is_async)
    if is_async:

        @entrypoint()
        async def workflow(x: int) -> int:
            return await t3(await ask(await t1(x)))

        return workflow

    @entrypoint()
    def workflow(x: int) -> int:  # type: ignore[no-redef]
        return t3(ask(t1(x).result()).result()).result()

    return workflow
