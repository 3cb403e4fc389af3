"""Pytest plugin: LangGraph's suite sees the environment it was written for, without
``langchain``.

Loaded with ``-p without_langchain`` in both passes of ``make compat``. Our own tests
need ``langchain`` (the ``dev`` extra: ``create_agent``, deep agents), and with it
installed langchain-core adds langchain's version to every chat model's
``metadata["lc_versions"]``. That metadata reaches streamed chunks, and LangGraph's
tests compare those chunks with literals that name langchain-core alone, so 9 of them
would fail in both passes and compare nothing. The version probe is answered as if
``langchain`` were absent, in both passes alike, before any test module builds a model.
"""

from __future__ import annotations

from langchain_core.language_models import base

__all__: list[str] = []


def _absent() -> None:
    return None


base._get_langchain_version = _absent  # type: ignore[assignment]
