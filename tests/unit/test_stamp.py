"""What goes into checkpoint metadata: built from a builder, read back defensively."""

from __future__ import annotations

import json
import operator
from collections import Counter
from typing import Annotated, Any, Literal, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Command, Send
from pydantic import BaseModel

from neograph_ext.decision._changes import ChangeReason, step_changes
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._stamp import (
    ASK_AGAIN,
    MAX_METADATA_BYTES,
    RUN_KEY,
    STAMP_KEY,
    Stamp,
    StampRef,
    Unreadable,
    encode_run,
    input_digest,
    read_run,
    read_stamp,
    stamp_ref,
)
from neograph_ext.testing import fingerprint_type
from tests.graphs.pipelines import State, linear, model

V1 = model(score=(int, ...))


def one_node(fn: Any) -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(State)
    builder.add_node("n", fn)
    builder.add_edge(START, "n")
    return builder


def out_of(fn: Any) -> str | None:
    return build_stamp(one_node(fn)).nodes["n"].out


def test_return_annotation_is_unwrapped_from_coroutines() -> None:
    def sync(state: State) -> V1:  # type: ignore[valid-type]
        raise NotImplementedError

    async def asynchronous(state: State) -> V1:  # type: ignore[valid-type]
        raise NotImplementedError

    assert out_of(sync) == out_of(asynchronous) == fingerprint_type(V1)


def test_annotations_that_say_nothing_about_the_output_are_skipped() -> None:
    def plain(state: State) -> dict[str, Any]:
        return {}

    def command(state: State) -> Command[Literal["n"]]:
        raise NotImplementedError

    def anything(state: State) -> Any:
        return {}

    def unannotated(state):  # type: ignore[no-untyped-def]
        return {}

    assert {out_of(f) for f in (plain, command, anything, unannotated)} == {None}


def test_unresolvable_forward_reference_degrades_to_no_fingerprint() -> None:
    def fn(state: State) -> NoSuchType:  # type: ignore[name-defined]  # noqa: F821
        return {}

    assert out_of(fn) is None


def test_reducer_is_stripped_from_channel_types() -> None:
    class WithReducer(TypedDict):
        log: Annotated[list[str], operator.add]

    class Without(TypedDict):
        log: list[str]

    def channels(schema: Any) -> dict[str, str]:
        builder = StateGraph(schema)
        builder.add_node("n", lambda s: {})
        builder.add_edge(START, "n")
        return dict(build_stamp(builder).channels)

    assert channels(WithReducer) == channels(Without) == {"log": fingerprint_type(list[str])}


def test_node_fingerprint_covers_version_and_successors() -> None:
    base = build_stamp(linear(Counter()))
    bumped = build_stamp(linear(Counter()), versions={"b": "v2"})
    longer = build_stamp(linear(Counter(), names="abcde"))
    assert base.nodes["b"].fp != bumped.nodes["b"].fp
    assert base.nodes["a"].fp == bumped.nodes["a"].fp
    assert base.nodes["d"].fp != longer.nodes["d"].fp
    assert base.nodes["c"].fp == longer.nodes["c"].fp
    assert len({base.id, bumped.id, longer.id}) == 3


def _fan_out(item: type[BaseModel], *, routed: bool = True) -> StateGraph[Any, Any, Any, Any]:
    """``a`` sends ``item``s to ``work`` (or, not ``routed``, reaches it by an edge)."""

    def work(it: Any) -> dict[str, Any]:
        return {}

    work.__annotations__["it"] = item  # resolved, as a module-level model would be
    builder = StateGraph(State)
    builder.add_node("a", lambda s: {})
    builder.add_node("work", work)
    builder.add_edge(START, "a")
    if routed:
        builder.add_conditional_edges("a", lambda s: [Send("work", item())], ["work"])
    else:
        builder.add_edge("a", "work")
    return builder


def test_a_sender_is_fingerprinted_by_what_its_sends_carry() -> None:
    old, new = (model("Item", x=(tp, 0)) for tp in (int, str))
    before, after = build_stamp(_fan_out(old)), build_stamp(_fan_out(new))
    assert before.nodes["a"].sends == {"work": fingerprint_type(old)}
    assert before.nodes["a"].fp != after.nodes["a"].fp
    (change,) = step_changes(frozenset({"a"}), frozenset(), before, after)
    assert change.reason is ChangeReason.SENDS
    assert change.diff[0] == "send to `work` changed" and "x" in change.diff[1]
    # A static edge passes the state, never a Send: nothing is added to the fingerprint.
    assert build_stamp(_fan_out(old, routed=False)).nodes["a"].sends is None


def test_stamp_round_trips_through_its_json() -> None:
    stamp = build_stamp(linear(Counter(), {"c": V1}))
    encoded = stamp.encode()
    assert json.loads(encoded)["v"] == 1
    # Which channels accumulate is read off the graph on each run, never stored.
    assert stamp.accumulates == ("log",) and "accumulates" not in json.loads(encoded)
    assert read_stamp(encoded) == stamp.model_copy(update={"accumulates": None})
    # Signatures are stored so a later process can explain a diff.
    assert stamp.nodes["c"].out in json.loads(encoded)["sigs"]


def test_untrusted_stamps_are_unreadable_with_a_reason() -> None:
    good = json.loads(build_stamp(linear(Counter())).encode())
    cases: dict[str, object] = {
        "format": "{not json",
        "version": json.dumps({**good, "v": 99}),
        "invalid": json.dumps({**good, "id": "0" * 64}),
    }
    for reason, raw in cases.items():
        result = read_stamp(raw)
        assert isinstance(result, Unreadable) and result.reason == reason, raw
    assert isinstance(read_stamp({"v": 1}), Unreadable)
    assert read_stamp(None) is None


def test_stamp_key_is_a_valid_sqlite_filter_key() -> None:
    import re

    assert re.fullmatch(r"[a-zA-Z0-9_.-]+", STAMP_KEY) and "." not in STAMP_KEY
    assert isinstance(read_stamp(build_stamp(linear(Counter())).encode()), Stamp)


def test_an_oversize_stamp_is_refused_before_it_is_parsed() -> None:
    from neograph_ext.decision import _stamp

    giant = "{" + " " * (_stamp.MAX_STAMP_CHARS + 1) + "}"
    refused = read_stamp(giant)
    assert isinstance(refused, Unreadable) and "exceeds" in refused.detail


def test_a_reference_and_a_run_mark_fit_the_metadata_budget() -> None:
    current = build_stamp(linear(Counter()))
    metadata = {
        STAMP_KEY: stamp_ref(current),
        RUN_KEY: encode_run(current, "up_to_date", input_digest({"log": ["x" * 10_000]})),
    }
    assert len(json.dumps(metadata).encode()) <= MAX_METADATA_BYTES
    ref = read_stamp(metadata[STAMP_KEY])
    assert ref == StampRef(current.id)
    mark = read_run(metadata, ref)
    assert mark.verified == current.id and mark.input == input_digest({"log": ["x" * 10_000]})
    # Bound to its stamp: under another stamp the same mark vouches for nothing.
    assert read_run(metadata, StampRef("0" * 64)).verified is None
    assert (
        read_run(
            {**metadata, RUN_KEY: metadata[RUN_KEY].replace("up_to_date", "invoke")}, ref
        ).verified
        is None
    )
    # A resume of checkpoints it could not verify adopts them: its code vouches for them.
    unverified = {**metadata, RUN_KEY: metadata[RUN_KEY].replace("up_to_date", "unverified")}
    assert read_run(unverified, ref).verified == current.id


def test_a_replaying_run_mark_names_its_source_and_fits_the_budget() -> None:
    current = build_stamp(linear(Counter()))
    source = "1f1ed77b-4a22-6364-8002-0891fb12109f"
    longest = encode_run(current, "x" * 20, input_digest("hi"), source)
    metadata = {STAMP_KEY: stamp_ref(current), RUN_KEY: longest}
    assert len(json.dumps(metadata).encode()) <= MAX_METADATA_BYTES
    ref = read_stamp(metadata[STAMP_KEY])
    mark = read_run({**metadata, RUN_KEY: encode_run(current, ASK_AGAIN, None, source)}, ref)
    assert (mark.replaying, mark.decision, mark.verified) == (source, ASK_AGAIN, current.id)
    # An id of another shape is not recorded: the mark stays one the reader accepts.
    assert read_run(
        {**metadata, RUN_KEY: encode_run(current, "rewind", None, "x/../y")}, ref
    ) == read_run({**metadata, RUN_KEY: encode_run(current, "rewind", None)}, ref)


def test_a_take_over_run_mark_names_the_stamp_it_took_from_and_fits_the_budget() -> None:
    current = build_stamp(linear(Counter()))
    other = "ab" * 32
    source = "1f1ed77b-4a22-6364-8002-0891fb12109f"
    longest = encode_run(current, "x" * 20, input_digest("hi"), source, other)
    metadata = {STAMP_KEY: stamp_ref(current), RUN_KEY: longest}
    assert len(json.dumps(metadata).encode()) <= MAX_METADATA_BYTES
    ref = read_stamp(metadata[STAMP_KEY])
    mark = read_run({**metadata, RUN_KEY: encode_run(current, ASK_AGAIN, None, None, other)}, ref)
    assert (mark.took_from, mark.decision, mark.verified) == (other[:16], ASK_AGAIN, current.id)
    assert read_run(metadata, ref).replaying == source
    assert (
        read_run({**metadata, RUN_KEY: encode_run(current, "rewind", None)}, ref).took_from is None
    )


class _Turn(TypedDict, total=False):
    question: str
    answer: str
    draft: str


class _Question(TypedDict):
    question: str


class _Answered(TypedDict):
    answer: str


class _Drafted(TypedDict, total=False):
    answer: str


def _first(returns: type, reads: type | None, *, second: type | None = None) -> Any:
    """A graph whose turn starts with ``first`` (and ``second``, returning ``second``)."""

    def node(returned: type) -> Any:
        def write(inputs: Any) -> Any:
            return {"answer": inputs["question"]}

        write.__annotations__["return"] = returned
        return write

    builder = StateGraph(_Turn)
    builder.add_node("first", node(returns), input_schema=reads)
    builder.add_edge(START, "first")
    if second is not None:
        builder.add_node("second", node(second), input_schema=reads)
        builder.add_edge(START, "second")
    return builder


def test_a_channel_the_turns_first_node_requires_and_cannot_read_is_replaced() -> None:
    assert build_stamp(_first(_Answered, _Question)).replaced == ("answer",)
    # Read (its input is the state), or not written on every call: not replaced.
    assert build_stamp(_first(_Answered, None)).replaced is None
    assert build_stamp(_first(_Drafted, _Question)).replaced is None
    # A pause before the node that starts a turn shows the old value.
    assert build_stamp(_first(_Answered, _Question), paused_before=["first"]).replaced is None
    assert build_stamp(_first(_Answered, _Question), paused_before="*").replaced is None
    # Every node a turn starts with must write it.
    assert build_stamp(_first(_Answered, _Question, second=_Answered)).replaced == ("answer",)
    assert build_stamp(_first(_Answered, _Question, second=_Drafted)).replaced is None
