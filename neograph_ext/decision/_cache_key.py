"""What a cached node's cache key is salted with: the types its served writes depend on.

Rules:
- LangGraph keys a node's cached writes by its input alone; a deploy that changes a type
  leaves the key as it was. A result may be served only while the types it was made of
  are unchanged: those of what the node writes (its fingerprint, and the channels its
  declared output type names) and those of the values its input holds.
- A node that declares no output type with fields may write any channel: every channel's
  type is its own.
- The channels the input holds are read from the input itself when the key is made (a
  channel absent or None holds no value of its type), so a change of a type no value of
  the input has, downstream say, keeps the cached result served.
- Pure: no I/O, no LangGraph; only digests from the stamp and the input's keys.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel

from neograph_ext.decision._stamp import Stamp

__all__ = ["CacheSalt", "cache_salts"]


@dataclass(frozen=True, slots=True)
class CacheSalt:
    """What one cached node's (or task's) key is salted with."""

    fixed: str
    """Digest of the node's fingerprint and of the types of the channels it may write."""
    channels: Mapping[str, str] = field(default_factory=dict)
    """Each state channel's fingerprint: those of the channels the input holds a value of
    join the salt (empty for a task, whose input is its arguments)."""

    def of(self, value: object) -> str:
        """The salt of the key of ``value``, the node's input.

        Args:
            value: What LangGraph hands the node's key function: the node's state (a
                mapping, a pydantic model, a dataclass) or a ``Send``'s argument.

        Returns:
            ``fixed`` when the input holds no value of a channel; else a digest of it and
            of those channels' fingerprints.
        """
        held = {k: self.channels[k] for k in _held(value) if k in self.channels}
        if not held:
            return self.fixed
        return _digest(f"{self.fixed}:{json.dumps(held, sort_keys=True)}")


def cache_salts(stamp: Stamp, writes: Mapping[str, Iterable[str]]) -> dict[str, CacheSalt]:
    """Per node (or task) of ``stamp``, what its cache key must include.

    Args:
        stamp: The compiled graph's stamp.
        writes: Per node whose declared output type has fields, those fields (the
            channels it may write); a node left out may write any channel.

    Returns:
        Per node name, its ``CacheSalt``.
    """
    salts: dict[str, CacheSalt] = {}
    for name, node in stamp.nodes.items():
        names = writes.get(name)
        written = stamp.channels if names is None else _pick(stamp.channels, names)
        fixed = _digest(f"{node.fp}:{json.dumps(written, sort_keys=True)}")
        salts[name] = CacheSalt(fixed, stamp.channels)
    return salts


def _pick(channels: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    return {k: channels[k] for k in names if k in channels}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _held(value: object) -> Iterator[str]:
    """The keys of ``value`` that hold something (not None), as a node's input holds its
    channels; nothing for any other value."""
    if isinstance(value, Mapping):
        yield from (str(k) for k, v in value.items() if v is not None)
    elif isinstance(value, BaseModel):
        yield from (k for k, v in value if v is not None)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        yield from (
            f.name for f in dataclasses.fields(value) if getattr(value, f.name, None) is not None
        )
