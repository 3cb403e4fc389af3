"""A DeltaChannel's stored value judged as LangGraph rebuilds it (``_misread``): its
``channel_values`` hold a snapshot or nothing, never what a resume hands to nodes."""

from __future__ import annotations

from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from pydantic import BaseModel

from neograph_ext.decision._misread import head_misread, rebuilt_judged
from neograph_ext.decision._revive import Revival


class Draft(BaseModel):
    text: str


def test_a_delta_channel_is_judged_as_rebuilt_not_as_its_snapshot() -> None:
    checked = Revival({"rows": list[Draft], "n": int})
    assert rebuilt_judged(checked, ["rows", "n", "gone"]) == {"rows"}
    snapshot = {"rows": _DeltaSnapshot([Draft(text="a")])}
    tup = CheckpointTuple(
        {"configurable": {}}, {**empty_checkpoint(), "channel_values": snapshot}, {}
    )
    assert head_misread(checked, tup, True, {"rows": [Draft(text="a")]}) == {}
    assert head_misread(checked, tup, True, {"rows": [{"text": "a"}]}) == {
        "rows": "stored value of `rows` does not read back as `Draft`: got `dict`"
    }
    assert head_misread(checked, tup, False, {"rows": [{"text": "a"}]}) == {}
