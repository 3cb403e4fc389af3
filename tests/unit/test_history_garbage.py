"""Metadata read back from storage is data: garbage gives a record or one documented error."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint

import neograph_ext as ne
from neograph_ext.decision._history import lineage
from neograph_ext.decision._stamp import Unreadable
from neograph_ext.decision._unreadable import reading, resumable


def tup(checkpoint_id: str, metadata: Any, parent: str | None = None) -> CheckpointTuple:
    checkpoint = empty_checkpoint()
    checkpoint["id"] = checkpoint_id
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    parent_config: Any = None
    if parent is not None:
        parent_config = {"configurable": {**config["configurable"], "checkpoint_id": parent}}
    return CheckpointTuple(config, checkpoint, metadata, parent_config)


@pytest.mark.parametrize("metadata", [42, 0, 1.5, [1, 2], [], "text", ""])
def test_a_record_whose_metadata_is_not_a_mapping_is_unverified(metadata: Any) -> None:
    head = {"source": "loop", "step": 1}
    records = lineage([tup("2", head, parent="1"), tup("1", metadata)], "2")

    first = records[0]
    assert first.stamp == Unreadable(
        "format", f"metadata is a {type(metadata).__name__}, not a mapping"
    )
    assert (first.step, first.source, first.verified) == (-1, "", None)
    assert records[1].step == 1 and records[1].stamp is None


@pytest.mark.parametrize(
    "raised",
    [
        RecursionError("maximum recursion depth exceeded while decoding a JSON array"),
        UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
        json.JSONDecodeError("Expecting value", "not json", 0),
    ],
    ids=["recursion", "unicode", "json"],
)
def test_reading_translates_decoding_errors_naming_the_thread(raised: Exception) -> None:
    with pytest.raises(ne.UnreadableCheckpointError) as caught, reading("t-42"):
        raise raised
    assert caught.value.__cause__ is raised
    assert "'t-42'" in str(caught.value) and "new thread_id" in str(caught.value)


def test_reading_lets_other_errors_through() -> None:
    with pytest.raises(KeyError), reading("t"):
        raise KeyError("not a decoding problem")


@pytest.mark.parametrize("metadata", [42, [1], "text", None, {}, {"step": "1"}, {"step": True}])
def test_a_head_langgraph_cannot_resume_from_is_refused(metadata: Any) -> None:
    with pytest.raises(ne.UnreadableCheckpointError, match=r"'t'.*checkpoint c1.*integer step"):
        resumable(tup("c1", metadata), "t")


def test_a_head_with_a_step_is_resumable() -> None:
    head = tup("c1", {"step": 3, "source": "loop"})
    assert resumable(head, "t") is head
    assert resumable(None, "t") is None
