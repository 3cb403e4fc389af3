"""The digest of a task call (``_call_digest``): by value, canonical, the same in every
process; pinned, so any drift of the encoding fails here (then bump ``DIGEST_FORMAT``)."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import os
import subprocess
import sys
import uuid
from typing import Any

import pydantic
import pytest

from neograph_ext.decision._call_digest import DIGEST_FORMAT, call_digest


class Topic(pydantic.BaseModel):
    name: str
    tags: list[str]


@dataclasses.dataclass
class Note:
    text: str


class Mood(enum.Enum):
    CALM = "calm"


class Opaque:
    """A value no encoding reads: it counts by its type."""


def _d(*args: Any, **kwargs: Any) -> str | None:
    return call_digest("summ", args, kwargs)


def test_the_digest_is_pinned() -> None:
    assert DIGEST_FORMAT == "c1"
    assert _d("alpha") == "c1:0e62fbd173a689444c19c6ec083daec8be44db5d55ac0ca4649cc021ba10711f"


def test_values_that_differ_give_digests_that_differ() -> None:
    found = [_d(1), _d("1"), _d(1.0), _d(True), _d(None), _d("alpha"), _d("beta"), _d(x=1)]
    assert len(set(found)) == len(found)
    assert call_digest("other", ("alpha",), {}) != _d("alpha")


def test_what_reads_back_alike_digests_alike() -> None:
    assert _d((1, 2)) == _d([1, 2])  # a tuple served back from a checkpoint may be a list
    assert _d({"b": 1, "a": 2}) == _d({"a": 2, "b": 1})
    assert _d({3, 1, 2}) == _d({2, 3, 1})
    assert _d(Topic(name="x", tags=["a"])) == _d(Topic(name="x", tags=["a"]))
    assert _d(Topic(name="x", tags=["a"])) != _d({"name": "x", "tags": ["a"]})
    assert _d(Note("n")) != _d(Note("m"))
    assert _d(Mood.CALM) != _d("calm")
    assert _d(float("nan")) == _d(float("nan"))
    when = datetime.datetime(2026, 1, 2, 3, 4, tzinfo=datetime.UTC)
    assert _d(when) == _d(when.replace()) != _d(when.isoformat())
    assert _d(b"ab") != _d("ab") and _d(uuid.UUID(int=1)) != _d(str(uuid.UUID(int=1)))


def test_a_value_no_encoding_reads_counts_by_its_type_and_position() -> None:
    assert _d(Opaque(), 1) == _d(Opaque(), 1)
    assert _d(Opaque(), 1) != _d(1, Opaque())
    assert _d(Opaque()) != _d(Note("n"))


def test_a_value_that_raises_while_read_gives_no_digest() -> None:
    class Broken(pydantic.BaseModel):
        x: int

        def __getattribute__(self, name: str) -> Any:
            if name == "x":
                raise RuntimeError("unreadable")
            return super().__getattribute__(name)

    assert _d(Broken.model_construct(x=1)) is None


@pytest.mark.slow
def test_the_digest_is_the_same_in_another_process_and_hash_seed() -> None:
    code = (
        "from neograph_ext.decision._call_digest import call_digest;"
        "print(call_digest('t', ({'b', 'a', 'c'}, {'k': (1, 2.5)}), {'z': None}))"
    )
    found = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("0", "1", "12345")
    }
    assert found == {call_digest("t", ({"a", "b", "c"}, {"k": [1, 2.5]}), {"z": None})}
