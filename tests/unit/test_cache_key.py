"""The salt of a cached node's key: its fingerprint, the types of the channels it may
write, and those of the channels its input holds a value of (``_cache_key``)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from neograph_ext.decision._cache_key import CacheSalt, cache_salts
from neograph_ext.decision._stamp import NodeStamp, Stamp, stamp_id

_FP = {name: name[0] * 64 for name in ("a1", "b1", "c1", "d1", "e1")}


def _stamp() -> Stamp:
    nodes = {"ask": NodeStamp(fp=_FP["a1"]), "plain": NodeStamp(fp=_FP["b1"])}
    channels = {"doc": _FP["c1"], "answer": _FP["d1"], "report": _FP["e1"]}
    return Stamp(v=1, id=stamp_id(nodes, channels), nodes=nodes, channels=channels, sigs={})


def _with_channel(name: str, fp: str) -> Stamp:
    stamp = _stamp()
    channels = {**stamp.channels, name: fp}
    return stamp.model_copy(update={"channels": channels})


class _Input(BaseModel):
    doc: str | None = None
    report: str | None = None


@dataclass
class _Data:
    doc: str | None = None
    report: str | None = None


def test_a_node_that_declares_what_it_writes_is_salted_by_those_channels_only() -> None:
    before = cache_salts(_stamp(), {"ask": {"answer"}})
    downstream = cache_salts(_with_channel("report", "f" * 64), {"ask": {"answer"}})
    written = cache_salts(_with_channel("answer", "f" * 64), {"ask": {"answer"}})
    assert before["ask"].fixed == downstream["ask"].fixed != written["ask"].fixed
    # A node that declares nothing may write any channel.
    assert before["plain"].fixed != downstream["plain"].fixed


def test_the_channels_an_input_holds_join_the_salt_in_every_shape_of_state() -> None:
    old = cache_salts(_stamp(), {"ask": {"answer"}})["ask"]
    new = cache_salts(_with_channel("report", "f" * 64), {"ask": {"answer"}})["ask"]
    for holding, empty in (
        ({"doc": "d", "report": "r"}, {"doc": "d", "report": None}),
        (_Input(doc="d", report="r"), _Input(doc="d")),
        (_Data(doc="d", report="r"), _Data(doc="d")),
    ):
        assert old.of(holding) != new.of(holding)
        assert old.of(empty) == new.of(empty) != old.fixed
    # A value that is no state (a Send's argument, a task's) holds no channel.
    assert old.of("doc") == old.fixed


def test_a_salt_without_channels_is_its_fixed_part() -> None:
    assert CacheSalt("s").of({"doc": "d"}) == "s"
