"""A catalog of type changes: which ones must change a fingerprint and which must not.

Each case builds its type twice, ``build(False)`` (old) and ``build(True)`` (new). Both
are built the same way, with the same module and qualname, and differ only in the change
the case names; the rename and move cases are the deliberate exceptions.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import datetime
import enum
import operator
import typing
from collections.abc import Callable
from typing import (
    Annotated,
    Any,
    ClassVar,
    Literal,
    NamedTuple,
    NotRequired,
    Optional,
    Required,
    TypeVar,
    Union,
)

import annotated_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    PrivateAttr,
    computed_field,
    create_model,
    field_validator,
)
from typing_extensions import TypedDict

from neograph_ext.decision._fingerprint import diff, digest, fingerprint_type, signature

MOD = "catalog"
T = TypeVar("T")
Build = Callable[[bool], object]


def pick(new: bool, old_value: Any, new_value: Any) -> Any:
    return new_value if new else old_value


def req(tp: object) -> tuple[object, Any]:
    """A required pydantic field definition."""
    return (tp, ...)


def model(name: str = "Analysis", /, *, module: str = MOD, **fields: Any) -> type[BaseModel]:
    return create_model(name, __module__=module, __qualname__=name, **fields)


def fix(cls: Any, name: str | None = None, module: str = MOD) -> Any:
    """Give a class defined in a factory a stable module and qualname."""
    cls.__qualname__ = name or cls.__name__
    cls.__module__ = module
    return cls


def kind_enum(members: dict[str, object]) -> type[enum.Enum]:
    return enum.Enum("Kind", members, module=MOD, qualname="Kind")  # type: ignore[return-value]


def dataclass(fields: list[Any], name: str = "Record") -> type:
    return fix(dataclasses.make_dataclass(name, fields))


def typed_dict(fields: dict[str, Any], *, total: bool = True) -> type:
    return fix(TypedDict("State", fields, total=total))  # type: ignore[operator]


def nested(leaf: object, *, depth: int = 2) -> type[BaseModel]:
    """Report -> Meta -> Inner(tags: leaf), each level one field deeper."""
    current: type[BaseModel] = model("Inner", tags=req(leaf))
    for level in range(depth - 1):
        current = model(f"Level{level}", inner=req(current))
    return model("Report", meta=req(current))


def generic_page(arg: object) -> type[BaseModel]:
    class Page(BaseModel, typing.Generic[T]):
        items: list[T]

    fix(Page)
    return model(page=req(Page[arg]))  # type: ignore[valid-type]


def substituted(new: bool) -> type[BaseModel]:
    class Base(BaseModel):
        x: int

    class Sub(Base):
        pass

    fix(Base)
    fix(Sub)
    return model(item=req(Sub if new else Base))


def recursive(new: bool) -> type[BaseModel]:
    class Node(BaseModel):
        value: int
        children: tuple[Node, ...] if new else list[Node] = ()  # type: ignore[valid-type]

    return fix(Node)


def dataclass_or_model(new: bool) -> type:
    if new:
        return model("Record", x=req(int))
    return dataclass([("x", int)])


def named_tuple(new: bool, *, extra: bool = False, retype: bool = False) -> type:
    fields = [("x", float if retype and new else int)]
    if extra and new:
        fields.append(("y", int))
    return fix(NamedTuple("Point", fields))  # type: ignore[misc]


def typed_dict_in_model(new: bool) -> type[BaseModel]:
    state = typed_dict({"a": int, **({"b": str} if new else {})})
    return model(state=req(state))


BREAKING: list[tuple[str, Build]] = [
    # fields of a pydantic model
    ("field added, required", lambda n: model(x=req(int), **pick(n, {}, {"y": req(str)}))),
    ("field added, optional", lambda n: model(x=req(int), **pick(n, {}, {"y": (int, 0)}))),
    ("field removed", lambda n: model(x=req(int), **pick(n, {"y": req(str)}, {}))),
    ("field renamed", lambda n: model(**{pick(n, "x", "y"): req(int)})),
    ("int -> float", lambda n: model(x=req(pick(n, int, float)))),
    ("str -> bytes", lambda n: model(x=req(pick(n, str, bytes)))),
    ("bool -> int", lambda n: model(x=req(pick(n, bool, int)))),
    ("Any -> int", lambda n: model(x=req(pick(n, Any, int)))),
    ("datetime -> date", lambda n: model(x=req(pick(n, datetime.datetime, datetime.date)))),
    ("required -> optional", lambda n: model(x=pick(n, req(int), (int, 0)))),
    ("optional -> required", lambda n: model(x=pick(n, (int, None), req(int)))),
    ("X | None -> X", lambda n: model(x=req(pick(n, Optional[int], int)))),  # noqa: UP045
    ("union member added", lambda n: model(x=req(pick(n, int | str, int | str | float)))),
    ("union member removed", lambda n: model(x=req(pick(n, int | str, int)))),
    ("alias changed", lambda n: model(x=(int, Field(alias=pick(n, "a", "b"))))),
    # containers
    ("list -> set", lambda n: model(x=req(pick(n, list[int], set[int])))),
    ("set -> frozenset", lambda n: model(x=req(pick(n, set[int], frozenset[int])))),
    ("list -> variadic tuple", lambda n: model(x=req(pick(n, list[int], tuple[int, ...])))),
    ("variadic -> fixed tuple", lambda n: model(x=req(pick(n, tuple[int, ...], tuple[int, int])))),
    ("tuple order", lambda n: model(x=req(pick(n, tuple[int, str], tuple[str, int])))),
    ("dict value", lambda n: model(x=req(pick(n, dict[str, int], dict[str, float])))),
    ("dict key", lambda n: model(x=req(pick(n, dict[str, int], dict[int, int])))),
    ("nesting depth", lambda n: model(x=req(pick(n, list[str], list[list[str]])))),
    ("Sequence -> list", lambda n: model(x=req(pick(n, collections.abc.Sequence[int], list[int])))),
    ("Mapping -> dict", lambda n: model(x=req(pick(n, typing.Mapping[str, int], dict[str, int])))),
    # Literal
    ("Literal value added", lambda n: model(x=req(pick(n, Literal["a"], Literal["a", "b"])))),
    ("Literal 1 -> '1'", lambda n: model(x=req(pick(n, Literal[1], Literal["1"])))),
    ("Literal True -> 1", lambda n: model(x=req(pick(n, Literal[True], Literal[1])))),
    # pydantic constraints
    ("ge 0 -> 1", lambda n: model(x=(int, Field(ge=pick(n, 0, 1))))),
    ("le added", lambda n: model(x=(int, Field(ge=0, **pick(n, {}, {"le": 9}))))),
    ("gt -> ge", lambda n: model(x=(int, Field(**pick(n, {"gt": 0}, {"ge": 0}))))),
    ("lt changed", lambda n: model(x=(float, Field(lt=pick(n, 1.0, 2.0))))),
    ("max_length", lambda n: model(x=(str, Field(max_length=pick(n, 5, 10))))),
    ("min_length added", lambda n: model(x=(str, Field(**pick(n, {}, {"min_length": 1}))))),
    ("pattern", lambda n: model(x=(str, Field(pattern=pick(n, "^a", "^b"))))),
    ("multiple_of", lambda n: model(x=(int, Field(multiple_of=pick(n, 2, 3))))),
    ("strict", lambda n: model(x=(int, Field(strict=pick(n, False, True))))),
    (
        "constraint inside a list",
        lambda n: model(x=req(list[pick(n, int, Annotated[int, annotated_types.Gt(0)])])),  # type: ignore[misc]
    ),
    # nested models, renames, moves
    ("depth 2 retype", lambda n: nested(pick(n, list[str], set[str]))),
    ("depth 4 retype", lambda n: nested(pick(n, int, float), depth=4)),
    ("class renamed", lambda n: model(pick(n, "Analysis", "Analysis2"), x=req(int))),
    ("class moved", lambda n: model(x=req(int), module=pick(n, "pkg.a", "pkg.b"))),
    ("nested class renamed", lambda n: model(meta=req(model(pick(n, "Meta", "Meta2"))))),
    ("nested class moved", lambda n: model(meta=req(model("Meta", module=pick(n, "a", "b"))))),
    ("subclass stands in for base", substituted),
    ("generic argument", lambda n: generic_page(pick(n, int, str))),
    ("recursive model list -> tuple", recursive),
    ("nested TypedDict key added", typed_dict_in_model),
    # enums
    ("enum member added", lambda n: kind_enum(pick(n, {"RED": 1}, {"RED": 1, "BLUE": 2}))),
    ("enum member removed", lambda n: kind_enum(pick(n, {"RED": 1, "BLUE": 2}, {"RED": 1}))),
    ("enum value changed", lambda n: kind_enum({"RED": pick(n, 1, "red")})),
    ("enum member renamed", lambda n: kind_enum({pick(n, "RED", "CRIMSON"): 1})),
    ("enum in a model", lambda n: model(kind=req(kind_enum({"RED": pick(n, 1, 2)})))),
    # dataclasses, TypedDicts, NamedTuples
    ("dataclass retype", lambda n: dataclass([("x", pick(n, int, str))])),
    (
        "dataclass default removed",
        lambda n: dataclass(pick(n, [("x", int, dataclasses.field(default=0))], [("x", int)])),
    ),
    ("dataclass -> pydantic model", dataclass_or_model),
    ("TypedDict total -> not total", lambda n: typed_dict({"a": int}, total=pick(n, True, False))),
    ("TypedDict NotRequired", lambda n: typed_dict({"a": pick(n, int, NotRequired[int])})),
    ("TypedDict Required", lambda n: typed_dict({"a": pick(n, int, Required[int])}, total=False)),
    ("TypedDict key retyped", lambda n: typed_dict({"a": pick(n, int, list[int])})),
    ("NamedTuple field added", lambda n: named_tuple(n, extra=True)),
    ("NamedTuple field retyped", lambda n: named_tuple(n, retype=True)),
]

RENAMES = {"class renamed", "class moved"}


def method_added(new: bool) -> type[BaseModel]:
    if new:

        class Analysis(BaseModel):
            """Now documented, with behaviour that stored data never sees."""

            x: int
            cap: ClassVar[int] = 3
            _cache: dict[str, int] = PrivateAttr(default_factory=dict)
            _hidden = 5

            def double(self) -> int:
                return self.x * 2

            @property
            def triple(self) -> int:
                return self.x * 3

            @computed_field  # type: ignore[prop-decorator]
            @property
            def quadruple(self) -> int:
                return self.x * 4

            @field_validator("x")
            @classmethod
            def positive(cls, value: int) -> int:
                return abs(value)

    else:

        class Analysis(BaseModel):  # type: ignore[no-redef]
            x: int

    return fix(Analysis)


def enum_with_method(new: bool) -> type[enum.Enum]:
    if new:

        class Kind(enum.Enum):
            """Documented."""

            RED = 1

            def label(self) -> str:
                return self.name.lower()

    else:

        class Kind(enum.Enum):  # type: ignore[no-redef]
            RED = 1

    return fix(Kind)  # type: ignore[no-any-return]


def private_dataclass_field(new: bool) -> type:
    fields: list[Any] = [("x", int)]
    if new:
        fields.append(("_cache", dict, dataclasses.field(default_factory=dict)))
    return dataclass(fields)


def described(new: bool) -> type[BaseModel]:
    if new:
        extra = {"description": "d", "title": "T", "examples": [1], "json_schema_extra": {"a": 1}}
        return model(x=(int, Field(**extra)))  # type: ignore[arg-type]
    return model(x=req(int))


def field_order(new: bool) -> type[BaseModel]:
    fields = {"a": req(int), "b": (str, "x"), "c": req(list[int])}
    return model(**dict(reversed(fields.items())) if new else fields)


def _doubled(value: int) -> int:
    return value * 2


def _merge(left: list[str], right: list[str]) -> list[str]:
    """Stands in for LangGraph's add_messages reducer."""
    return left + right


HARMLESS: list[tuple[str, Build]] = [
    ("field order", field_order),
    ("Optional[X] vs X | None", lambda n: model(x=req(pick(n, Optional[int], int | None)))),  # noqa: UP045
    (
        "Union[X, None] vs Optional[X]",
        lambda n: model(x=req(pick(n, Union[int, None], Optional[int]))),  # noqa: UP007, UP045
    ),
    ("union member order", lambda n: model(x=req(pick(n, int | str | None, None | str | int)))),
    (
        "nested unions flatten",
        lambda n: model(x=req(pick(n, Union[int | str, None], int | str | None))),  # noqa: UP007
    ),
    ("List[int] vs list[int]", lambda n: model(x=req(pick(n, typing.List[int], list[int])))),  # noqa: UP006
    ("Dict vs dict", lambda n: model(x=req(pick(n, typing.Dict[str, int], dict[str, int])))),  # noqa: UP006
    ("Tuple vs tuple", lambda n: model(x=req(pick(n, typing.Tuple[int, ...], tuple[int, ...])))),  # noqa: UP006
    ("Set vs set", lambda n: model(x=req(pick(n, typing.Set[int], set[int])))),  # noqa: UP006
    (
        "typing.Sequence vs collections.abc.Sequence",
        lambda n: model(x=req(pick(n, typing.Sequence[int], collections.abc.Sequence[int]))),
    ),
    ("bare list vs list[Any]", lambda n: model(x=req(pick(n, list, list[Any])))),
    (
        "duplicate union members",
        lambda n: model(x=req(pick(n, typing.List[int] | list[int], list[int]))),  # noqa: UP006
    ),
    ("Literal order", lambda n: model(x=req(pick(n, Literal["a", "b", 1], Literal[1, "b", "a"])))),
    (
        "docstring",
        lambda n: create_model(
            "Analysis", __module__=MOD, __doc__=pick(n, None, "Doc."), x=req(int)
        ),
    ),
    ("description, title, examples", described),
    ("default value", lambda n: model(x=(int, pick(n, 1, 2)))),
    (
        "default factory vs default",
        lambda n: model(x=pick(n, (list[int], []), (list[int], Field(default_factory=list)))),
    ),
    ("methods, properties, validators, ClassVars, private attrs", method_added),
    (
        "docs-only Annotated metadata",
        lambda n: model(x=req(pick(n, int, Annotated[int, "the answer"]))),
    ),
    (
        "reducer operator.add",
        lambda n: typed_dict({"msgs": pick(n, list[str], Annotated[list[str], operator.add])}),
    ),
    (
        "reducer function",
        lambda n: typed_dict({"msgs": pick(n, list[str], Annotated[list[str], _merge])}),
    ),
    (
        "validator in Annotated",
        lambda n: model(x=req(pick(n, int, Annotated[int, AfterValidator(_doubled)]))),
    ),
    (
        "Field(ge=) vs Annotated[Ge]",
        lambda n: model(x=pick(n, (int, Field(ge=0)), req(Annotated[int, annotated_types.Ge(0)]))),
    ),
    (
        "description inside Annotated",
        lambda n: typed_dict({"a": pick(n, int, Annotated[int, Field(description="why")])}),
    ),
    (
        "TypedDict key order",
        lambda n: typed_dict(pick(n, {"a": int, "b": str}, {"b": str, "a": int})),
    ),
    ("enum docstring and method", enum_with_method),
    ("dataclass private field", private_dataclass_field),
    (
        "dataclass default value",
        lambda n: dataclass([("x", int, dataclasses.field(default=pick(n, 1, 2)))]),
    ),
]


def _pair(build: Build) -> tuple[object, object]:
    return build(False), build(True)


@pytest.mark.parametrize(("name", "build"), BREAKING, ids=[name for name, _ in BREAKING])
def test_breaking_change_changes_digest_and_diff(name: str, build: Build) -> None:
    old, new = _pair(build)
    old_sig, new_sig = signature(old), signature(new)
    if name not in RENAMES:  # the catalog's own rule: only the change differs
        assert old_sig["root"] == new_sig["root"]
    assert fingerprint_type(old) != fingerprint_type(new)
    lines = diff(old_sig, new_sig)
    assert lines
    assert all(line and "no field-level detail" not in line for line in lines)


@pytest.mark.parametrize(("name", "build"), HARMLESS, ids=[name for name, _ in HARMLESS])
def test_harmless_change_keeps_digest(name: str, build: Build) -> None:
    old, new = _pair(build)
    assert old is not new
    assert signature(old) == signature(new)
    assert fingerprint_type(old) == fingerprint_type(new)
    assert diff(signature(old), signature(new)) == []


def test_catalog_is_large_enough() -> None:
    assert len(BREAKING) >= 40
    assert len(HARMLESS) >= 20
    assert len({name for name, _ in BREAKING + HARMLESS}) == len(BREAKING) + len(HARMLESS)


def test_building_twice_is_stable() -> None:
    """Guards the catalog itself: a case's old type built twice fingerprints the same."""
    for _, build in BREAKING + HARMLESS:
        assert fingerprint_type(build(False)) == fingerprint_type(build(False))


@settings(deadline=None, max_examples=len(BREAKING) * 2)
@given(st.sampled_from(BREAKING))
def test_every_breaking_change_yields_a_diff(case: tuple[str, Build]) -> None:
    _, make = case
    old, new = signature(make(False)), signature(make(True))
    assert digest(old) != digest(new)
    assert diff(old, new)
    assert diff(new, old)
