"""The schemas of the records neograph-ext reads back from a database, validated here.

Rules:
- A record is data from storage: anyone who can write the database can write it, so
  every field is checked against its kind's schema before any is used (hashed, sorted,
  put into SQL). A stamp id is 64 hex digits, a stamp prefix 16: no NUL byte or
  other text reaches a query as one.
- An invalid record reads as None and is ignored, as if it had not been written: it is
  never an exception, so no stored value can wedge a thread.
- One schema per record kind: claims, ledgers and the entries of the order of stamps
  here; stamps where their wire format is (the ``Stamp`` model and the reference and
  run-mark patterns of ``_stamp``); fixture files, which are no database's, raise a
  ``FixtureError`` instead (``_fixtures``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Final, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, TypeAdapter

__all__ = [
    "LEDGER_FORMAT",
    "MAX_LEDGER_CHARS",
    "ClaimRecord",
    "LedgerDocument",
    "OrderEntry",
    "Release",
    "read_claim",
    "read_ledger_document",
    "read_order_entry",
    "read_release",
]

_StampId = Annotated[str, StringConstraints(strict=True, pattern=r"^[0-9a-f]{64}$")]
_StampPrefix = Annotated[str, StringConstraints(strict=True, pattern=r"^[0-9a-f]{16}$")]
Release = Annotated[
    str, StringConstraints(strict=True, min_length=1, max_length=100, pattern=r"^[!-~]+$")
]
"""A declared release (``_stamp_order.declared_release``): printable ASCII, no spaces."""
_RELEASE: TypeAdapter[str] = TypeAdapter(Release)
_TaskId = Annotated[str, StringConstraints(strict=True, max_length=200, pattern=r"^[^\x00]*$")]


class ClaimRecord(BaseModel):
    """A claim's stored value (``_claim.claim_writes``)."""

    model_config = ConfigDict(frozen=True)

    stamp: _StampId
    """The claimant's stamp id."""
    took_from: _StampPrefix | None = None
    """The first 16 hex digits of the stamp the claimant took the thread over from."""
    before: tuple[_TaskId, ...]
    """The ids of the tasks that had finished when the claim was written."""
    n: Annotated[StrictInt, Field(ge=0, lt=2**63)]
    """The claim's rank among the checkpoint's claims, from 0."""


def read_claim(value: object) -> ClaimRecord | None:
    """A claim's stored value as its schema reads it; None when it is not one."""
    if not isinstance(value, Mapping):
        return None
    try:
        return ClaimRecord.model_validate(dict(value))
    except pydantic.ValidationError:
        return None


class OrderEntry(BaseModel):
    """A stamp's place in a database's order of stamps (``_stamp_order``); its position
    is its checkpoint id's."""

    model_config = ConfigDict(frozen=True)

    stamp: _StampId
    """The stamp id."""
    release: Release | None = None
    """The release its code declared when it last took its place, if it declared one."""


def read_order_entry(values: object) -> OrderEntry | None:
    """An order checkpoint's channel values as their schema reads them; None if not one.
    A release that is no release is left out: the stamp keeps its place."""
    if not isinstance(values, Mapping):
        return None
    try:
        release = read_release(values.get("release"))
        return OrderEntry.model_validate({"stamp": values.get("stamp"), "release": release})
    except pydantic.ValidationError:
        return None


def read_release(value: object) -> str | None:
    """``value`` as a release (``Release``); None when it is not one."""
    try:
        return _RELEASE.validate_python(value)
    except pydantic.ValidationError:
        return None


LEDGER_FORMAT: Final = 1
"""Version of a stored ledger's JSON shape; a ledger of another version is not read."""
MAX_LEDGER_CHARS: Final = 1_000_000
"""Ledgers larger than this are not read: a thread's ledger is a few hundred bytes."""
_Count = Annotated[StrictInt, Field(ge=0)]
_Counts = tuple[_Count, _Count, _Count]


class LedgerDocument(BaseModel):
    """A budget ledger as stored (``_budget.encode_ledger``): JSON, each count triple
    ``[supersteps, model calls, tokens]``."""

    model_config = ConfigDict(frozen=True)

    v: Literal[1]
    """``LEDGER_FORMAT``."""
    t: _Counts
    """The thread's total."""
    u: tuple[_Counts, ...]
    """Each turn's, oldest first."""
    n: dict[str, tuple[_Count, _Count]]
    """Per node, the model calls and tokens of its last execution."""


def read_ledger_document(raw: object) -> LedgerDocument | None:
    """A stored ledger as its schema reads it; None when it is not one."""
    if not isinstance(raw, str) or len(raw) > MAX_LEDGER_CHARS:
        return None
    try:
        return LedgerDocument.model_validate_json(raw)
    except (pydantic.ValidationError, RecursionError):
        return None
