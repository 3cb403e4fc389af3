"""A cached node's key follows the types its result depends on, and no others: its own
output types and the types of the values its input holds. A deploy that changes a type
downstream keeps a cached LLM node served; one that changes its output, or a value it
reads, makes it run. Counters prove what ran."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.cache.memory import InMemoryCache
from langgraph.types import CachePolicy

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.graphs.turns import DOC, cached_chat
from tests.integration.release_worker import released

_POLICIES = [CachePolicy(), CachePolicy(key_func=lambda state: state["doc"].title)]
"""LangGraph's default key (the whole input) and a user's key (the document's title)."""


def _served_after(
    drive: Drive,
    saver: Saver,
    config: RunnableConfig,
    policy: CachePolicy[Any],
    changed: str,
    runs: Counter[str],
) -> Counter[str]:
    """What runs on a new thread after a deploy that changes the type ``changed``, the
    old code having cached ``ask``'s result for the same document."""
    cache = InMemoryCache()
    old = ne.compile(cached_chat(runs, policy), checkpointer=saver, cache=cache)
    for thread in ("1", "2"):
        drive.run(old, {"doc": DOC["old"](title="q")}, _thread(config, thread))
    assert runs == Counter({"ask": 1, "write": 2})  # the cache serves ask under the same code
    runs.clear()
    new = ne.compile(cached_chat(runs, policy, changed), checkpointer=saver, cache=cache)
    doc = DOC["new" if changed == "doc" else "old"]
    drive.run(new, {"doc": doc(title="q")}, _thread(config, "3"))
    return runs


def _thread(config: RunnableConfig, name: str) -> RunnableConfig:
    """A thread of this test's own (a PostgreSQL database is shared by the tests)."""
    return {"configurable": {"thread_id": f"{config['configurable']['thread_id']}-{name}"}}


@pytest.mark.parametrize("policy", _POLICIES, ids=["default_key", "custom_key"])
def test_a_cached_node_is_served_after_a_change_of_a_type_it_neither_writes_nor_reads(
    drive: Drive, saver: Saver, config: RunnableConfig, policy: CachePolicy[Any], runs: Counter[str]
) -> None:
    assert _served_after(drive, saver, config, policy, "report", runs) == Counter({"write": 1})


@pytest.mark.parametrize("policy", _POLICIES, ids=["default_key", "custom_key"])
@pytest.mark.parametrize("changed", ["answer", "doc"], ids=["its_output", "its_input"])
def test_a_cached_node_runs_after_a_change_of_a_type_it_writes_or_reads(
    drive: Drive,
    saver: Saver,
    config: RunnableConfig,
    policy: CachePolicy[Any],
    changed: str,
    runs: Counter[str],
) -> None:
    ran = _served_after(drive, saver, config, policy, changed, runs)
    assert ran == Counter({"ask": 1, "write": 1})


@pytest.mark.slow
def test_release_two_serves_release_ones_cached_llm_call_after_a_downstream_change(
    tmp_path: Path,
) -> None:
    """Two processes on one SQLite file and one SqliteCache, release 1 then release 2."""
    db, cache = str(tmp_path / "threads.sqlite"), str(tmp_path / "cache.sqlite")
    assert released("cache", db, "t1", "1", cache) == {"ask": 1, "write": 1}
    assert released("cache", db, "t2", "2", cache) == {"write": 1}  # ask served
