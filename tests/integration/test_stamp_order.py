"""The order in which a database first stored each stamp: what tells newer code from
older without any worker's clock (``_stamp_order``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

import neograph_ext
from neograph_ext import GraphError
from neograph_ext._lineage import list_threads
from neograph_ext.storage._stamp_order import ORDER_THREAD, order, register
from tests.drive import Drive
from tests.graphs.deploys import Release, SummaryV1, SummaryV2
from tests.graphs.pipelines import linear
from tests.integration.savers import reopened


def _entries(saver: BaseCheckpointSaver[Any]) -> list[str]:
    listed = saver.list({"configurable": {"thread_id": ORDER_THREAD, "checkpoint_ns": ""}})
    return [tup.checkpoint["channel_values"]["stamp"] for tup in listed]


def test_each_stamp_takes_its_place_once_when_its_code_first_writes(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, tmp_path: Path
) -> None:
    old, new = Release(SummaryV1, saver), Release(SummaryV2, saver)
    old_id, new_id = old.graph.neograph_ext_stamp.id, new.graph.neograph_ext_stamp.id
    drive.plan(new.serving(), config)  # planning stores nothing
    drive.run(old.serving(), {"doc": "order"}, config)
    drive.run(new.serving(), None, config)
    # The same code again, in another process (a new compile, a new saver instance).
    again = Release(SummaryV1, saver)
    drive.run(again.serving(), {"doc": "order"}, {"configurable": {"thread_id": "other"}})
    with reopened(saver, tmp_path) as fresh:
        stored = order(fresh, old_id)
        assert stored.index(old_id) < stored.index(new_id)
        assert _entries(fresh).count(old_id) == _entries(fresh).count(new_id) == 1


def test_the_order_is_a_reserved_thread(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    old = Release(SummaryV1, saver)
    drive.run(old.serving(), {"doc": "reserved"}, config)
    assert neograph_ext.is_reserved_thread(ORDER_THREAD)
    with pytest.raises(GraphError, match="reserved"):
        drive.run(old.serving(), {"doc": "x"}, {"configurable": {"thread_id": ORDER_THREAD}})
    if not drive.is_async:
        assert ORDER_THREAD not in set(list_threads(saver))


def test_a_stamp_another_process_added_since_the_order_was_read_is_seen(tmp_path: Path) -> None:
    """Two processes on one SQLite file: each saver instance keeps the order it read."""
    path = str(tmp_path / "fleet.sqlite")
    with SqliteSaver.from_conn_string(path) as mine, SqliteSaver.from_conn_string(path) as theirs:
        old = Release(SummaryV1, mine)
        started = {"configurable": {"thread_id": "started-by-new"}}
        neograph_ext.run(old.serving(), {"doc": "mine"}, {"configurable": {"thread_id": "o"}})
        assert order(mine, old.graph.neograph_ext_stamp.id) == (old.graph.neograph_ext_stamp.id,)
        new = Release(SummaryV2, theirs)  # a worker of the next release, elsewhere
        neograph_ext.run(new.serving(), {"doc": "theirs"}, started)
        decided = neograph_ext.plan(old.serving(), started)
        assert decided.kind is neograph_ext.PlanKind.SUPERSEDED
        assert decided.owner == new.graph.neograph_ext_stamp.id


class _Unlisting(InMemorySaver):
    """A saver that cannot list (``BaseCheckpointSaver.list`` left unimplemented); its
    async listing follows, as ``InMemorySaver.alist`` reads ``list``."""

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_a_plain_call_on_a_saver_that_cannot_list_is_langgraphs_own(
    drive: Drive, config: RunnableConfig
) -> None:
    """The order needs a listing: such a saver keeps none, and a plain call that would
    work under LangGraph's compile works the same (the description is stored)."""
    saver = _Unlisting()
    release = Release(SummaryV1, saver, ask=False)
    result = drive.invoke(release.serving(), {"doc": "unlisted"}, config)
    assert result["verdict"] == "published: auto"
    assert release.runs["publish"] == 1


def test_declared_releases_order_their_stamps_among_the_places_they_took() -> None:
    """Natural order (``1.10`` after ``1.9``); stamps without a release keep their places;
    the latest release declared for a stamp replaces the one before; a place that does not
    read as one (``_records.OrderEntry``) is left out, a release that is no release leaves
    its stamp undeclared, at its place."""
    saver = InMemorySaver()
    first, late, early, last = (
        neograph_ext.compile(linear(Counter(), names=names)).neograph_ext_stamp
        for names in (("a",), ("a", "b"), ("a", "b", "c"), ("a", "b", "c", "d"))
    )
    register(saver, first)
    register(saver, late, "1.10")
    register(saver, early, "1.9")
    register(saver, last)
    assert order(saver, "") == (first.id, early.id, late.id, last.id)
    register(saver, late, "1.8")
    register(saver, late)  # declaring none keeps the release declared before
    assert order(saver, "") == (first.id, late.id, early.id, last.id)
    hostile = empty_checkpoint()
    hostile["id"] = "00000009-0000-6000-8000-000000000000"
    hostile["channel_values"] = {"stamp": "\x00" * 64, "release": ["1"]}
    thread = {"configurable": {"thread_id": ORDER_THREAD, "checkpoint_ns": ""}}
    saver.put(thread, hostile, {"source": "update", "step": 9, "parents": {}}, {})
    register(saver, early, "2\x00")  # a release that is no release is not kept
    assert order(saver, "") == (first.id, late.id, early.id, last.id)
