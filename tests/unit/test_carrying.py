"""Whether a stored value still validates (``_carrying.carry_for``): only as the current
version of its own class, matched by module and name as the serializer revives it,
never as another member of a union its fields would fit too."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, RootModel

from neograph_ext.decision._carrying import Carrying, carry_for, invalid
from tests.graphs.pipelines import model

AItemV1 = model("AItem", text=(str, ...))
AItemV2 = model("AItem", text=(str, ...), score=(int, ...))
BItem = model("BItem", text=(str, ...))


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"


class Tags(RootModel[list[str]]):
    pass


def _kept(tp: object, value: Any) -> bool:
    found = carry_for(Carrying({"ch": tp}, frozenset({"ch"})), frozenset({"ch"}), {"ch": value})
    return "ch" in found.compatible


def test_an_item_that_misses_a_field_of_its_own_class_is_not_kept_as_another_member() -> None:
    # As the serializer revives it after the deploy: model_construct, without `score`.
    stored = [AItemV2.model_construct(text="a1"), BItem(text="b2")]
    assert not _kept(list[AItemV2 | BItem], stored)
    assert "score" in (invalid(list[AItemV2 | BItem], stored) or "")


def test_items_that_still_validate_keep_their_own_class() -> None:
    stored = [AItemV1(text="a1"), BItem(text="b2")]
    assert _kept(list[BItem | AItemV1], stored)  # `AItem` last: its fields fit `BItem`


def test_a_class_matched_by_module_and_name_is_validated_by_the_declared_one() -> None:
    # Another class object at the same path (a module reloaded): the declared one judges.
    assert _kept(list[AItemV2 | BItem], [AItemV1(text="a1")]) is False
    assert _kept(list[AItemV1 | BItem], [AItemV2.model_construct(text="a1", score=1)])


def test_discriminated_unions_and_root_models_validate_as_themselves() -> None:
    pets = list[Annotated[Cat | Dog, Field(discriminator="kind")]]
    assert _kept(pets, [Cat(lives=1), Dog()])
    assert not _kept(pets, [Cat.model_construct(kind="cat")])  # `lives` missing
    assert _kept(list[Tags], [Tags(["a"])]) and _kept(Tags, ["a"])
    assert not _kept(Tags, [1, {"a": 2}])
