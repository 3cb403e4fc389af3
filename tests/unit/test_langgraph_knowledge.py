"""What ``_langgraph`` knows about LangGraph's insides, checked against the installed
LangGraph: each test fails loudly when an upgrade changes it."""

from __future__ import annotations

import inspect
import logging
import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from langgraph.cache.memory import InMemoryCache
from langgraph.channels.base import BaseChannel
from langgraph.channels.named_barrier_value import NamedBarrierValue
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent
from langgraph.store.memory import InMemoryStore
from langgraph.types import CachePolicy, Command, Send, interrupt
from pydantic import BaseModel

from neograph_ext.decision._cache_key import CacheSalt
from neograph_ext.decision._langgraph import (
    MSGPACK_ALLOWLIST,
    SAFE_MSGPACK_TYPES,
    STORED_IS_AVAILABLE,
    TASK_ID_KEY,
    compile_options,
    custom_chunk,
    expect_classes,
    fold_cache_keys,
    head_tasks,
    strict_msgpack,
    task_writers,
    watch_updates,
    writes_path,
)
from neograph_ext.decision._langgraph_agents import prebuilt_output, tool_schemas
from neograph_ext.decision._owed import pulled, waiting
from tests.graphs.apps import FakeChat
from tests.graphs.pipelines import linear, wire


class Fan(TypedDict, total=False):
    items: list[int]
    out: Annotated[list[int], operator.add]


def _transformer(scope: tuple[str, ...]) -> Any:
    return None


def test_every_compile_keyword_is_kept_by_the_compiled_graph() -> None:
    given: dict[str, Any] = {
        "checkpointer": InMemorySaver(),
        "cache": InMemoryCache(),
        "store": InMemoryStore(),
        "interrupt_before": ["b"],
        "interrupt_after": ["c"],
        "debug": True,
        "name": "named",
        "transformers": (_transformer,),
    }
    keywords = list(inspect.signature(StateGraph.compile).parameters)[1:]
    # A new keyword must be added to ``given`` (and, if needed, COMPILE_OPTIONS);
    # ``transformers`` came with langgraph 1.2, the oldest version allowed lacks it.
    assert set(keywords) <= set(given) and set(given) - set(keywords) <= {"transformers"}
    given = {key: value for key, value in given.items() if key in keywords}
    found = compile_options(linear(Counter()).compile(**given))
    assert found == given


def _fan_out() -> StateGraph[Any, Any, Any, Any]:
    def prepare(state: Fan) -> dict[str, Any]:
        return {"items": [1, 2]}

    def work(arg: dict[str, int]) -> dict[str, Any]:
        return {"out": [arg["item"]]}

    def both(state: Fan) -> dict[str, Any]:
        return {"out": [0]}

    builder = StateGraph(Fan)
    builder.add_node("prepare", prepare)
    builder.add_node("work", work)
    builder.add_node("both", both)
    builder.add_edge(START, "prepare")
    builder.add_conditional_edges(
        "prepare", lambda s: [Send("work", {"item": i}) for i in s["items"]], ["work"]
    )
    builder.add_edge("prepare", "both")
    builder.add_edge("work", END)
    builder.add_edge("both", END)
    return builder


def test_task_ids_of_pull_and_push_tasks_are_derived_exactly() -> None:
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "t"}}
    _fan_out().compile(checkpointer=saver).invoke({}, config, durability="sync")
    tuples = {t.checkpoint["id"]: t for t in saver.list(config)}
    named: set[str] = set()
    for tup in tuples.values():
        parent_id = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        if parent_id is None:
            continue
        parent = tuples[parent_id]
        seen, before = tup.checkpoint["versions_seen"], parent.checkpoint["versions_seen"]
        ran = [name for name, versions in seen.items() if before.get(name) != versions]
        ran += [s.node for s in parent.checkpoint["channel_values"].get("__pregel_tasks", [])]
        writes = list(parent.pending_writes or [])
        nodes = task_writers(
            parent.checkpoint, tup.checkpoint, parent.metadata["step"], ran, writes
        )
        assert nodes is not None, f"task ids of step {parent.metadata['step']} not derived"
        named |= {nodes[task] for task, _, _ in writes}
    assert named == {"__start__", "prepare", "work", "both"}


def _joined() -> StateGraph[Any, Any, Any, Any]:
    """``(a | b) -> (c | d)`` by joins; ``d`` asks."""
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(Fan)
    for name in "abc":
        builder.add_node(name, lambda s: {"out": [1]})
    builder.add_node("d", lambda s: {"out": [interrupt("d?")]})
    builder.add_edge(START, "a").add_edge(START, "b")
    return builder.add_edge(["a", "b"], "c").add_edge(["a", "b"], "d")


def test_task_ids_of_tasks_a_join_triggered_are_derived_exactly() -> None:
    """A node a join triggered never saw its own ``branch:to:`` channel written: its id
    hashes it all the same. And the ids of the tasks a head runs next (the question
    ``d`` waits on, beside the finished ``c``) come from the graph's triggers."""
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "t"}}
    graph = _joined().compile(checkpointer=saver)
    graph.invoke({}, config, durability="sync")
    tuples = {t.checkpoint["id"]: t for t in saver.list(config)}
    head = saver.get_tuple(config)
    assert head is not None and head.parent_config is not None
    parent = tuples[head.parent_config["configurable"]["checkpoint_id"]]
    writes = list(parent.pending_writes or [])
    step = parent.metadata["step"]
    nodes = task_writers(parent.checkpoint, head.checkpoint, step, ["a", "b"], writes)
    assert nodes is not None and {nodes[task] for task, _, _ in writes} == {"a", "b"}
    triggers = {name: node.triggers for name, node in graph.nodes.items()}
    due = pulled(head.checkpoint, triggers, graph.channels)
    assert due == {"c", "d"}
    found = head_tasks(head.checkpoint, head.metadata["step"], {n: triggers[n] for n in due})
    assert found is not None
    named = {task: found[task] for task, _, _ in head.pending_writes or ()}
    assert set(named.values()) == {"c", "d"}
    assert named == {
        task: ("d" if channel == "__interrupt__" else "c")
        for task, channel, _ in head.pending_writes or ()
    }


def test_cache_keys_are_salted_and_keep_the_users_key() -> None:
    builder = linear(Counter(), names=("a", "b"))
    builder.nodes["b"].cache_policy = CachePolicy(key_func=lambda state: "k", ttl=5)
    graph = builder.compile()
    salt = CacheSalt("s1", {"log": "f1"})
    fold_cache_keys(graph, {"a": salt, "b": salt})
    policy = graph.nodes["b"].cache_policy
    assert isinstance(policy, CachePolicy) and policy.ttl == 5
    assert policy.key_func({}) == b"neograph_ext:s1:k"
    assert policy.key_func({"log": []}) == f"neograph_ext:{salt.of({'log': []})}:k".encode()
    assert graph.nodes["a"].cache_policy is None


def test_a_watched_node_shows_the_updates_langgraph_takes_and_nothing_else_changes() -> None:
    def build() -> Any:
        builder: StateGraph[Any, Any, Any, Any] = StateGraph(Fan)
        builder.add_node("a", lambda state: {"items": [1], "out": [1], "ignored": 0})
        builder.add_node("b", lambda state: Command(update={"out": [2]}))
        builder.add_node("c", lambda state: [Command(update={"out": [3]}), {"items": [3]}])
        return builder.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").compile()

    plain, graph = build(), build()
    shape = [(name, type(w), w.get_name()) for name, n in graph.nodes.items() for w in n.writers]
    seen: list[tuple[str, list[tuple[str, Any]]]] = []
    watch_updates(
        graph, {name: lambda u, name=name: seen.append((name, list(u))) for name in "abc"}
    )
    assert [
        (name, type(w), w.get_name()) for name, n in graph.nodes.items() for w in n.writers
    ] == (shape)
    assert graph.get_graph().to_json() == plain.get_graph().to_json()  # drawing calls no watcher
    assert seen == []
    assert graph.invoke({}) == plain.invoke({}) == {"items": [3], "out": [1, 2, 3]}
    assert seen == [
        ("a", [("items", [1]), ("out", [1])]),
        ("b", [("out", [2])]),
        ("c", [("out", [3]), ("items", [3])]),
    ]


class Args(BaseModel):
    query: str


class Answer(BaseModel):
    text: str


def test_tool_schemas_and_the_prebuilt_response_format_are_found() -> None:
    tool = StructuredTool.from_function(
        lambda query: query, name="s", description="d", args_schema=Args
    )
    assert tool_schemas(ToolNode([tool])) == {"s": Args}
    assert tool_schemas(lambda: None) is None
    agent = create_react_agent(
        FakeChat(runs=Counter(), call={}), [tool], response_format=("be brief", Answer)
    )
    assert prebuilt_output(agent.builder.nodes["generate_structured_response"].runnable) is Answer
    assert prebuilt_output(agent.builder.nodes["agent"].runnable) is None


@pytest.mark.parametrize("kind", sorted(STORED_IS_AVAILABLE, key=lambda kind: kind.__name__))
@pytest.mark.parametrize("value", [None, 0, "", [], {}, False, "x"])
def test_a_stored_value_of_these_channel_types_is_available(kind: type, value: object) -> None:
    channel: BaseChannel[Any, Any, Any] = kind(object)
    assert channel.from_checkpoint(value).is_available()


def test_a_barrier_stores_values_that_are_not_yet_available() -> None:
    """Why the list is of exact types: other channels may store an unavailable value,
    and ``waiting`` then asks the channel."""
    channel = NamedBarrierValue(str, {"a", "b"})
    assert not channel.from_checkpoint({"a"}).is_available()
    assert type(channel) not in STORED_IS_AVAILABLE
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(Fan)
    builder.add_node("a", lambda state: {"out": [1]})
    builder.add_node("b", lambda state: {"out": [2]})
    builder.add_node("join", lambda state: {"out": [3]})
    wire(builder, ["a", "b"], "join")
    graph = builder.compile()
    barrier = next(
        name for name, spec in graph.channels.items() if isinstance(spec, NamedBarrierValue)
    )
    checkpoint = {
        "channel_versions": {barrier: 2},
        "versions_seen": {"join": {}},
        "channel_values": {barrier: {"a"}},
    }
    triggers = {name: tuple(node.triggers) for name, node in graph.nodes.items()}
    assert "join" not in waiting(checkpoint, triggers, graph.channels)
    checkpoint["channel_values"] = {barrier: {"a", "b"}}
    assert "join" in waiting(checkpoint, triggers, graph.channels)


def test_task_paths_are_filed_as_the_loop_files_them() -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.pregel import _checkpoint, _loop
    from langgraph.pregel._algo import task_path_str

    for path in (("__pregel_pull", "b"), ("__pregel_push", 2), ("__pregel_push", ("x", 1), 3)):
        assert writes_path(InMemorySaver().put_writes, path) == {"task_path": task_path_str(path)}
    if hasattr(_checkpoint, "put_writes_accepts_task_path"):  # langgraph >= 1.2
        assert _checkpoint.put_writes_accepts_task_path(SqliteSaver.put_writes)
    else:  # langgraph 1.1: the loop reads put_writes' signature itself, as writes_path does
        source = inspect.getsource(_loop.SyncPregelLoop)
        assert 'signature(checkpointer.put_writes).parameters.get("task_path")' in source
    assert writes_path(SqliteSaver.put_writes, ("__pregel_pull", "b")) != {}
    assert writes_path(lambda config, writes, task_id: None, ("__pregel_pull", "b")) == {}


def test_the_msgpack_allowlist_is_known_to_exist_or_not() -> None:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    has_allowlist = "allowed_msgpack_modules" in inspect.signature(JsonPlusSerializer).parameters
    assert MSGPACK_ALLOWLIST is has_allowlist
    assert (
        ("langchain_core.messages.human", "HumanMessage") in SAFE_MSGPACK_TYPES
    ) is has_allowlist
    assert not strict_msgpack()  # LANGGRAPH_STRICT_MSGPACK is unset in this process


class Expected(BaseModel):
    """Revived once by the test below alone: LangGraph warns of a class once a process."""

    a: int


class Unexpected(BaseModel):
    """As ``Expected``, but never marked as expected."""

    a: int


@pytest.mark.skipif(not MSGPACK_ALLOWLIST, reason="langgraph-checkpoint 3 has no such line")
def test_a_class_marked_expected_is_revived_without_langgraph_s_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    codec = JsonPlusSerializer()
    expect_classes(frozenset({(__name__, "Expected")}))
    with caplog.at_level(logging.WARNING, "langgraph.checkpoint.serde.jsonplus"):
        assert codec.loads_typed(codec.dumps_typed(Expected(a=1))) == Expected(a=1)
        assert codec.loads_typed(codec.dumps_typed(Unexpected(a=1))) == Unexpected(a=1)
    lines = [r.getMessage() for r in caplog.records]
    assert [line for line in lines if "Deserializing unregistered type" in line] == [
        f"Deserializing unregistered type {__name__}.Unexpected from checkpoint. This will be "
        "blocked in a future version. Set LANGGRAPH_STRICT_MSGPACK=true to block now, or add "
        f"to allowed_msgpack_modules to allow explicitly: [({__name__!r}, 'Unexpected')]"
    ]


def test_a_task_names_itself_in_its_config_under_the_task_id_key() -> None:
    class Seen(TypedDict, total=False):
        keys: list[str]

    def node(state: Seen, config: RunnableConfig) -> Seen:
        return {"keys": sorted(config["configurable"])}

    builder = StateGraph(Seen)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    keys = builder.compile().invoke({})["keys"]
    assert TASK_ID_KEY in keys


@pytest.mark.parametrize(
    "kwargs",
    [
        {"stream_mode": "custom"},
        {"stream_mode": ["custom", "updates"]},
        {"stream_mode": "custom", "subgraphs": True},
        {"stream_mode": ["custom"], "subgraphs": True},
        {"stream_mode": ["custom", "values"], "version": "v2"},
        {"stream_mode": "updates"},
        {},
    ],
)
def test_a_custom_chunk_has_the_shape_langgraph_streams(kwargs: dict[str, Any]) -> None:
    from langgraph.config import get_stream_writer

    def write(state: Fan) -> dict[str, Any]:
        get_stream_writer()({"said": 1})
        return {}

    builder = StateGraph(Fan)
    builder.add_node("write", write)
    builder.add_edge(START, "write")
    builder.add_edge("write", END)
    graph = builder.compile()
    streamed = list(graph.stream({"items": []}, **kwargs))
    expected = custom_chunk(graph, kwargs, {"said": 1})
    assert [c for c in streamed if c in expected or _custom(c)] == list(expected)


def _custom(chunk: Any) -> bool:
    """Whether a streamed chunk is a custom one, in any of its shapes."""
    if isinstance(chunk, dict):
        return chunk.get("type") == "custom" or chunk == {"said": 1}
    return isinstance(chunk, tuple) and ("custom" in chunk or {"said": 1} in chunk)


def test_a_functions_reach_is_read_from_its_code_as_langgraph_reads_it() -> None:
    """``_reached`` finds what LangGraph 1.2's bytecode reader finds (its subgraphs are
    found in a node's cells, globals and attribute paths), without the source file."""
    from langgraph.pregel._utils import get_function_nonlocals

    from neograph_ext.decision import _langgraph

    inner = linear(Counter()).compile()
    holder = type("Holder", (), {"graph": inner})()

    def through_cell(state: dict[str, Any]) -> Any:
        return inner.invoke(state)

    def through_attribute(state: dict[str, Any]) -> Any:
        return holder.graph.invoke(state)

    if get_function_nonlocals.__module__ == "langgraph.pregel._utils":  # 1.2: bytecode
        for func in (through_cell, through_attribute, linear):
            assert _langgraph._reached(func) == get_function_nonlocals(func)
    assert inner in _langgraph._reached(through_cell)
    assert inner in _langgraph._reached(through_attribute)
