"""The validator of a declared type: a ``typing.TypedDict`` at any depth validates as
the fingerprints read it, on every supported Python, never with pydantic's raw error."""

from __future__ import annotations

import sys
from typing import Annotated, NewType, NotRequired, Required, TypedDict

import pytest
from pydantic import Field, TypeAdapter, ValidationError
from pydantic.errors import PydanticUserError

from neograph_ext.decision._validation import adapter


class Inner(TypedDict):
    n: int


class Outer(TypedDict, total=False):
    inner: Required[Inner]
    tags: dict[str, list[Inner]]
    note: NotRequired[str]


class Tree(TypedDict):
    label: str
    children: list[Tree]


Wrapped = NewType("Wrapped", Inner)

VALID: list[tuple[object, object, object]] = [
    (list[Inner], [{"n": 1}], [{"n": 1}]),
    (Inner | None, {"n": "2"}, {"n": 2}),  # coerced as declared
    (
        Annotated[Outer, Field(description="x")],
        {"inner": {"n": 1}, "tags": {"a": [{"n": "2"}]}},
        {"inner": {"n": 1}, "tags": {"a": [{"n": 2}]}},
    ),
    (Tree, {"label": "a", "children": [{"label": "b", "children": []}]}, None),
    (Wrapped, {"n": 3}, {"n": 3}),
]
INVALID: list[tuple[object, object]] = [
    (list[Inner], [{"m": 1}]),
    (Outer, {"tags": {}}),  # `inner` is required whatever `total` says
    (dict[str, Outer], {"a": {"inner": {"n": "x"}}}),
    (Tree, {"label": "a"}),
]


@pytest.mark.parametrize(("tp", "value", "validated"), VALID)
def test_a_value_of_a_typing_typeddict_validates(
    tp: object, value: object, validated: object
) -> None:
    found = adapter(tp)
    assert found is not None
    assert found.validate_python(value) == (value if validated is None else validated)


@pytest.mark.parametrize(("tp", "value"), INVALID)
def test_a_value_missing_a_key_does_not_validate(tp: object, value: object) -> None:
    found = adapter(tp)
    assert found is not None
    with pytest.raises(ValidationError):
        found.validate_python(value)


def test_pydantic_alone_refuses_them_before_python_3_12() -> None:
    if sys.version_info >= (3, 12):
        assert TypeAdapter(Inner).validate_python({"n": 1}) == {"n": 1}
    else:
        with pytest.raises(PydanticUserError):
            TypeAdapter(Inner)


class Opaque:
    """A class pydantic has no schema for: the fingerprints name it by its path."""


def test_a_type_pydantic_has_no_validator_for_gets_none_never_an_error() -> None:
    assert adapter(list[Opaque]) is None
    assert adapter(Annotated[list[Inner], "meta"]) is not None
