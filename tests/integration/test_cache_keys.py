"""A cached node's key follows the types its result depends on, and no others: its own
output types and the types of the values its input holds. A deploy that changes a type
downstream keeps a cached LLM node served; one that changes its output, or a value it
reads, makes it run. Counters prove what ran."""

from __future__ import annotations

from collections import Counter
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.cache.memory import InMemoryCache
from langgraph.graph import StateGraph
from langgraph.types import CachePolicy
from pydantic import BaseModel

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.graphs.pipelines import deployed, model, wire

_DOC = {
    "old": model("Doc", title=(str, ...)),
    "new": model("Doc", title=(str, ...), lang=(str, "en")),
}
_ANSWER = {
    "old": model("Answer", text=(str, ...)),
    "new": model("Answer", text=(str, ...), score=(float, 0.0)),
}
_REPORT = {
    "old": model("Report", body=(str, ...)),
    "new": model("Report", body=(str, ...), pages=(int, 1)),
}

_POLICIES = [CachePolicy(), CachePolicy(key_func=lambda state: state["doc"].title)]
"""LangGraph's default key (the whole input) and a user's key (the document's title)."""


def _chat(
    runs: Counter[str],
    policy: CachePolicy[Any],
    doc: type[BaseModel],
    answer: type[BaseModel],
    report: type[BaseModel],
) -> StateGraph[Any, Any, Any, Any]:
    """``ask`` (cached, the LLM call: reads the document, writes the answer), then
    ``write`` (writes the report from the answer)."""
    deployed(doc, answer, report)
    fields = {"doc": doc, "answer": answer, "report": report}
    state = TypedDict("Chat", fields, total=False)  # type: ignore[misc]

    def ask(state: Any) -> Any:
        runs["ask"] += 1
        return {"answer": answer(text=state["doc"].title)}

    def write(state: Any) -> Any:
        runs["write"] += 1
        return {"report": report(body=state["answer"].text)}

    ask.__annotations__["return"] = TypedDict("Asked", {"answer": answer})  # type: ignore[operator]
    write.__annotations__["return"] = TypedDict("Written", {"report": report})  # type: ignore[operator]
    builder = StateGraph(state)
    builder.add_node("ask", ask, cache_policy=policy)
    builder.add_node("write", write)
    return wire(builder, "ask", "write")


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
    graph = _chat(runs, policy, _DOC["old"], _ANSWER["old"], _REPORT["old"])
    old = ne.compile(graph, checkpointer=saver, cache=cache)
    for thread in ("1", "2"):
        drive.run(old, {"doc": _DOC["old"](title="q")}, _thread(config, thread))
    assert runs == Counter({"ask": 1, "write": 2})  # the cache serves ask under the same code
    runs.clear()
    kinds = {"doc": "old", "answer": "old", "report": "old", changed: "new"}
    new = ne.compile(
        _chat(runs, policy, _DOC[kinds["doc"]], _ANSWER[kinds["answer"]], _REPORT[kinds["report"]]),
        checkpointer=saver,
        cache=cache,
    )
    drive.run(new, {"doc": _DOC[kinds["doc"]](title="q")}, _thread(config, "3"))
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
