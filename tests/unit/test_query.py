"""The storage flows yield queries and take rows back: driven here by a fake backend
that answers from a table in memory, with no database and no saver's I/O."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from neograph_ext.decision._query import Call, Flow, Listing, Sql
from neograph_ext.storage._ledger_store import ledger_of
from neograph_ext.storage._prune_sql import Cut, Sizes
from neograph_ext.storage._prune_store import _sizes  # the flow itself, with no runner
from neograph_ext.storage._storage import arun, run


def answered(flow: Flow[Any], answer: Callable[[Any], Any]) -> tuple[Any, list[Any]]:
    """What ``flow`` returns when ``answer`` answers each query, and the queries."""
    asked: list[Any] = []
    try:
        query = next(flow)
        while True:
            asked.append(query)
            query = flow.send(answer(query))
    except StopIteration as stop:
        return stop.value, asked


def test_a_prune_flow_sizes_rows_from_the_rows_it_is_sent() -> None:
    found = Cut("sqlite", "t1", ("c1", "c2"))
    sizes, asked = answered(_sizes(None, found), lambda query: [(2, 100)])  # type: ignore[arg-type]
    assert sizes == Sizes(checkpoints=2, writes=2, bytes=200)
    assert all(isinstance(query, Sql) and "?" in query.text for query in asked)
    assert [query.params for query in asked] == [("t1", "c1", "c2")] * 2


def test_a_ledger_read_is_one_listing_of_the_ledgers_namespace() -> None:
    ledger, asked = answered(ledger_of(None, "t1"), lambda query: [])  # type: ignore[arg-type]
    assert ledger is None
    (listing,) = asked
    assert isinstance(listing, Listing) and listing.config["configurable"]["thread_id"] == "t1"


def flaky() -> Flow[str]:
    """Catches the first call's error, as the advisory lock's flow catches a dropped
    connection, and asks again."""
    try:
        yield Call("get_tuple", ({"configurable": {"thread_id": "missing"}},), on=Broken())
    except RuntimeError as exc:
        again = yield Call("get_tuple", ({"configurable": {"thread_id": "missing"}},))
        return f"{exc}; then {again}"
    return "never"


class Broken:
    def get_tuple(self, config: Any) -> None:
        raise RuntimeError("dropped")

    async def aget_tuple(self, config: Any) -> None:
        raise RuntimeError("dropped")


def test_an_error_a_query_raises_is_thrown_into_the_flow_sync_and_async() -> None:
    saver = InMemorySaver()
    assert run(saver, flaky()) == "dropped; then None"
    assert asyncio.run(arun(saver, flaky())) == "dropped; then None"


def test_an_error_the_flow_does_not_catch_reaches_the_caller() -> None:
    def failing() -> Flow[None]:
        yield Call("get_tuple", (None,), on=Broken())

    with pytest.raises(RuntimeError, match="dropped"):
        run(None, failing())
