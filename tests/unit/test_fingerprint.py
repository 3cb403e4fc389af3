"""Signatures, digests and diffs of types: shapes, stability, readability."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import hashlib
import json
import operator
import os
import pathlib
import subprocess
import sys
import typing
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import (
    Annotated,
    Any,
    ForwardRef,
    Literal,
    NamedTuple,
    NewType,
    NotRequired,
    Optional,
    Required,
    TypeVar,
)

import annotated_types
import pytest
from pydantic import BaseModel, Field, create_model
from pydantic.dataclasses import dataclass as pydantic_dataclass
from typing_extensions import Doc, TypeAliasType, TypedDict

from neograph_ext.decision import _fingerprint
from neograph_ext.decision._errors import NeographExtError
from neograph_ext.decision._fingerprint import (
    FORMAT_VERSION,
    UnresolvedTypeError,
    diff,
    digest,
    fingerprint_type,
    signature,
)
from neograph_ext.decision._typediff import render

TYPES_DIR = pathlib.Path(__file__).parent
MOD = "shapes"


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The test-only types module, imported under the name subprocesses use too."""
    monkeypatch.syspath_prepend(str(TYPES_DIR))
    from fingerprint_types import models

    return models


def model(name: str, /, *, module: str = MOD, **fields: Any) -> type[BaseModel]:
    return create_model(name, __module__=module, __qualname__=name, **fields)


def root(tp: object) -> Any:
    return signature(tp)["root"]


# --- the contract -----------------------------------------------------------------------


def test_public_names() -> None:
    assert sorted(_fingerprint.__all__) == [
        "FORMAT_VERSION",
        "Signature",
        "UnresolvedTypeError",
        "diff",
        "digest",
        "fingerprint_type",
        "signature",
        "without_storage_kind",
    ]


def test_fingerprint_is_digest_of_signature() -> None:
    sig = signature(dict[str, list[int]])
    text = json.dumps({"v": FORMAT_VERSION, **sig}, sort_keys=True, separators=(",", ":"))
    assert digest(sig) == hashlib.sha256(text.encode()).hexdigest()
    assert fingerprint_type(dict[str, list[int]]) == digest(sig)


# Pinned on purpose: any change to the canonical form must fail here. When it is
# intended, bump FORMAT_VERSION and re-pin these digests in the same change.
PINNED_VERSION = 1
PINNED = {
    "int": "eb4b97eaa20df1f5c00a5c576d0261d82016dd7a2c07528729b15d038074cb7a",
    "optional_list": "e99f40b3e80be9d68ee5b7108b70072d885671491ea778fcfaa2dea389e839aa",
    "literal": "2b584ac5433c2a66385db528ed6c2fda09b8b7afc7c7bc3a456e3d31bb5d6a04",
    "color": "23eb782421d2a4bbd4732f57ef04e491761027b2fdb90d0b00e79d03865c1bfa",
    "page_int": "ed892dc51939087c4af1e21b1dcfd8589a6a59b8a8c0d45aa697061894d657e4",
    "state": "2a5737e2b39004f1e718e9fc10cb11d324cf04f8626dbee7acabafccdac84eff",
    "forest": "f58b3ce5b018e24a34caf49e14c0df395ed5d0801b445d309e5c62266a1babb8",
    "report": "fbb834e127b76a2223335120ce491fb18dc989f668cab65f673463cd44ee7689",
}


def test_pinned_digests(models: ModuleType) -> None:
    assert FORMAT_VERSION == PINNED_VERSION
    cases = models.cases()
    assert {name: fingerprint_type(cases[name]) for name in PINNED} == PINNED


@pytest.mark.slow
def test_digest_is_the_same_in_other_processes_and_hash_seeds(models: ModuleType) -> None:
    here = {name: fingerprint_type(tp) for name, tp in models.cases().items()}
    code = (
        "import json\n"
        "from fingerprint_types import models\n"
        "from neograph_ext.decision._fingerprint import fingerprint_type\n"
        "print(json.dumps({n: fingerprint_type(t) for n, t in models.cases().items()}))\n"
    )
    repo = TYPES_DIR.parent.parent
    answers = []
    for seed in ("0", "1", "4242"):
        env = {
            **os.environ,
            "PYTHONHASHSEED": seed,
            "PYTHONPATH": os.pathsep.join([str(TYPES_DIR), str(repo)]),
        }
        done = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        answers.append(json.loads(done.stdout))
    assert answers[0] == answers[1] == answers[2] == here


def test_signature_round_trips_through_json(models: ModuleType) -> None:
    for tp in models.cases().values():
        sig = signature(tp)
        loaded = json.loads(json.dumps(sig))
        assert loaded == sig
        assert digest(loaded) == digest(sig)
        assert diff(loaded, sig) == []


def test_signature_is_fresh_each_call(models: ModuleType) -> None:
    first = signature(models.Report)
    first["defs"].clear()
    assert signature(models.Report)["defs"]


def test_fifty_field_model_is_compact() -> None:
    fields: dict[str, Any] = {f"field_{i:02}": (int, ...) for i in range(20)}
    fields |= {f"name_{i:02}": (Optional[str], None) for i in range(15)}  # noqa: UP045
    fields |= {f"ratio_{i:02}": (float, Field(ge=0, le=1)) for i in range(15)}
    wide = model("Wide", module="my_project.models.analysis", **fields)
    text = json.dumps(signature(wide))
    assert len(wide.model_fields) == 50
    assert len(text) < 4096


# --- shapes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (int, "int"),
        (None, "None"),
        (type(None), "None"),
        (Any, "Any"),
        (bytes, "bytes"),
        (datetime.datetime, "datetime:datetime"),
        (datetime.timedelta, "datetime:timedelta"),
        (uuid.UUID, "uuid:UUID"),
        (decimal.Decimal, "decimal:Decimal"),
        (list, ["list", "Any"]),
        (typing.List, ["list", "Any"]),  # noqa: UP006
        (dict, ["dict", "Any", "Any"]),
        (tuple, ["tuple", "Any", "..."]),
        (typing.Tuple, ["tuple", "Any", "..."]),  # noqa: UP006
        (tuple[()], ["tuple"]),
        (tuple[int, str], ["tuple", "int", "str"]),
        (tuple[int, ...], ["tuple", "int", "..."]),
        (frozenset[int], ["frozenset", "int"]),
        (Sequence[int], ["collections.abc:Sequence", "int"]),
        (typing.Mapping[str, int], ["collections.abc:Mapping", "str", "int"]),
        (collections.deque[int], ["collections:deque", "int"]),
        (type[int], ["type", "int"]),
        (Optional[int], ["Union", "None", "int"]),  # noqa: UP045
        (str | int | None, ["Union", "None", "int", "str"]),
        (Literal["b", "a", 2, True, None], ["Literal", "a", "b", 2, None, True]),
        (
            Annotated[int, annotated_types.Interval(ge=0, lt=5)],
            ["Annotated", "int", {"ge": 0, "lt": 5}],
        ),
        (Annotated[str, "docs", operator.add], "str"),
        (Callable[[int], str], ["collections.abc:Callable", ["params", "int"], "str"]),
        (Callable[..., str], ["collections.abc:Callable", "...", "str"]),
        (TypeVar("T"), ["TypeVar", "T"]),
    ],
    ids=repr,
)
def test_expression_shapes(tp: object, expected: Any) -> None:
    assert root(tp) == expected


def test_pydantic_constraints_are_kept_and_docs_dropped() -> None:
    shaped = model(
        "Shaped",
        n=(int, Field(ge=0, le=10, description="count", title="N", examples=[3])),
        f=(float, Field(gt=0, lt=1, multiple_of=0.5)),
        s=(str, Field(min_length=1, max_length=5, pattern=r"^\w+$")),
        plain=(int, Field(description="only docs")),
    )
    fields = signature(shaped)["defs"]["shapes:Shaped"]["fields"]
    assert fields["n"]["t"] == ["Annotated", "int", {"ge": 0, "le": 10}]
    assert fields["f"]["t"] == ["Annotated", "float", {"gt": 0, "lt": 1, "multiple_of": 0.5}]
    assert fields["s"]["t"] == [
        "Annotated",
        "str",
        {"min_length": 1, "max_length": 5, "pattern": r"^\w+$"},
    ]
    assert fields["plain"] == {"t": "int", "req": True}


def test_unknown_metadata_counts_by_class_path_only() -> None:
    class Marker:
        def __init__(self) -> None:
            self.nonce = id(self)

    Marker.__module__, Marker.__qualname__ = MOD, "Marker"
    first, second = root(Annotated[int, Marker()]), root(Annotated[int, Marker()])
    assert first == second == ["Annotated", "int", {"other": ["shapes:Marker"]}]


def test_model_definition_shape() -> None:
    inner = model("Inner", tags=(list[str], ...))
    outer = model("Outer", inner=(inner, ...), note=(str | None, None), n=(int, Field(alias="N")))
    assert signature(outer) == {
        "root": "shapes:Outer",
        "defs": {
            "shapes:Inner": {
                "kind": "pydantic",
                "fields": {"tags": {"t": ["list", "str"], "req": True}},
            },
            "shapes:Outer": {
                "kind": "pydantic",
                "fields": {
                    "inner": {"t": "shapes:Inner", "req": True},
                    "n": {"t": "int", "req": True, "alias": "N"},
                    "note": {"t": ["Union", "None", "str"], "req": False},
                },
            },
        },
    }


def test_generic_pydantic_model_is_named_by_its_arguments(models: ModuleType) -> None:
    sig = signature(models.Page[models.Inner])
    key = "fingerprint_types.models:Page[fingerprint_types.models:Inner]"
    assert sig["root"] == key
    assert sig["defs"][key]["origin"] == "fingerprint_types.models:Page"
    assert sig["defs"][key]["args"] == ["fingerprint_types.models:Inner"]
    assert sig["defs"][key]["fields"]["items"]["t"] == ["list", "fingerprint_types.models:Inner"]
    assert fingerprint_type(models.Page[int]) != fingerprint_type(models.Page[str])
    assert fingerprint_type(models.Page[int]) == fingerprint_type(models.Page[int])


def test_generic_dataclass_binds_its_type_variables() -> None:
    T = TypeVar("T")

    @dataclasses.dataclass
    class Box(typing.Generic[T]):
        item: T
        items: list[T]

    Box.__module__, Box.__qualname__ = MOD, "Box"
    sig = signature(Box[int])
    assert sig["root"] == "shapes:Box[int]"
    assert sig["defs"]["shapes:Box[int]"]["fields"] == {
        "item": {"t": "int", "req": True},
        "items": {"t": ["list", "int"], "req": True},
    }
    assert signature(Box)["defs"]["shapes:Box"]["fields"]["item"]["t"] == ["TypeVar", "T"]


def test_enum_members_and_values(models: ModuleType) -> None:
    assert signature(models.Color)["defs"]["fingerprint_types.models:Color"] == {
        "kind": "enum",
        "members": {"BLUE": 3, "GREEN": "green", "RED": "red"},
    }
    enum_literal = root(Literal[models.Color.RED])
    assert enum_literal == ["Literal", {"enum": "fingerprint_types.models:Color", "member": "RED"}]


def test_typeddict_requiredness() -> None:
    class Loose(TypedDict, total=False):
        a: int
        b: Required[int]

    class Tight(TypedDict):
        c: int
        d: NotRequired[int]

    class Quoted(TypedDict, total=False):
        e: Required[int]  # a string under `from __future__ import annotations`

    def fields(tp: type) -> dict[str, bool]:
        (definition,) = signature(tp)["defs"].values()
        return {name: field["req"] for name, field in definition["fields"].items()}

    assert fields(Loose) == {"a": False, "b": True}
    assert fields(Tight) == {"c": True, "d": False}
    assert fields(Quoted) == {"e": True}


def test_dataclass_namedtuple_newtype_and_pydantic_dataclass() -> None:
    @dataclasses.dataclass
    class Plain:
        x: int
        y: list[str] = dataclasses.field(default_factory=list)
        _private: int = 0

    @pydantic_dataclass
    class Checked:
        x: int = Field(ge=0)

    class Pair(NamedTuple):
        a: int
        b: str = ""

    UserId = NewType("UserId", int)
    assert next(iter(signature(Plain)["defs"].values()))["fields"] == {
        "x": {"t": "int", "req": True},
        "y": {"t": ["list", "str"], "req": False},
    }
    assert next(iter(signature(Checked)["defs"].values())) == {
        "kind": "dataclass",
        "fields": {"x": {"t": ["Annotated", "int", {"ge": 0}], "req": True}},
    }
    assert next(iter(signature(Pair)["defs"].values()))["fields"]["b"] == {"t": "str", "req": False}
    assert root(UserId) == ["NewType", f"{__name__}:UserId", "int"]


def test_other_classes_are_their_import_path_never_their_repr() -> None:
    class Shifty(type):
        def __repr__(cls) -> str:
            return f"<Shifty {id(cls)}>"

    def make() -> type:
        cls = Shifty("Opaque", (), {})
        cls.__module__, cls.__qualname__ = MOD, "Opaque"
        return cls

    assert root(make()) == "shapes:Opaque"
    assert fingerprint_type(list[make()]) == fingerprint_type(list[make()])  # type: ignore[misc]
    assert root(pathlib.Path) == "pathlib:Path"


def test_stdlib_classes_use_their_public_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pathlib.Path`` lives in ``pathlib._local`` since 3.13; the name must not move."""
    hidden = type("Hidden", (), {"__module__": "collections._hidden"})
    monkeypatch.setattr(collections, "Hidden", hidden, raising=False)
    assert root(hidden) == "collections:Hidden"


# --- recursion and forward references ----------------------------------------------------


def test_recursive_types_terminate(models: ModuleType) -> None:
    node = signature(models.Node)
    assert node["defs"]["fingerprint_types.models:Node"]["fields"]["children"]["t"] == [
        "list",
        "fingerprint_types.models:Node",
    ]
    forest = signature(models.Forest)["defs"]
    assert set(forest) == {"fingerprint_types.models:Forest", "fingerprint_types.models:Tree"}
    json_alias = signature(models.Json)
    assert json_alias["root"] == "fingerprint_types.models:Json"
    assert "fingerprint_types.models:Json" in json.dumps(json_alias["defs"])


def test_recursive_dataclass_with_string_annotations() -> None:
    @dataclasses.dataclass
    class Chain:
        value: int
        next: Chain | None = None

    Chain.__module__, Chain.__qualname__ = MOD, "Chain"
    fields = signature(Chain)["defs"]["shapes:Chain"]["fields"]
    assert fields["next"]["t"] == ["Union", "None", "shapes:Chain"]


def test_forward_reference_resolved_in_the_owners_module() -> None:
    assert root(ForwardRef("Optional[int]", module="typing")) == ["Union", "None", "int"]
    assert root("list[int]") == ["list", "int"]


@pytest.mark.parametrize("bad", ["NoSuchType", ForwardRef("list[NoSuchType]"), "list['Nope']"])
def test_unresolvable_forward_reference_raises_typed_error(bad: object) -> None:
    with pytest.raises(UnresolvedTypeError) as caught:
        signature(bad)
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, NeographExtError)


def test_unresolvable_field_of_an_incomplete_model() -> None:
    class Broken(BaseModel):
        x: MissingName  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(UnresolvedTypeError, match="MissingName"):
        fingerprint_type(Broken)
    with pytest.raises(UnresolvedTypeError):
        fingerprint_type(list[Broken])


# --- diff --------------------------------------------------------------------------------


def _pair(build: Callable[[bool], object]) -> tuple[dict[str, Any], dict[str, Any]]:
    return signature(build(False)), signature(build(True))


def test_diff_field_added_and_retyped() -> None:
    def analysis(new: bool) -> type[BaseModel]:
        extra = {"confidence": (float | None, None)} if new else {}
        return model("Analysis", score=(float if new else int, ...), **extra)

    assert diff(*_pair(analysis)) == [
        "Analysis.confidence: added (float | None, optional)",
        "Analysis.score: int -> float",
    ]


def test_diff_at_depth_names_the_dotted_path() -> None:
    def report(new: bool) -> type[BaseModel]:
        inner = model("Inner", tags=(set[str] if new else list[str], ...))
        return model("Report", meta=(inner, ...))

    assert diff(*_pair(report)) == ["Report.meta.Inner.tags: list[str] -> set[str]"]


def test_diff_through_containers_and_removed_fields() -> None:
    def report(new: bool) -> type[BaseModel]:
        item = model("Item", price=(float, ...), **({} if new else {"sku": (str, ...)}))
        return model("Report", items=(list[item], ...), by_id=(dict[str, item] | None, None))  # type: ignore[valid-type]

    assert diff(*_pair(report)) == [
        "Report.by_id.Item.sku: removed (was str, required)",
    ]


def test_diff_enum_members() -> None:
    def kind(new: bool) -> type[enum.Enum]:
        members = {"RED": 1, "BLUE": 3} if new else {"RED": 2, "GREEN": 2}
        return enum.Enum("Kind", members, module=MOD, qualname="Kind")  # type: ignore[return-value]

    assert diff(*_pair(kind)) == [
        "Kind: member BLUE added",
        "Kind: member GREEN removed",
        "Kind.RED: value 2 -> 1",
    ]


def test_diff_class_renamed_and_moved() -> None:
    old = signature(model("Analysis", x=(int, ...)))
    assert diff(old, signature(model("Analysis2", x=(int, ...)))) == [
        "class renamed: Analysis -> Analysis2"
    ]
    assert diff(old, signature(model("Analysis", module="elsewhere", x=(float, ...)))) == [
        "class moved: shapes.Analysis -> elsewhere.Analysis",
        "Analysis.x: int -> float",
    ]


def test_diff_requiredness_constraints_and_literals() -> None:
    def build(new: bool) -> type[BaseModel]:
        return model(
            "Form",
            age=(int, Field(ge=18 if new else 0)),
            name=(str, "anon") if new else (str, ...),
            mode=(Literal["a", "b", "c"] if new else Literal["a", "b"], "a"),
        )

    assert diff(*_pair(build)) == [
        "Form.age: Annotated[int, ge=0] -> Annotated[int, ge=18]",
        'Form.mode: Literal["a", "b"] -> Literal["a", "b", "c"]',
        "Form.name: required -> optional",
    ]


def test_diff_of_non_class_roots_and_recursive_types(models: ModuleType) -> None:
    assert diff(signature(list[int]), signature(set[int])) == ["type: list[int] -> set[int]"]
    assert diff(signature(models.Node), signature(models.Node)) == []
    assert diff(signature(models.Forest), signature(models.Tree)) == [
        "class renamed: Forest -> Tree",
        "Tree.forest: added (Forest | None, optional)",
        "Tree.height: added (Annotated[float, gt=0, le=100], required)",
        "Tree.trees: removed (was list[Tree], required)",
    ]


def test_diff_is_empty_only_for_equal_signatures() -> None:
    sig = signature(model("A", x=(int, ...)))
    assert diff(sig, json.loads(json.dumps(sig))) == []
    odd = {**sig, "extra": 1}
    assert diff(sig, odd) == ["signature changed (no field-level detail available)"]


def _all_json_scalars(value: Any) -> Iterator[Any]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            assert isinstance(key, str)
            yield from _all_json_scalars(item)
    elif isinstance(value, list):
        for item in value:
            yield from _all_json_scalars(item)
    else:
        yield value


def test_signatures_hold_plain_json_values_only(models: ModuleType) -> None:
    odd = Annotated[
        datetime.datetime,
        annotated_types.Gt(datetime.datetime(2024, 1, 1)),
        annotated_types.Timezone(None),
    ]
    alias = TypeAliasType("Alias", list[odd])  # type: ignore[valid-type]
    for tp in [
        *models.cases().values(),
        odd,
        alias,
        Literal[b"x"],
        Annotated[float, Field(ge=float("inf"))],
    ]:
        for scalar in _all_json_scalars(signature(tp)):
            assert scalar is None or type(scalar) in (str, int, float, bool)


def test_render_covers_every_expression_kind() -> None:
    user_id = NewType("UserId", int)
    cases = {
        Callable[[int, str], None]: "collections.abc.Callable[[int, str], None]",
        tuple[()]: "tuple[()]",
        tuple[int, ...]: "tuple[int, ...]",
        TypeVar("T"): "~T",
        user_id: f"{__name__}.UserId",
        Literal[b"x", 1.5, None]: 'Literal[1.5, None, bytes("78")]',
        dict[str, Annotated[int, Field(gt=0)]]: "dict[str, Annotated[int, gt=0]]",
    }
    for tp, text in cases.items():
        sig = signature(tp)
        assert render(sig["root"], sig["defs"]) == text


def test_doc_metadata_is_dropped() -> None:
    assert root(Annotated[int, Doc("the answer")]) == "int"
