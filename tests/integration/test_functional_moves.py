"""Generated deploys of an entrypoint's calls: a call inserted, removed, swapped with its
neighbour or given another argument, at each position, against a control that changes
nothing. Each call hands its result to the next, as a pipeline of tasks does.

Release 1 makes its calls and crashes in ``end``; release 2, its own code, resumes the
thread. The resume must return what a fresh run of release 2 returns, run no task more
often than that fresh run, and (no change) serve every cached call. ``written`` releases
are straight-line code, written to a module of their own, so ``plan`` follows every
call; ``looped`` ones loop over their calls, so their calls are matched when made. The
suite's harness checks each plan against what its run executed.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.func import entrypoint, task

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.pipelines import Crash

Calls = tuple[tuple[str, str], ...]

BASE: Calls = (("a", "p"), ("b", "q"), ("a", "r"))


def _moved(kind: str, at: int) -> Calls:
    calls = list(BASE)
    if kind == "insert":
        calls.insert(at, ("b", "new"))
    elif kind == "remove":
        del calls[at]
    elif kind == "swap":
        calls[at], calls[at + 1] = calls[at + 1], calls[at]
    elif kind == "argument":
        calls[at] = (calls[at][0], calls[at][1] + "2")
    return tuple(calls)


CASES = [("none", 0)] + [
    (kind, at)
    for kind in ("insert", "remove", "swap", "argument")
    for at in range(len(BASE) - (1 if kind == "swap" else 0))
]


def _tasks(runs: Counter[str], crash: set[str], is_async: bool) -> dict[str, Any]:
    def make(name: str) -> Any:
        def body(arg: str, before: str) -> str:
            runs[name] += 1
            if name in crash:
                raise Crash(name)
            return f"{name}({arg}<-{before})"

        async def abody(arg: str, before: str) -> str:
            return body(arg, before)

        chosen = abody if is_async else body
        chosen.__name__ = name
        chosen.__annotations__ = {"arg": str, "before": str, "return": str}
        return task(chosen)

    return {name: make(name) for name in ("a", "b", "end")}


def _written(calls: Calls, tasks: dict[str, Any], is_async: bool, folder: Path) -> Any:
    """A release as straight-line code, in a module file of its own."""
    wait = ("await ", "") if is_async else ("", ".result()")
    lines = [f"{'async ' if is_async else ''}def flow(x: str) -> str:", "    r = x"]
    for name, arg in calls:
        lines.append(f"    r = {wait[0]}{name}({arg!r}, r){wait[1]}")
    lines.append(f"    return {wait[0]}end('done', r){wait[1]}")
    source = "def release(a, b, end):\n" + "".join(f"    {line}\n" for line in lines)
    source += "    return flow\n"
    path = folder / f"release_{abs(hash((calls, is_async)))}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.release(tasks["a"], tasks["b"], tasks["end"])


def _looped(calls: Calls, tasks: dict[str, Any], is_async: bool) -> Any:
    """A release that loops over its calls: ``plan`` cannot follow them."""
    a, b, end = tasks["a"], tasks["b"], tasks["end"]
    if is_async:

        async def aflow(x: str) -> str:
            r = x
            for name, arg in calls:
                r = await (a if name == "a" else b)(arg, r)
            return await end("done", r)

        return aflow

    def flow(x: str) -> str:
        r = x
        for name, arg in calls:
            r = (a if name == "a" else b)(arg, r).result()
        return end("done", r).result()

    return flow


def _release(
    calls: Calls, runs: Counter[str], crash: set[str], drive: Drive, written: Path | None
) -> Any:
    tasks = _tasks(runs, crash, drive.is_async)
    if written is not None:
        body = _written(calls, tasks, drive.is_async, written)
    else:
        body = _looped(calls, tasks, drive.is_async)
    body.__name__ = "flow"
    return entrypoint()(body)


@pytest.mark.parametrize("written", [True, False], ids=["written", "looped"])
@pytest.mark.parametrize(("kind", "at"), CASES, ids=[f"{k}-{a}" for k, a in CASES])
def test_a_moved_call_runs_with_every_call_after_it_as_a_fresh_run_would(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    kind: str,
    at: int,
    written: bool,
    runs: Counter[str],
) -> None:
    folder = tmp_path if written else None
    first = _release(BASE, Counter(), {"end"}, drive, folder)
    with pytest.raises(Crash):
        drive.run(ne.compile(first, checkpointer=saver), "x", config)
    moved = _moved(kind, at)
    fresh_runs: Counter[str] = Counter()
    fresh = ne.compile(_release(moved, fresh_runs, set(), drive, folder), checkpointer=saver)
    other: RunnableConfig = {
        "configurable": {"thread_id": f"{config['configurable']['thread_id']}-fresh"}
    }
    expected = drive.run(fresh, "x", other)
    resumed = ne.compile(_release(moved, runs, set(), drive, folder), checkpointer=saver)
    plan = drive.plan(resumed, config)
    assert drive.run(resumed, None, config) == expected
    assert all(runs[name] <= fresh_runs[name] for name in runs), (runs, fresh_runs)
    if kind == "none":
        assert runs == Counter(end=1)
        assert plan.kind is ne.PlanKind.CONTINUE
    elif written:
        # The code tells every call: the plan cuts at the first that moved.
        assert plan.kind is ne.PlanKind.REWIND and not plan.matched_when_made
        pairs = enumerate(zip(BASE, moved, strict=False))
        first_moved = next((i for i, (old, new) in pairs if old != new), len(moved))
        assert [s.step for s in plan.steps if s.kept] == list(range(first_moved))
    else:
        assert plan.kind is ne.PlanKind.CONTINUE and plan.matched_when_made
