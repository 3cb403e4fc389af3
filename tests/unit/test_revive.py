"""The read-back rule (``_revive``): what LangGraph's serializer can revive as itself,
which stored values do not read back as declared, and what a write round trip shows.

The first tests pin the serializer's behaviour the rule copies: they fail loudly when
LangGraph changes how it revives classes.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import uuid
from typing import Annotated, Any, Generic, Literal, NamedTuple, TypedDict, TypeVar

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from langgraph.types import Send
from pydantic import BaseModel, Field, RootModel, field_validator

from neograph_ext.decision._errors import GraphError
from neograph_ext.decision._langgraph import MSGPACK_ALLOWLIST
from neograph_ext.decision._misread import class_mismatch, misread, sends_misread, unrevivable_tasks
from neograph_ext.decision._revive import (
    Revival,
    allowed_pairs,
    cleared,
    entrypoint_revival,
    findings,
    node_inputs,
    report,
    revival,
    revived_classes,
    why_not,
)
from neograph_ext.drivers._verify_writes import _difference


class Draft(BaseModel):
    text: str


class Outer(BaseModel):
    class Inner(BaseModel):  # the serializer looks it up as `module.Inner`
        x: int

    inner: Inner


@dataclasses.dataclass
class Note:
    body: str
    draft: Draft | None = None


class Tone(enum.Enum):
    PLAIN = "plain"


class Pair(NamedTuple):
    left: int
    right: int


class Row(TypedDict):
    draft: Draft
    n: int


class Tags(RootModel[list[str]]):
    pass


T = TypeVar("T")


class Box(BaseModel, Generic[T]):
    item: T


IntBox = Box[int]  # parametrised at module level: pydantic binds `Box[int]` here


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"


class Pet(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


class Doubled(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def _doubled(cls, n: int) -> int:
        return n * 2


def _local() -> type[BaseModel]:
    class Local(BaseModel):
        text: str

    return Local


def _main() -> type[BaseModel]:
    return type("Script", (BaseModel,), {"__module__": "__main__", "__annotations__": {"a": int}})


def _round_trip(value: object, **serde: Any) -> object:
    codec = JsonPlusSerializer(**serde)
    return codec.loads_typed(codec.dumps_typed(value))


def test_the_serializer_revives_an_importable_model_as_itself() -> None:
    assert _round_trip(Draft(text="a")) == Draft(text="a")
    assert type(_round_trip(Draft(text="a"))) is Draft


def test_the_serializer_hands_back_a_dict_for_a_local_or_nested_class() -> None:
    assert _round_trip(_local()(text="a")) == {"text": "a"}
    assert _round_trip(Outer.Inner(x=1)) == {"x": 1}


def test_the_serializer_hands_back_a_dict_for_a_class_off_its_allowlist() -> None:
    if not MSGPACK_ALLOWLIST:  # langgraph-checkpoint 3: no allowlist to be off
        assert not hasattr(JsonPlusSerializer(), "_allowed_msgpack_modules")
        assert type(_round_trip(Draft(text="a"))) is Draft
        return
    assert _round_trip(Draft(text="a"), allowed_msgpack_modules=None) == {"text": "a"}
    allowed = [(Draft.__module__, "Draft")]
    assert type(_round_trip(Draft(text="a"), allowed_msgpack_modules=allowed)) is Draft


def test_the_serializer_hands_back_the_data_of_a_root_model() -> None:
    assert _round_trip(Tags(["a"])) == ["a"]


def test_the_serializer_revives_other_pydantic_forms_as_themselves() -> None:
    assert type(_round_trip(IntBox(item=1))) is IntBox
    assert _round_trip(Pet(pet=Dog())) == Pet(pet=Dog())
    assert type(_round_trip(Pet(pet=Dog())).pet) is Dog  # type: ignore[attr-defined]
    # Its validators run again on the stored data: one that is not idempotent (doubling)
    # changes the value, which no rule can see in a type (docs/not-detected.md).
    assert _round_trip(Doubled(n=1)) == Doubled.model_construct(n=4)


def test_a_root_model_is_named_a_class_rebuilt_from_data_and_the_other_forms_revive() -> None:
    assert len(why_not(Tags, True)) == 1 and "RootModel" in why_not(Tags, True)[0]
    for cls in (IntBox, Pet, Cat, Dog, Doubled):
        assert why_not(cls, True) == ()
    [found] = findings([("channel `tags`", list[Tags])], True)
    assert found.rebuilt and not found.script
    assert "validated into Tags" in found.describe()


def _parametrised() -> type[BaseModel]:
    return Box[str]  # in a function: pydantic binds no `Box[str]` in this module


def test_a_generic_model_no_module_binds_is_a_class_rebuilt_from_data() -> None:
    assert _round_trip(_parametrised()(item="a")) == {"item": "a"}
    [why] = why_not(_parametrised(), True)
    assert why.startswith("it is a parametrised generic model") and "Box[str]" in why
    [found] = findings([("channel `box`", _parametrised())], True)
    assert found.rebuilt and "BoxOf = Box[str]" in found.fix


def test_a_channel_of_a_root_model_is_validated_on_read_and_not_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    checked = revival({"tags": Tags, "both": tuple[Tags, Outer.Inner]}, frozenset(), {}, True)
    assert checked.validated == {"tags"} and checked.unrevivable == {"both"}
    with caplog.at_level(logging.WARNING, "neograph_ext"):
        report(revival({"tags": Tags}, frozenset(), {}, True), "g", strict=True)
    assert ["RootModel" in r.getMessage() for r in caplog.records] == [True]
    assert misread(checked, {"tags": ["a"]}) == {}
    assert "tags" in misread(checked, {"tags": [{"not": "a string"}]})
    saved = entrypoint_revival("e", {"__previous__": Tags}, {}, True)
    assert saved.unrevivable == {"__previous__"} and not saved.findings[0].rebuilt


def test_an_importable_class_revives() -> None:
    for cls in (Draft, Outer, Note, Tone, Pair):
        assert why_not(cls, True) == ()
    assert why_not(HumanMessage, frozenset()) == ()  # on LangGraph's safe list


def test_each_reason_is_named() -> None:
    assert "local class" in why_not(_local(), True)[0]
    assert "`__main__`" in why_not(_main(), True)[0]
    assert why_not(Outer.Inner, True) == (f"`{__name__}.Inner` does not import it",)
    assert why_not(Draft, frozenset({(__name__, "Draft")})) == ()
    off = why_not(Draft, frozenset())
    if MSGPACK_ALLOWLIST:
        assert len(off) == 1 and "allowlist" in off[0] and "LANGGRAPH_STRICT_MSGPACK" in off[0]
    else:  # langgraph-checkpoint 3 revives every importable class: nothing to be off
        assert off == ()
        assert allowed_pairs(InMemorySaver(), set()) is True


def test_a_class_defined_again_at_the_same_path_counts_as_itself() -> None:
    again = type("Draft", (BaseModel,), {"__module__": __name__, "__annotations__": {"t": str}})
    assert why_not(again, True) == ()


def test_the_walk_finds_classes_stored_by_path_at_any_depth() -> None:
    found = set(revived_classes(Annotated[dict[str, list[Row | None]], "meta"]))
    assert found == {Draft}
    assert set(revived_classes(Note)) == {Note, Draft}
    assert set(revived_classes(Outer)) == {Outer, Outer.Inner}
    assert set(revived_classes(tuple[Tone, Pair, int, str, Any])) == {Tone, Pair}
    assert set(revived_classes(Row)) == {Draft}  # a TypedDict value is a plain dict


def test_one_finding_per_class_naming_every_place() -> None:
    local = _local()
    found = findings(
        [("channel `a`", local), ("channel `b`", list[local]), ("channel `c`", Draft)], True
    )
    assert len(found) == 1
    assert found[0].where == ("channel `a`", "channel `b`")
    text = found[0].describe()
    assert "Local" in text and "local class" in text and "top level" in text


def test_a_script_class_is_one_info_line_per_process_and_class_even_in_strict_mode(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A script compiles its graph again and again (and redefines its classes, keeping
    their names): nothing needs doing while it runs alone, so one short line, at INFO."""
    name = f"Script{uuid.uuid4().hex}"  # a class no other test has named in this process

    def script_class() -> type[BaseModel]:
        return type(name, (BaseModel,), {"__module__": "__main__", "__annotations__": {"a": int}})

    with caplog.at_level(logging.INFO, "neograph_ext"):
        for strict in (True, False, True):
            checked = revival({"a": script_class()}, frozenset(), {}, True)
            assert [f.script for f in checked.findings] == [True]
            report(checked, "g", strict=strict)
    [said] = [r for r in caplog.records if name in r.getMessage()]
    assert said.levelno == logging.INFO and len(said.getMessage()) < 200
    assert "docs/read-back.md" in said.getMessage()
    assert f"__main__.{name} is the running script's own class" in said.getMessage()
    # The finding itself keeps the whole story, for unrevivable_types.
    text = checked.findings[0].describe()
    assert "LangGraph Server" in text and "nothing needs doing" in text


def test_strict_mode_refuses_a_class_no_process_revives_beside_a_script_class() -> None:
    with pytest.raises(GraphError, match="local class") as refused:
        report(revival({"a": _main(), "b": _local()}, frozenset(), {}, True), "g", strict=True)
    assert "__main__" not in str(refused.value)


def test_a_node_output_is_checked_by_the_keys_it_updates() -> None:
    local = _local()

    class Update(TypedDict):
        draft: Any

    class Out(BaseModel):
        draft: local  # type: ignore[valid-type]

    checked = revival({"draft": Any}, frozenset(), {"write": Out, "other": Update}, True)
    assert [f.where for f in checked.findings] == [("node `write` output",)]
    # A model returned as an update is never stored itself.
    assert revival({}, frozenset(), {"write": _local()}, True).findings == ()


def test_a_pydantic_state_channel_is_not_reported() -> None:
    local = _local()
    assert revival({"draft": local}, frozenset({"draft"}), {}, True).findings == ()


def test_a_dict_where_a_model_was_declared_does_not_read_back() -> None:
    checked = Revival({"draft": Draft, "rows": list[Draft], "n": int})
    assert misread(checked, {"draft": {"text": "a"}, "rows": [Draft(text="b")], "n": 1}) == {
        "draft": "stored value of `draft` does not read back as `Draft`: got `dict`"
    }
    assert misread(checked, {"rows": [Draft(text="b"), {"text": "c"}]}) == {
        "rows": "stored value of `rows` does not read back as `Draft`: got `dict`"
    }
    assert misread(checked, {"draft": None}) == {
        "draft": "stored value of `draft` does not read back as `Draft`: got `NoneType`"
    }


def test_values_that_read_back_as_declared_pass() -> None:
    checked = Revival(
        {
            "draft": Draft | None,
            "row": Row,
            "note": Note,
            "any": Any,
            "text": str,
            "pair": Pair,
            "by_key": dict[str, Draft],
        }
    )
    values = {
        "draft": None,
        "row": {"draft": Draft(text="a"), "n": 1},
        "note": Note("b", Draft(text="c")),
        "any": {"text": "a"},
        "text": 3,  # not the serializer's doing: not judged
        "pair": Pair(1, 2),
        "by_key": {"k": Draft(text="d")},
    }
    assert misread(checked, values) == {}


def test_a_field_of_a_revived_dataclass_is_checked() -> None:
    checked = Revival({"note": Note})
    assert misread(checked, {"note": Note("b", {"text": "c"})}) == {  # type: ignore[arg-type]
        "note": "stored value of `note` does not read back as `Draft | None`: got `dict`"
    }


def test_a_written_value_is_judged_by_its_class_alone() -> None:
    assert class_mismatch(Draft, {"text": "a"}) == ("Draft", "dict")
    assert class_mismatch(Draft | None, 3) == ("Draft | None", "int")
    assert class_mismatch(Pair, (1, 2)) == ("Pair", "tuple")
    assert class_mismatch(Note, Draft(text="a")) == ("Note", "Draft")
    # The right class passes, whatever it holds: only verify_writes looks inside.
    for tp, value in (
        (Row, {"draft": {"text": "a"}}),
        (list[Draft], [{"text": "a"}]),
        (Note, Note("b", {"text": "c"})),  # type: ignore[arg-type]
        (Draft | None, None),
        (Annotated[Draft, "meta"], Draft(text="a")),
        (Tone, Tone.PLAIN),
        (int, "not the serializer's doing"),
        (Any, object()),
    ):
        assert class_mismatch(tp, value) is None, (tp, value)


def test_a_pydantic_state_coerces_what_validates() -> None:
    checked = Revival({"draft": Draft}, coerced=frozenset({"draft"}))
    assert misread(checked, {"draft": {"text": "a"}}) == {}
    assert "draft" in misread(checked, {"draft": {"other": 1}})


def test_a_write_round_trip_names_what_came_back_otherwise() -> None:
    local = _local()
    assert _difference(local(text="a"), _round_trip(local(text="a"))) == "Local came back as dict"
    value = {"rows": [Draft(text="a")], "pair": ("x", 1), "at": Tone.PLAIN}
    assert _difference(value, _round_trip(value)) is None  # a tuple comes back as a list
    assert _difference({"k": 1}, {"k": 2}) == "int came back changed"


class Plain(TypedDict):
    n: int


class Fan(TypedDict, total=False):
    out: int


def test_a_send_to_a_node_with_a_typeddict_input_is_judged_by_its_keys() -> None:
    builder = StateGraph(Fan)
    builder.add_node("work", _work)
    builder.add_node("count", _count)
    builder.add_edge(START, "work")
    assert node_inputs(builder) == {"work": Row}  # `Plain` holds no class stored by path
    assert sends_misread({"work": Row}, [Send("work", {"draft": {"text": "a"}, "n": 1})]) == (
        "a stored Send to `work` does not read back as `Draft`: got `dict`"
    )
    assert sends_misread({"work": Row}, [Send("work", {"draft": Draft(text="a"), "n": 1})]) is None


def _work(given: Row) -> dict[str, Any]:
    return {}


def _count(given: Plain) -> dict[str, Any]:
    return {}


def test_the_tasks_whose_cached_results_no_checkpoint_revives_are_named() -> None:
    local = _local()
    checked = entrypoint_revival("flow", {}, {"write": local, "count": int, "keep": Draft}, True)
    assert unrevivable_tasks(checked, {"write": local, "count": int, "keep": Draft}) == {"write"}


def test_a_none_in_a_channel_a_node_clears_reads_back() -> None:
    """``create_agent`` clears ``structured_response`` with None before a final answer:
    a checkpoint a rewind forks from holds it, and it is no value that failed to revive."""
    types = cleared({"structured_response": Draft, "draft": Draft}, ["structured_response"])
    checked = Revival(types)
    assert misread(checked, {"structured_response": None, "draft": Draft(text="a")}) == {}
    assert misread(checked, {"structured_response": {"text": "a"}}) == {
        "structured_response": "stored value of `structured_response` does not read back as "
        "`Draft | None`: got `dict`"
    }
    assert misread(checked, {"draft": None}) != {}  # a channel nothing clears: as before
    assert cleared({"structured_response": {"type": "object"}}, ["structured_response"]) == {
        "structured_response": {"type": "object"}
    }
