"""The thread fixture format: what it keeps, what it leaves out, and what it refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.types import Send
from pydantic import BaseModel

from neograph_ext.decision._stamp import InputDigest, input_digest
from neograph_ext.storage._fixtures import (
    FORMAT,
    REDACTED,
    ThreadFixture,
    encoded,
    file_name,
    read_fixture,
)
from neograph_ext.testing import FixtureError, read_fixtures


class Secret(BaseModel):
    """A state value that must not leave the database unless asked for."""

    card: str


PARENT, HEAD = "1f000000-0000-6000-8000-000000000001", "1f000000-0000-6000-8000-000000000002"
INPUT = {"doc": "private document"}


def _tuple(checkpoint_id: str, parent: str | None, values: dict[str, Any]) -> CheckpointTuple:
    def config(cid: str) -> Any:
        return {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": cid}}

    checkpoint = {
        "v": 4,
        "id": checkpoint_id,
        "ts": "2026-12-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": {name: 1 for name in values},
        "versions_seen": {"a": {"branch:to:a": 1}},
        "updated_channels": None,
    }
    return CheckpointTuple(
        config(checkpoint_id),
        checkpoint,  # type: ignore[arg-type]
        {"source": "loop", "step": 1, "parents": {}, "user": "u-1"},  # type: ignore[arg-type]
        config(parent) if parent else None,
        [("task-1", "secret", Secret(card="4111")), ("task-1", "branch:to:b", None)],
    )


def _thread() -> list[CheckpointTuple]:
    return [
        _tuple(PARENT, None, {"__start__": INPUT}),
        _tuple(
            HEAD,
            PARENT,
            {
                "secret": Secret(card="4111"),
                "cleared": None,
                "branch:to:b": None,
                "join:a+b:c": {"a"},
                "__pregel_tasks": [Send("b", {"card": "4111"})],
            },
        ),
    ]


def _written(tmp_path: Path, *, with_values: bool, values: dict[str, Any] | None = None) -> Path:
    path = tmp_path / file_name("t")
    text = encoded("t", HEAD, _thread(), {}, with_values=with_values, head_values=values or {})
    path.write_text(text)
    return path


def test_without_values_no_state_value_is_written(tmp_path: Path) -> None:
    text = _written(tmp_path, with_values=False).read_text()
    assert "4111" not in text and "private" not in text
    assert json.loads(text)["format"] == FORMAT


def test_without_values_what_planning_reads_is_kept(tmp_path: Path) -> None:
    fixture = read_fixture(_written(tmp_path, with_values=False))
    assert [t.checkpoint["id"] for t in fixture.tuples] == [HEAD, PARENT]  # newest first
    head = fixture.tuple_at(None)
    assert head is not None and head.parent_config is not None
    assert head.parent_config["configurable"]["checkpoint_id"] == PARENT
    values = head.checkpoint["channel_values"]
    assert "secret" not in values and values["cleared"] is None
    assert values["join:a+b:c"] == {"a"} and values["branch:to:b"] is None
    assert values["__pregel_tasks"] == [Send("b", REDACTED)]
    assert head.pending_writes == [("task-1", "secret", REDACTED), ("task-1", "branch:to:b", None)]
    assert head.metadata == {"source": "loop", "step": 1, "parents": {}, "user": "u-1"}
    assert head.checkpoint["channel_versions"] == _thread()[1].checkpoint["channel_versions"]
    started = fixture.tuple_at(PARENT)
    assert started is not None
    digest = started.checkpoint["channel_values"]["__start__"]
    assert isinstance(digest, InputDigest) and input_digest(digest) == input_digest(INPUT)


def test_with_values_every_value_reads_back(tmp_path: Path) -> None:
    path = _written(tmp_path, with_values=True, values={"messages": ["hi"]})
    fixture = read_fixture(path)
    head = fixture.tuple_at(HEAD)
    assert head is not None and fixture.with_values
    assert head.checkpoint["channel_values"]["secret"] == Secret(card="4111")
    assert head.checkpoint["channel_values"]["__pregel_tasks"] == [Send("b", {"card": "4111"})]
    assert head.pending_writes[0] == ("task-1", "secret", Secret(card="4111"))
    assert fixture.head_values == {"messages": ["hi"]}


def test_an_unknown_format_version_is_refused_naming_the_fix(tmp_path: Path) -> None:
    path = _written(tmp_path, with_values=False)
    document = json.loads(path.read_text())
    path.write_text(json.dumps({**document, "format": FORMAT + 1}))
    with pytest.raises(FixtureError, match=f"format {FORMAT + 1}.*reads format {FORMAT}"):
        read_fixture(path)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("not json", "cannot be read as JSON"),
        ('{"format": 1}', "not a neograph-ext thread fixture"),
        ('{"format": 1, "kind": "neograph-ext thread fixture"}', "malformed"),
    ],
)
def test_what_is_not_a_fixture_is_a_typed_error(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(FixtureError, match=match):
        read_fixtures(tmp_path)


def test_a_head_missing_from_its_checkpoints_is_malformed(tmp_path: Path) -> None:
    path = _written(tmp_path, with_values=False)
    document = json.loads(path.read_text())
    path.write_text(json.dumps({**document, "head": "1f000000-0000-6000-8000-00000000dead"}))
    with pytest.raises(FixtureError, match=r"malformed.*head"):
        read_fixture(path)


def test_an_empty_or_missing_directory_names_the_export_command(tmp_path: Path) -> None:
    with pytest.raises(FixtureError, match="neograph-ext export"):
        read_fixtures(tmp_path)
    with pytest.raises(FixtureError, match="no fixture directory"):
        read_fixtures(tmp_path / "missing")


def test_a_value_the_serializer_cannot_encode_names_the_thread() -> None:
    (head,) = [_tuple(HEAD, None, {"secret": object()})]
    with pytest.raises(FixtureError, match=r"thread 't'.*without --with-values"):
        encoded("t", HEAD, [head], {}, with_values=True, head_values={})


def test_file_names_are_readable_and_distinct() -> None:
    assert file_name("ticket 1/2").startswith("ticket-1-2-")
    assert file_name("a/b") != file_name("a b")
    assert file_name("../..").startswith("thread-")


def test_a_fixture_names_its_head_or_any_checkpoint() -> None:
    fixture = ThreadFixture("t", HEAD, tuple(reversed(_thread())))
    found = fixture.tuple_at(PARENT)
    assert found is not None and found.checkpoint["id"] == PARENT
    assert fixture.tuple_at("1f000000-0000-6000-8000-00000000dead") is None
