"""Entrypoints whose deploys move task calls: the same task called with other arguments
at a position, a call removed before others of the same task, a call inserted first.

Each release is its own function, as a deploy's code is, so that ``plan`` reads each
body's calls from its own source. ``literal`` releases name their arguments in the code
(``plan`` knows each call); the others take them from a loop over the input (``plan``
knows them only when they are made). Sync for the sync drive, async for the async one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from langgraph.func import entrypoint, task
from langgraph.pregel import Pregel

from tests.graphs.pipelines import Crash

__all__ = ["SUMMARIES", "drafts", "summaries"]

Workflow = Pregel[Any, Any, Any, Any]

SUMMARIES = ["alpha", "beta"]
"""The input of the dynamic ``summaries`` releases: the topics, in order."""


def _counted(name: str, runs: Counter[str], crash: set[str], fn: Callable[..., str]) -> Any:
    def body(*args: str) -> str:
        runs[name] += 1
        if name in crash:
            raise Crash(name)
        return fn(*args)

    body.__name__ = name
    body.__annotations__ = {"return": str}
    return task(body)


def summaries(
    runs: Counter[str],
    crash: set[str],
    *,
    swapped: bool = False,
    cleaned: bool = False,
    literal: bool = True,
    is_async: bool = False,
) -> Workflow:
    """``clean()`` (when ``cleaned``), ``summ`` of alpha then beta (beta first when
    ``swapped``), then ``join`` of the two summaries in call order."""
    clean = _counted("clean", runs, crash, lambda: "clean")
    summ = _counted("summ", runs, crash, lambda topic: f"summary of {topic}")
    join = _counted("join", runs, crash, lambda a, b: f"first={a}, second={b}")
    key = (swapped, cleaned, literal, is_async)
    releases: dict[tuple[bool, bool, bool, bool], Callable[..., Any]] = {}

    def alpha_beta(topics: list[str]) -> str:
        a = summ("alpha").result()
        b = summ("beta").result()
        return join(a, b).result()

    def beta_alpha(topics: list[str]) -> str:
        a = summ("beta").result()
        b = summ("alpha").result()
        return join(a, b).result()

    def clean_alpha_beta(topics: list[str]) -> str:
        clean().result()
        a = summ("alpha").result()
        b = summ("beta").result()
        return join(a, b).result()

    def each(topics: list[str]) -> str:
        a, b = [summ(topic).result() for topic in topics]
        return join(a, b).result()

    def each_reversed(topics: list[str]) -> str:
        a, b = [summ(topic).result() for topic in reversed(topics)]
        return join(a, b).result()

    def clean_each(topics: list[str]) -> str:
        clean().result()
        a, b = [summ(topic).result() for topic in topics]
        return join(a, b).result()

    async def aalpha_beta(topics: list[str]) -> str:
        a = await summ("alpha")
        b = await summ("beta")
        return await join(a, b)

    async def abeta_alpha(topics: list[str]) -> str:
        a = await summ("beta")
        b = await summ("alpha")
        return await join(a, b)

    async def aclean_alpha_beta(topics: list[str]) -> str:
        await clean()
        a = await summ("alpha")
        b = await summ("beta")
        return await join(a, b)

    async def aeach(topics: list[str]) -> str:
        a, b = [await summ(topic) for topic in topics]
        return await join(a, b)

    async def aeach_reversed(topics: list[str]) -> str:
        a, b = [await summ(topic) for topic in reversed(topics)]
        return await join(a, b)

    async def aclean_each(topics: list[str]) -> str:
        await clean()
        a, b = [await summ(topic) for topic in topics]
        return await join(a, b)

    for fn, afn, swap, clean_first, named in (
        (alpha_beta, aalpha_beta, False, False, True),
        (beta_alpha, abeta_alpha, True, False, True),
        (clean_alpha_beta, aclean_alpha_beta, False, True, True),
        (each, aeach, False, False, False),
        (each_reversed, aeach_reversed, True, False, False),
        (clean_each, aclean_each, False, True, False),
    ):
        releases[(swap, clean_first, named, False)] = fn
        releases[(swap, clean_first, named, True)] = afn
    chosen = releases[key]
    chosen.__name__ = "summaries"
    return entrypoint()(chosen)


def drafts(runs: Counter[str], crash: set[str], *, outlined: bool, is_async: bool) -> Workflow:
    """``research(topic)``, ``write`` its notes, ``publish`` the draft; ``outlined``:
    ``outline(topic)`` first, a task inserted before the others."""
    outline = _counted("outline", runs, crash, lambda topic: f"outline of {topic}")
    research = _counted("research", runs, crash, lambda topic: f"notes on {topic}")
    write = _counted("write", runs, crash, lambda notes: notes.upper())
    publish = _counted("publish", runs, crash, lambda draft: f"published: {draft}")

    def drafted(topic: str) -> str:
        notes = research(topic).result()
        draft = write(notes).result()
        return publish(draft).result()

    def outlined_first(topic: str) -> str:
        outline(topic).result()
        notes = research(topic).result()
        draft = write(notes).result()
        return publish(draft).result()

    async def adrafted(topic: str) -> str:
        notes = await research(topic)
        draft = await write(notes)
        return await publish(draft)

    async def aoutlined_first(topic: str) -> str:
        await outline(topic)
        notes = await research(topic)
        draft = await write(notes)
        return await publish(draft)

    chosen: Callable[..., Any] = {
        (False, False): drafted,
        (True, False): outlined_first,
        (False, True): adrafted,
        (True, True): aoutlined_first,
    }[(outlined, is_async)]
    chosen.__name__ = "drafts"
    return entrypoint()(chosen)
