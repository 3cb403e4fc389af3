"""The compact stamp's size: at most 256 bytes in any metadata.

Per saver and drive: what neograph-ext adds to checkpoint metadata and to streamed
chunks, measured against the same graph compiled plainly, on graphs the size of real
apps (``tests.graphs.big``).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph

import neograph_ext as ne
from neograph_ext.decision._stamp import MAX_METADATA_BYTES
from tests.drive import Drive
from tests.graphs import big


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _size(metadata: Any) -> int:
    return len(json.dumps(metadata, sort_keys=True, default=str).encode())


def _metadata_by_step(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> dict[int, Any]:
    return {t.metadata["step"]: t.metadata for t in saver.list(config)}


def _added(saver: BaseCheckpointSaver[Any], plain: RunnableConfig, ours: RunnableConfig) -> int:
    """The most bytes any of ``ours``'s checkpoints carries beyond ``plain``'s, per step."""
    before, after = _metadata_by_step(saver, plain), _metadata_by_step(saver, ours)
    assert before.keys() == after.keys() and before
    return max(_size(after[step]) - _size(before[step]) for step in before)


@pytest.mark.parametrize(
    ("make", "input"),
    [(big.wide, {}), (big.chat, {"messages": [("user", "hi")]})],
    ids=["30-nodes-nested-models", "messages-agent"],
)
def test_checkpoint_metadata_grows_by_at_most_256_bytes(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    make: Callable[[Counter[str]], StateGraph[Any, Any, Any, Any]],
    input: Any,
) -> None:
    plain, ours = _thread(), _thread()
    drive.invoke(make(Counter()).compile(checkpointer=saver), input, plain, durability="sync")
    graph = ne.compile(make(Counter()), checkpointer=saver)
    assert len(graph.neograph_ext_stamp.encode()) > 4 * MAX_METADATA_BYTES
    drive.run(graph, input, ours)

    added = _added(saver, plain, ours)
    assert 0 < added <= MAX_METADATA_BYTES


def test_a_streamed_message_chunk_carries_at_most_256_extra_bytes(
    drive: Drive, saver: BaseCheckpointSaver[Any]
) -> None:
    input = {"messages": [("user", "hi")]}
    plain = list(
        drive.graph_stream(
            big.chat(Counter()).compile(checkpointer=saver),
            input,
            _thread(),
            stream_mode="messages",
        )
    )
    graph = ne.compile(big.chat(Counter()), checkpointer=saver)
    ours = list(drive.stream(graph, input, _thread(), stream_mode="messages"))
    assert len(plain) == len(ours) > 0
    assert [m.content for m, _ in plain] == [m.content for m, _ in ours]
    extra = [
        _size(ours_md) - _size(plain_md)
        for (_, plain_md), (_, ours_md) in zip(plain, ours, strict=True)
    ]
    assert all(0 < n <= MAX_METADATA_BYTES for n in extra), extra
