"""The digest of one ``@task`` call: which task, with which arguments (``call_digest``).

Rules:
- Pure and deterministic across processes and ``PYTHONHASHSEED``: arguments are read
  by value into canonical JSON, never through ``str()`` / ``repr()`` or ``id()``.
- By value where a value serialises: JSON scalars, lists and tuples alike (a cached
  result served back may come as either), dicts and sets (sorted by their items'
  encodings), enums, pydantic models and dataclasses (their class path and fields),
  ``bytes``, dates and times, ``UUID``, ``Decimal``. Any other value counts by its
  type's path and its position: two calls differing only in such a value match.
- A value that raises while it is read (a model whose field will not read) gives no
  digest (``None``): the call then counts as changed, never as unchanged.
- Prefixed with ``DIGEST_FORMAT``: a change of the encoding changes every digest, so
  it errs on running calls again; pinned in ``tests/unit/test_call_digest.py``.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import hashlib
import json
import uuid
from collections.abc import Mapping
from typing import Any

import pydantic

__all__ = ["DIGEST_FORMAT", "call_digest"]

DIGEST_FORMAT = "c1"
"""The version of the encoding, the first part of every digest."""

_PLAIN = (str, int, float, bool, type(None))
_TEXT = (datetime.date, datetime.time, datetime.timedelta, uuid.UUID, decimal.Decimal)
"""Read as their text: ``isoformat()`` for dates and times, ``str()`` for the others."""


def _path(tp: type) -> str:
    return f"{tp.__module__}.{tp.__qualname__}"


def _encoded(value: Any, depth: int = 0) -> Any:
    """``value`` as canonical JSON data."""
    if depth > 64:
        raise ValueError("argument nested too deeply")
    if isinstance(value, enum.Enum):
        return {"enum": _path(type(value)), "value": _encoded(value.value, depth + 1)}
    if isinstance(value, _PLAIN):
        # ``float("nan")`` is no JSON: its text stands for it.
        return value if value == value else {"float": "nan"}
    if isinstance(value, list | tuple):
        return [_encoded(item, depth + 1) for item in value]
    if isinstance(value, Mapping):
        items = [[_encoded(k, depth + 1), _encoded(v, depth + 1)] for k, v in value.items()]
        return {"map": sorted(items, key=_text)}
    if isinstance(value, set | frozenset):
        return {"set": sorted((_encoded(item, depth + 1) for item in value), key=_text)}
    if isinstance(value, pydantic.BaseModel):
        fields = {
            name: _encoded(getattr(value, name), depth + 1) for name in type(value).model_fields
        }
        return {"model": _path(type(value)), "fields": fields}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {
            f.name: _encoded(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
        }
        return {"model": _path(type(value)), "fields": fields}
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    if isinstance(value, _TEXT):
        text = value.isoformat() if hasattr(value, "isoformat") else str(value)
        return {_path(type(value)): text}
    return {"type": _path(type(value))}


def _text(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def call_digest(task: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    """The digest of a call of the task named ``task`` with ``args`` and ``kwargs``, or
    None when an argument cannot be read (the call then never matches a cached one)."""
    try:
        data = {"task": task, "args": _encoded(args), "kwargs": _encoded(dict(kwargs))}
    except Exception:  # a value that will not read: err on running the call again
        return None
    return f"{DIGEST_FORMAT}:{hashlib.sha256(_text(data).encode()).hexdigest()}"
