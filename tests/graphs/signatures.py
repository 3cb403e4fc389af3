"""Hand-made stored signatures, for the diff's budget and for bad stored input."""

from __future__ import annotations

from typing import Any

__all__ = ["LEAF", "Signature", "chain"]

Signature = dict[str, Any]
LEAF = "m:Leaf"


def chain(depth: int, leaf: str = "int", refs: int = 2) -> Signature:
    """``Pair[Pair[...], Pair[...]]`` ``depth`` deep: each definition names the previous
    one ``refs`` times, as a field and as a type argument (the shape ``signature`` stores
    for ``Pair[X, X]``)."""
    defs: dict[str, Any] = {
        LEAF: {"kind": "pydantic", "fields": {"x": {"t": leaf, "req": True}}},
    }
    previous = LEAF
    for level in range(depth):
        key = f"m:Pair[{level}]"
        defs[key] = {
            "kind": "pydantic",
            "fields": {f"f{i}": {"t": previous, "req": True} for i in range(refs)},
            "origin": "m:Pair",
            "args": [previous] * refs,
        }
        previous = key
    return {"root": previous, "defs": defs}
