"""One test body, run through the sync drivers and through their async twins.

``Drive`` is what the ``drive`` fixture hands a test: the execution API (``run``,
``plan``, ``stream``, ``accept``) and the compiled graph's own calls (``invoke``,
``get_state``, ...), each called one way. A ``sync`` drive calls them; an ``async`` drive
awaits their ``a``-twins on an event loop of its own, in a thread of its own.

Rules:
- The test body stays synchronous: an ``async`` drive blocks on each awaited call, so
  ``pytest.raises``, counters and assertions read the same both ways.
- The loop is the test's loop: the ``async`` saver is opened on it (``opened``), and its
  sync methods (``saver.list``, ``saver.get_tuple``) still work from the test's thread,
  as LangGraph's async savers hand them to their loop.
- A function is looked up when called, not when the drive is made: a test's
  ``monkeypatch`` of ``neograph_ext.arun`` (the plan == run harness) is what runs.
- A streamed call is iterated lazily: a test that stops early leaves the rest of the
  stream unexecuted, either way, and the stream is closed when the iterator is.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager, contextmanager
from typing import Any, Literal, TypeVar

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext

__all__ = ["MODES", "SYNC_ONLY", "Drive", "Saver"]

T = TypeVar("T")

MODES = ("sync", "async")

Saver = BaseCheckpointSaver[Any]
"""A checkpoint saver of any kind, sync or async, as the ``saver`` fixtures hand it."""

SYNC_ONLY = pytest.mark.parametrize("drive", ["sync"], indirect=True)
"""For a test that runs one way only, on a sync saver (its subject is no driver, or one
twin's own functions): each use says why beside it."""


class Drive:
    """Calls the execution API one way: ``sync``, or its ``a``-twins on an event loop."""

    def __init__(self, mode: Literal["sync", "async"]) -> None:
        self.mode = mode
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        if mode == "async":
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="drive-loop", daemon=True
            )
            self._thread.start()

    @property
    def is_async(self) -> bool:
        """Whether calls go through the async twins."""
        return self._loop is not None

    def close(self) -> None:
        """Stop the loop (an ``async`` drive) once the test is done with it."""
        if self._loop is None or self._thread is None:
            return
        self.wait(self._loop.shutdown_asyncgens())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def wait(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` on the drive's loop and return its result (or raise)."""
        assert self._loop is not None, "a sync drive has no loop"
        return asyncio.run_coroutine_threadsafe(_awaited(awaitable), self._loop).result()

    @contextmanager
    def opened(
        self,
        sync: Callable[[], AbstractContextManager[T]],
        aio: Callable[[], AbstractAsyncContextManager[T]],
    ) -> Iterator[T]:
        """Enter the mode's context manager: ``sync()``, or ``aio()`` on the loop (a
        saver of each mode, say)."""
        if self._loop is None:
            with sync() as value:
                yield value
            return
        manager = aio()
        value = self.wait(manager.__aenter__())
        try:
            yield value
        except BaseException as exc:
            if not self.wait(manager.__aexit__(type(exc), exc, exc.__traceback__)):
                raise
        else:
            self.wait(manager.__aexit__(None, None, None))

    def made(self, factory: Callable[[], T]) -> T:
        """``factory()``, called on the drive's loop when it has one: an async saver binds
        to the loop it is made on."""
        if self._loop is None:
            return factory()
        return self.wait(_called(factory))

    # neograph-ext's execution API

    def run(self, graph: Any, input: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        """``neograph_ext.run`` or ``arun``."""
        if self._loop is None:
            return neograph_ext.run(graph, input, config, **kwargs)
        return self.wait(neograph_ext.arun(graph, input, config, **kwargs))

    def ran_before(
        self,
        builder: Any,
        saver: Any,
        input: Any,
        config: RunnableConfig,
        runs: Counter[str],
        *,
        crash: type[BaseException] | None = None,
    ) -> Any:
        """The release before the deploy: ``builder`` compiled on ``saver`` and run on
        ``config`` (to the crash it is built for, when ``crash`` names it), then ``runs``
        cleared, so that a test counts what the deployed code runs alone. Returns the
        graph it compiled."""
        graph = neograph_ext.compile(builder, checkpointer=saver)
        if crash is None:
            self.run(graph, input, config)
        else:
            with pytest.raises(crash):
                self.run(graph, input, config)
        runs.clear()
        return graph

    def plan(self, graph: Any, config: RunnableConfig, **kwargs: Any) -> neograph_ext.ResumePlan:
        """``neograph_ext.plan`` or ``aplan``."""
        if self._loop is None:
            return neograph_ext.plan(graph, config, **kwargs)
        return self.wait(neograph_ext.aplan(graph, config, **kwargs))

    def accept(self, graph: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        """``neograph_ext.accept`` or ``aaccept``."""
        if self._loop is None:
            return neograph_ext.accept(graph, config, **kwargs)
        return self.wait(neograph_ext.aaccept(graph, config, **kwargs))

    def stream(
        self, graph: Any, input: Any, config: RunnableConfig, **kwargs: Any
    ) -> Iterator[Any]:
        """``neograph_ext.stream`` or ``astream``, iterated lazily."""
        if self._loop is None:
            return neograph_ext.stream(graph, input, config, **kwargs)
        return self._iterated(neograph_ext.astream(graph, input, config, **kwargs))

    # LangGraph's own calls on a compiled graph

    def invoke(self, graph: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        """``graph.invoke`` or ``ainvoke``."""
        return self._called(graph, "invoke", input, config, **kwargs)

    def graph_stream(
        self, graph: Any, input: Any, config: Any = None, **kwargs: Any
    ) -> Iterator[Any]:
        """``graph.stream`` or ``astream``, iterated lazily."""
        if self._loop is None:
            return iter(graph.stream(input, config, **kwargs))
        return self._iterated(graph.astream(input, config, **kwargs))

    def get_state(self, graph: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        """``graph.get_state`` or ``aget_state``."""
        return self._called(graph, "get_state", config, **kwargs)

    def get_state_history(self, graph: Any, config: RunnableConfig, **kwargs: Any) -> list[Any]:
        """``graph.get_state_history`` or ``aget_state_history``, read whole."""
        if self._loop is None:
            return list(graph.get_state_history(config, **kwargs))
        return list(self._iterated(graph.aget_state_history(config, **kwargs)))

    def update_state(self, graph: Any, config: RunnableConfig, values: Any, **kwargs: Any) -> Any:
        """``graph.update_state`` or ``aupdate_state``."""
        return self._called(graph, "update_state", config, values, **kwargs)

    def _called(self, graph: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        if self._loop is None:
            return getattr(graph, name)(*args, **kwargs)
        return self.wait(getattr(graph, f"a{name}")(*args, **kwargs))

    def _iterated(self, chunks: AsyncIterator[Any]) -> Iterator[Any]:
        try:
            while True:
                try:
                    yield self.wait(chunks.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            close = getattr(chunks, "aclose", None)
            if close is not None:
                self.wait(close())


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


async def _called(factory: Callable[[], T]) -> T:
    return factory()
