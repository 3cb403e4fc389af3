"""A fixed set of types whose fingerprints must not depend on the process or hash seed.

Imported both in the test process and in subprocesses started with other
``PYTHONHASHSEED`` values; ``cases()`` names each type.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import operator
from collections.abc import Mapping, Sequence
from typing import Annotated, Generic, Literal, NamedTuple, NotRequired, TypeVar

from pydantic import BaseModel, Field
from typing_extensions import TypeAliasType, TypedDict

T = TypeVar("T")


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"
    BLUE = 3


class Inner(BaseModel):
    tags: set[str]
    when: datetime.datetime | None = None


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: Annotated[int, Field(ge=0)] = 0


class Point(NamedTuple):
    x: float
    y: float = 0.0


@dataclasses.dataclass
class Span:
    start: datetime.date
    end: datetime.date | None = None


class State(TypedDict, total=False):
    messages: Annotated[list[str], operator.add]
    step: NotRequired[int]
    mode: Literal["fast", "slow"]


class Node(BaseModel):
    value: int
    children: list[Node] = []


class Forest(BaseModel):
    trees: list[Tree]


class Tree(BaseModel):
    forest: Forest | None = None
    height: float = Field(gt=0, le=100)


Forest.model_rebuild()

Json = TypeAliasType("Json", "dict[str, Json] | list[Json] | str | int | float | bool | None")


class Report(BaseModel):
    title: str = Field(max_length=80, description="shown to the user")
    score: Annotated[float, Field(ge=0, le=1)]
    color: Color
    inner: Inner
    page: Page[Inner]
    points: tuple[Point, ...]
    span: Span
    state: State
    tree: Tree
    extra: Mapping[str, Sequence[bytes]] = {}
    payload: Json = None


def cases() -> dict[str, object]:
    """Name -> type, for fingerprinting in this process and in subprocesses."""
    return {
        "int": int,
        "optional_list": list[int] | None,
        "dict_of_unions": dict[str, int | str | None],
        "literal": Literal["b", "a", 3],
        "color": Color,
        "inner": Inner,
        "page_int": Page[int],
        "point": Point,
        "span": Span,
        "state": State,
        "node": Node,
        "forest": Forest,
        "json": Json,
        "report": Report,
    }
