"""The schemas of the records neograph-ext reads back from a database, validated here.

Rules:
- A record is data from storage: anyone who can write the database can write it, so
  every field is checked against its kind's schema before any is used (hashed, sorted,
  put into SQL). A stamp id is 64 hex digits, a stamp prefix 16: no NUL byte or
  other text reaches a query as one.
- An invalid record reads as None and is ignored, as if it had not been written: it is
  never an exception, so no stored value can wedge a thread.
- One schema per record kind. Kept elsewhere, each behind one reader: stamps (the
  ``Stamp`` model and the reference and run-mark patterns of ``_stamp``), ledgers
  (``_budget.decode_ledger``), fixtures (``_fixtures``, a ``FixtureError``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import pydantic
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints

__all__ = ["ClaimRecord", "read_claim"]

_StampId = Annotated[str, StringConstraints(strict=True, pattern=r"^[0-9a-f]{64}$")]
_StampPrefix = Annotated[str, StringConstraints(strict=True, pattern=r"^[0-9a-f]{16}$")]
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
