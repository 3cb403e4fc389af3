"""A cached ``@task`` result answers only the call that made it: each call of a stamped
entrypoint records its digest (``_call_digest``) beside its result, and a resumed call
whose digest differs from the cached result's is refused before it is served.

Rules:
- LangGraph names a call by its task and position, not its arguments: its runner hands
  a call whatever the call of that task and index wrote (``pregel/_runner.py``,
  ``_call`` / ``_acall``, each bound as ``CONFIG_KEY_CALL`` with a ``schedule_task``
  keyword; checked on langgraph 1.2.24, pinned by ``tests/unit/test_call_match.py``).
  The entrypoint's body (``checked_body``) runs with that ``schedule_task`` wrapped:
  what it schedules records its digest as it starts (``CALL_CHANNEL``, in the call's
  own writes, so saved with its result), and what it found cached is compared.
- Compared only while ``run`` (or a twin) invokes (``checking``): a plain call stays
  LangGraph's own. A cached result with no digest (older code wrote it) is served as
  before; one whose digest differs, or that has none it could compute, raises
  ``CallsUnmatched`` before it is served: ``run`` then plans the turn again, cut at
  that call, so it and every later call run again (``_calls.decide_calls``).
- Where LangGraph's shape is not the one known, nothing is wrapped: calls are served
  as LangGraph serves them.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Self, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.channels.base import BaseChannel
from langgraph.errors import EmptyChannelError
from langgraph.pregel import Pregel
from langgraph.pregel._call import get_runnable_for_entrypoint

from neograph_ext.decision._call_digest import call_digest
from neograph_ext.decision._errors import NeographExtError
from neograph_ext.decision._langgraph_calls import CALL_CHANNEL, RETURN

__all__ = [
    "CallsUnmatched",
    "DigestChannel",
    "checked_body",
    "checking",
    "with_checked_calls",
]

_CONF = "configurable"
_CALL = "__pregel_call"
_SEND = "__pregel_send"
_WRAPPED = "_neograph_ext_body"
_RECORDED = "_neograph_ext_recorded"

_CHECKING: ContextVar[bool] = ContextVar("neograph_ext_checking_calls", default=False)
"""Set while ``run`` (or a twin) invokes; LangGraph's tasks run in copies of the context
they were scheduled from, so an entrypoint's body reads it as it starts. Never carried in
the run's config, which users see (state snapshots, debug events)."""
_RECORDING: weakref.WeakKeyDictionary[Callable[..., Any], Callable[..., Any]] = (
    weakref.WeakKeyDictionary()
)
"""Per task function, its recording twin: one per function, as LangGraph caches the
runnable it makes of each (``get_runnable_for_task``)."""


class CallsUnmatched(NeographExtError):
    """A resumed entrypoint's call was about to be served a result cached for another
    call (another task, or other arguments, at its position). ``run`` catches it and
    plans the turn again from that call; it escapes only when planning again found it
    still unmatched.

    Attributes:
        index: The call's position among the entrypoint's calls.
    """

    def __init__(self, index: int, task: str) -> None:
        super().__init__(
            f"call {index} of the entrypoint, to task `{task}`, does not match the call "
            "whose result is cached at its position"
        )
        self.index = index


class DigestChannel(BaseChannel[None, Any, None]):
    """The channel call digests are written to: it takes every write and keeps none, so
    LangGraph stores them with the call's result and nowhere else."""

    @property
    def ValueType(self) -> Any:
        return type(None)

    @property
    def UpdateType(self) -> Any:
        return str

    def from_checkpoint(self, checkpoint: Any) -> Self:
        return self.__class__(self.typ, self.key)

    def update(self, values: Any) -> bool:
        return False

    def get(self) -> None:
        raise EmptyChannelError()


def with_checked_calls(graph: Pregel[Any, Any, Any, Any], func: Callable[..., Any]) -> None:
    """Make the copy ``graph`` of an entrypoint whose body is ``func`` run that body
    through ``checked_body``, and take the digests its calls write."""
    bound = get_runnable_for_entrypoint(checked_body(func))
    graph.nodes = {name: node.copy(update={"bound": bound}) for name, node in graph.nodes.items()}
    graph.channels = {**graph.channels, CALL_CHANNEL: DigestChannel(str)}


@contextmanager
def checking() -> Iterator[None]:
    """Within the block, invocations that start compare cached results with the calls
    made (``run`` and its twins); read once, as an invocation starts."""
    token = _CHECKING.set(True)
    try:
        yield
    finally:
        _CHECKING.reset(token)


def checked_body(func: Callable[..., Any]) -> Callable[..., Any]:
    """The entrypoint body ``func``, run with its task calls recorded and checked."""
    func = getattr(func, _WRAPPED, func)
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def abody(*args: Any, **kwargs: Any) -> Any:
            with _calls_wrapped():
                return await func(*args, **kwargs)

        setattr(abody, _WRAPPED, func)
        return abody

    @functools.wraps(func)
    def body(*args: Any, **kwargs: Any) -> Any:
        with _calls_wrapped():
            return func(*args, **kwargs)

    setattr(body, _WRAPPED, func)
    return body


@contextmanager
def _calls_wrapped() -> Iterator[None]:
    config: dict[str, Any] = dict(var_child_runnable_config.get() or {})
    conf: dict[str, Any] = dict(config.get(_CONF) or {})
    call = conf.get(_CALL)
    keywords = getattr(call, "keywords", None)
    if not isinstance(call, functools.partial) or not keywords or "schedule_task" not in keywords:
        yield
        return
    scheduling = _scheduling(keywords["schedule_task"], _CHECKING.get())
    wrapped = functools.partial(call.func, *call.args, **{**keywords, "schedule_task": scheduling})
    patched = cast("RunnableConfig", {**config, _CONF: {**conf, _CALL: wrapped}})
    token = var_child_runnable_config.set(patched)
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


def _scheduling(schedule: Callable[..., Any], checked: bool) -> Callable[..., Any]:
    """LangGraph's ``schedule_task``, the call it schedules recording its digest, and
    (``checked``) the call it found cached compared, sync or async as it is."""

    def scheduled(task: Any, index: int, call: Any) -> Any:
        digest = None
        if call is not None:
            digest = _digest_of(call)
            call.func = _recording(call.func)
        found = schedule(task, index, call)
        if not checked:
            return found
        if inspect.isawaitable(found):
            return _awaited(found, index, call, digest)
        return _compared(found, index, call, digest)

    return scheduled


async def _awaited(found: Awaitable[Any], index: int, call: Any, digest: str | None) -> Any:
    return _compared(await found, index, call, digest)


def _compared(found: Any, index: int, call: Any, digest: str | None) -> Any:
    """``found``, unless its cached result answers another call: then it raises."""
    if found is None or call is None:
        return found
    writes = list(getattr(found, "writes", ()) or ())
    recorded = [value for channel, value in writes if channel == CALL_CHANNEL]
    served = any(channel == RETURN for channel, _ in writes)
    if served and recorded and (digest is None or recorded[-1] != digest):
        raise CallsUnmatched(index, _name(call.func))
    return found


def _name(func: Callable[..., Any]) -> str:
    """The name LangGraph gives a task of ``func`` (``get_runnable_for_task``): a call's
    identity in its digest, and kept by its recording twin, since ``functools.wraps``
    copies no name from a partial or a callable object."""
    if hasattr(func, "__name__"):
        return str(func.__name__)
    if hasattr(func, "func"):
        return str(func.func.__name__)
    return type(func).__name__


def _digest_of(call: Any) -> str | None:
    args, kwargs = call.input
    return call_digest(_name(call.func), tuple(args), kwargs)


def _recording(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func``'s twin that writes its call's digest (of the arguments it was given,
    before it ran) into the call's own writes (``CONFIG_KEY_SEND``) once it returned:
    saved with its result; a call that raised records nothing, as LangGraph then takes
    any write it holds for a result."""
    if getattr(func, _RECORDED, None) is not None:
        return func
    try:
        found = _RECORDING.get(func)
    except TypeError:  # not weakly referable: left as it is, its results unrecorded
        return func
    if found is not None:
        return found

    def record(digest: str | None) -> None:
        config: dict[str, Any] = dict(var_child_runnable_config.get() or {})
        send = (config.get(_CONF) or {}).get(_SEND)
        if callable(send) and digest is not None:
            send([(CALL_CHANNEL, digest)])

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def arecorded(*args: Any, **kwargs: Any) -> Any:
            digest = call_digest(_name(func), args, kwargs)
            result = await func(*args, **kwargs)
            record(digest)
            return result

        made: Callable[..., Any] = arecorded
    else:

        @functools.wraps(func)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            digest = call_digest(_name(func), args, kwargs)
            result = func(*args, **kwargs)
            record(digest)
            return result

        made = recorded
    made.__name__ = _name(func)
    setattr(made, _RECORDED, func)
    _RECORDING[func] = made
    return made
