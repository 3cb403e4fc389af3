"""Pytest plugin: every ``StateGraph.compile`` goes through ``neograph_ext.compile``, and
so does every ``@entrypoint`` (the Functional API): the decorator's graph is compiled by
``neograph_ext.compile`` as it is made.

Loaded with ``-p route_compile`` for the wrapped pass of ``make compat``, so that
LangGraph's own tests exercise graphs compiled by neograph-ext. The patch is
installed at import, before any test module imports LangGraph's graphs.

``neograph_ext.compile`` itself calls ``builder.compile(...)``, which is the patched
method again: a context variable marks that inner call so it reaches LangGraph's
original ``compile`` instead of recursing.

With ``NEOGRAPH_EXT_COMPAT_AUTO_RESUME=true`` (the auto-resume pass) every routed
compile also attaches ``AutoResume()``, so every plain root call plans first, as a
LangGraph server deployment of the docs does.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Generator
from contextvars import ContextVar
from typing import Any, ClassVar

import pytest
from langgraph.func import entrypoint
from langgraph.graph.state import StateGraph

import neograph_ext

original_compile = StateGraph.compile
# Imported twice (as a plugin and by the harness's own test): patch the original once.
original_entrypoint = getattr(entrypoint.__call__, "neograph_ext_original", entrypoint.__call__)
_inside: ContextVar[bool] = ContextVar("neograph_ext_compat_inside", default=False)
ROUTED_PROPERTY = "neograph_ext_routed_compiles"
ENTRYPOINT_PROPERTY = "neograph_ext_routed_entrypoints"
AUTO_RESUME_ENV = "NEOGRAPH_EXT_COMPAT_AUTO_RESUME"
_AUTO_RESUME = (
    {"attach": [neograph_ext.AutoResume()]} if os.environ.get(AUTO_RESUME_ENV) == "true" else {}
)
READBACK_PROPERTY = "neograph_ext_readback_warnings"
WRITTEN_REASON = "written type differs from the declared one"


class _Routed:
    """Compiles routed since the last test report: proof that the patch took."""

    calls = 0
    entrypoints = 0
    """Of ``calls``, the ``@entrypoint`` graphs."""


class _ReadBack(logging.Handler):
    """The reasons of compile()'s read-back warnings, and of the warnings about a node
    writing another type than it declares, since the last test report, so the
    comparison can say how many of LangGraph's tests trigger each, and why."""

    reasons: ClassVar[list[str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "but wrote a" in text:  # a node writing another type than it declares
            self.reasons.append(WRITTEN_REASON)
            return
        if "will not read back" not in text:
            return
        for reason in ("local class", "`__main__`", "allowlist", "does not import"):
            if reason in text:
                self.reasons.append(reason.strip("`"))


logging.getLogger("neograph_ext").addHandler(_ReadBack(logging.WARNING))


def _routed_compile(
    self: StateGraph[Any, Any, Any, Any], checkpointer: Any = None, **kwargs: Any
) -> Any:
    if _inside.get():
        return original_compile(self, checkpointer, **kwargs)
    _Routed.calls += 1
    token = _inside.set(True)
    try:
        return neograph_ext.compile(self, checkpointer=checkpointer, **_AUTO_RESUME, **kwargs)
    finally:
        _inside.reset(token)


def _routed_entrypoint(self: entrypoint[Any], func: Any) -> Any:
    workflow = original_entrypoint(self, func)
    _Routed.calls += 1
    _Routed.entrypoints += 1
    return neograph_ext.compile(workflow, **_AUTO_RESUME)


_routed_compile.__doc__ = original_compile.__doc__
StateGraph.compile = _routed_compile  # type: ignore[method-assign]
_routed_entrypoint.neograph_ext_original = original_entrypoint  # type: ignore[attr-defined]
entrypoint.__call__ = _routed_entrypoint  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    # user_properties travel with the report to the xdist controller, where the
    # recorder adds them up.
    report = yield
    report.user_properties.append((ROUTED_PROPERTY, _Routed.calls))
    report.user_properties.append((ENTRYPOINT_PROPERTY, _Routed.entrypoints))
    report.user_properties.append((READBACK_PROPERTY, list(_ReadBack.reasons)))
    _Routed.calls = 0
    _Routed.entrypoints = 0
    _ReadBack.reasons.clear()
    return report
