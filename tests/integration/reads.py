"""Spies on a saver's reads, of the drive's mode: the sync method for a ``sync`` drive,
its async twin for an ``async`` one (what each driver calls)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from neograph_ext.storage._storage import areader_for, reader_for
from tests.drive import Drive

__all__ = ["fetching", "lightly", "listing"]


def fetching(
    drive: Drive, saver: BaseCheckpointSaver[Any], monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """The threads the drive's ``get_tuple`` (or ``aget_tuple``) is asked for from now on
    (the memory saver's ``aget_tuple`` calls its own ``get_tuple``, left uncounted so
    each fetch counts once)."""
    fetched: list[str] = []
    if drive.is_async:
        areal = saver.aget_tuple

        async def acounting(cfg: RunnableConfig) -> Any:
            fetched.append(cfg["configurable"]["thread_id"])
            return await areal(cfg)

        monkeypatch.setattr(saver, "aget_tuple", acounting)
        return fetched
    real = saver.get_tuple

    def counting(cfg: RunnableConfig) -> Any:
        fetched.append(cfg["configurable"]["thread_id"])
        return real(cfg)

    monkeypatch.setattr(saver, "get_tuple", counting)
    return fetched


def listing(
    drive: Drive, saver: BaseCheckpointSaver[Any], monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """The threads the drive's ``list`` (or ``alist``) is asked for from now on."""
    listed: list[str] = []
    if drive.is_async:
        areal = saver.alist

        async def acounting(cfg: RunnableConfig | None, **kwargs: Any) -> AsyncIterator[Any]:
            listed.append((cfg or {}).get("configurable", {}).get("thread_id"))
            async for item in areal(cfg, **kwargs):
                yield item

        monkeypatch.setattr(saver, "alist", acounting)
        return listed
    real = saver.list

    def counting(cfg: RunnableConfig | None, **kwargs: Any) -> Any:
        listed.append((cfg or {}).get("configurable", {}).get("thread_id"))
        return real(cfg, **kwargs)

    monkeypatch.setattr(saver, "list", counting)
    return listed


def lightly(
    drive: Drive, saver: BaseCheckpointSaver[Any], monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """The threads whose lineage is read from now on through the reader of the saver's
    tables, for the drive's mode (none for a saver no reader knows)."""
    read: list[str] = []
    reader = areader_for(saver) if drive.is_async else reader_for(saver)
    if reader is None:
        return read
    kind = type(reader)
    real = kind.lineage

    def counting(self: Any, thread_id: str) -> Any:
        read.append(thread_id)
        return real(self, thread_id)

    monkeypatch.setattr(kind, "lineage", counting)
    return read
