"""Structural fingerprints of Python types: ``signature``, ``digest``, ``diff``.

Rules:
- Pure: no I/O, no LangGraph, no caches.
- A type's fingerprint is the ``digest`` of its ``signature`` (``_signature``, where
  the signature's JSON shape and canonical form are written down); ``diff`` explains
  how two signatures differ (``_typediff``).
- ``digest`` hashes the canonical JSON with ``FORMAT_VERSION``: whoever changes what a
  signature contains bumps it on purpose (tests pin digests).
- The fingerprint layer is imported from here: ``signature``, ``Signature``, ``diff``
  and ``UnresolvedTypeError`` are re-exported.
"""

from __future__ import annotations

import hashlib
from typing import Final

from neograph_ext.decision._errors import UnresolvedTypeError
from neograph_ext.decision._signature import Signature, signature
from neograph_ext.decision._typediff import canonical_json, diff

__all__ = [
    "FORMAT_VERSION",
    "Signature",
    "UnresolvedTypeError",
    "diff",
    "digest",
    "fingerprint_type",
    "signature",
    "without_storage_kind",
]

FORMAT_VERSION: Final = 1
"""Version of the canonical form; part of every digest. Bump it whenever digests change."""


_STORAGE_KINDS: Final = "langgraph.channels."
"""Where LangGraph's channel classes live: ``Annotated[list, DeltaChannel(extend)]`` names
how a state key is stored and merged, not the type of its value."""


def without_storage_kind(sig: Signature) -> Signature:
    """``sig`` without the LangGraph channel class an ``Annotated`` type names at its top.

    A channel's signature names its channel class (``DeltaChannel``) as an unknown
    ``Annotated`` extra. Changing that class is not a type change where LangGraph reads
    the old storage itself (a plain reducer becoming a ``DeltaChannel`` and back), so
    comparing two channel signatures without it says whether the value's type changed.
    """
    root = sig.get("root")
    if not (isinstance(root, list) and root[:1] == ["Annotated"] and len(root) == 3):
        return sig
    constraints = dict(root[2])
    others = [o for o in constraints.pop("other", []) if not str(o).startswith(_STORAGE_KINDS)]
    if others:
        constraints["other"] = others
    return {**sig, "root": ["Annotated", root[1], constraints] if constraints else root[1]}


def digest(sig: Signature) -> str:
    """Hash a signature together with ``FORMAT_VERSION``.

    Args:
        sig: A signature from ``signature`` (or loaded back from JSON).

    Returns:
        The SHA-256 hex digest of the canonical JSON of ``{"v": FORMAT_VERSION, **sig}``.
    """
    text = canonical_json({"v": FORMAT_VERSION, **sig})
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def fingerprint_type(tp: object) -> str:
    """Fingerprint a type: equal for the same structure, different after any change to it.

    Args:
        tp: Any type or type expression (see ``signature``).

    Returns:
        A SHA-256 hex digest, stable across processes, ``PYTHONHASHSEED`` and Python
        versions.

    Raises:
        UnresolvedTypeError: A forward reference inside ``tp`` cannot be resolved.
    """
    return digest(signature(tp))
