"""Reading type signatures: render their expressions as text and explain what changed.

Rules:
- Works on the stored JSON alone and never looks at the types themselves, so a signature
  saved by an older deploy can be explained against today's.
- A class with a definition is shown by its qualname (``Inner``, ``Page[int]``), any
  other class by module and name (``uuid.UUID``); when both sides of a change read the
  same, the full import paths are shown instead.
- Lines are deterministic: fields in sorted order, depth first. ``diff`` returns ``[]``
  exactly when the two signatures have the same canonical JSON.
- Bounded: signatures come from storage, and definitions naming one another expand to
  text exponential in their size. Readable text is cut (``MAX_DEPTH``, ``MAX_TEXT``),
  a diff keeps ``MAX_LINES`` lines of ``MAX_LINE`` characters, and each definition is
  rendered once per depth, so any signature is explained in time linear in its size.

The expression grammar is described in ``neograph_ext.decision._fingerprint``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

__all__ = [
    "MAX_DEPTH",
    "MAX_LINE",
    "MAX_LINES",
    "MAX_TEXT",
    "Defs",
    "canonical_json",
    "diff",
    "render",
    "render_value",
]

Defs = Mapping[str, Mapping[str, Any]]
"""A signature's definitions, by key (``module:qualname``)."""

MAX_DEPTH: Final = 16
"""Nesting shown in one rendered type, and definitions followed deep into a diff."""
MAX_TEXT: Final = 400
"""Characters of one rendered type (``full`` text for keys excepted), then ``…``."""
MAX_LINE: Final = 1_000
"""Characters of one line of a diff, then ``…``."""
MAX_LINES: Final = 50
"""Lines of a diff; the rest are counted in a last line."""
_CUT: Final = "…"

_KINDS = {
    "pydantic": "pydantic model",
    "dataclass": "dataclass",
    "typeddict": "TypedDict",
    "namedtuple": "NamedTuple",
    "enum": "enum",
    "alias": "type alias",
}


# Reused rather than rebuilt by every json.dumps call; an encoder holds no state.
_ENCODER: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def canonical_json(value: object) -> str:
    """Serialise a JSON-able value canonically: sorted keys, compact, ASCII only.

    Args:
        value: Any JSON-able value (a signature or a part of one).

    Returns:
        The canonical JSON text; equal values give equal text in every process.
    """
    return _ENCODER.encode(value)


def render_value(value: Any, defs: Defs, *, full: bool = False) -> str:
    """Render a value found in a ``Literal``, an enum or a constraint.

    Args:
        value: The value as encoded in a signature.
        defs: The signature's definitions (enum members are named by their class).
        full: Name classes by their full import path.

    Returns:
        Python-like text such as ``"a"``, ``3``, ``None`` or ``Color.RED``; bounded like
        ``render``'s.
    """
    return _Renderer(defs, full=full, bounded=not full).value(value, 0)


def render(expr: Any, defs: Defs, *, full: bool = False) -> str:
    """Render a type expression of a signature as Python-like text.

    Args:
        expr: A type expression (a name, or a list headed by its constructor).
        defs: The signature's definitions, used to name classes briefly.
        full: Name classes by their full import path (``module:qualname``), which
            makes the text unambiguous and exact; used to build keys of parametrised
            classes, so it is never shortened (it never expands a definition, so its
            length is that of the expression).

    Returns:
        Text such as ``list[str]``, ``int | None``, ``Literal["a", "b"]`` or
        ``Annotated[int, ge=0]``. Without ``full``, the text is bounded: nesting past
        ``MAX_DEPTH`` reads ``…`` and text past ``MAX_TEXT`` characters is cut with ``…``.
    """
    return _Renderer(defs, full=full, bounded=not full).expr(expr, 0)


def diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Explain how one type signature differs from another, field by field.

    The work is bounded whatever the signatures hold: each definition is rendered once
    per depth, definitions are followed ``MAX_DEPTH`` deep, and the answer keeps
    ``MAX_LINES`` lines of at most ``MAX_LINE`` characters, then counts the rest.

    Args:
        old: The signature stored earlier.
        new: The signature of the current type.

    Returns:
        Human-readable lines such as ``Analysis.score: int -> float`` or
        ``Report.meta.Inner.tags: added (list[str], required)``, with a last line
        ``... and K more changes`` when there are more; empty exactly when both
        signatures have the same canonical form.
    """
    differ = _Differ(old.get("defs", {}), new.get("defs", {}))
    differ.root(old.get("root"), new.get("root"))
    if not differ.lines and canonical_json(old) != canonical_json(new):
        where = f" deeper than {MAX_DEPTH} nested classes" if differ.cut else ""
        differ.lines.append(f"signature changed{where} (no field-level detail available)")
    if differ.more:
        differ.lines.append(f"... and {differ.more} more changes")
    return differ.lines


class _Renderer:
    """Renders the expressions of one signature.

    A stored signature is data: a chain of parametrised definitions that each name the
    previous one twice would expand to text exponential in its length. So a bounded
    renderer cuts nesting at ``MAX_DEPTH`` and text at ``MAX_TEXT``, stops rendering
    the members of a list once the text is long enough, and renders each parametrised
    definition once per depth (``memo``): the work is linear in the signature's size.
    """

    def __init__(self, defs: Defs, *, full: bool, bounded: bool) -> None:
        self.defs = defs
        self.full = full
        self.bounded = bounded
        self.memo: dict[tuple[str, int], str] = {}
        """Text of a parametrised definition, by key and the depth it was rendered at."""

    def expr(self, expr: Any, depth: int) -> str:
        if self.bounded and depth > MAX_DEPTH:
            return _CUT
        return self._cap(self._expr(expr, depth + 1))

    def _expr(self, expr: Any, depth: int) -> str:
        if isinstance(expr, str):
            return self.name(expr, depth)
        if not isinstance(expr, list) or not expr:  # not written by this module: show it as is
            return self._cap(canonical_json(expr))
        head, *args = expr
        if head == "Union":
            parts = self._parts((self.expr(arg, depth) for arg in args), len(" | "))
            # sorted() is stable: a cut stays last, None goes just before it
            return " | ".join(sorted(parts, key=lambda part: (part == _CUT, part == "None")))
        if head == "Literal":
            return f"Literal[{self._join(self.value(arg, depth) for arg in args)}]"
        if head == "Annotated":
            base, constraints = args
            extra = (f"{key}={self.value(constraints[key], depth)}" for key in sorted(constraints))
            return f"Annotated[{self._join(itertools.chain([self.expr(base, depth)], extra))}]"
        if head == "TypeVar":
            return f"~{args[0]}"
        if head == "NewType":
            return self.name(args[0], depth)
        if head == "params":
            return f"[{self._join(self.expr(arg, depth) for arg in args)}]"
        if head == "object":
            return f"<{self.name(args[0], depth)} object>"
        if head == "tuple" and not args:
            return "tuple[()]"
        return f"{self.name(head, depth)}[{self._join(self.expr(arg, depth) for arg in args)}]"

    def value(self, value: Any, depth: int) -> str:
        if self.bounded and depth > MAX_DEPTH:
            return _CUT
        if value is None or isinstance(value, bool):
            return repr(value)
        if isinstance(value, int | float | str):
            return self._cap(json.dumps(value, ensure_ascii=False))
        if isinstance(value, list):
            return f"[{self._join(self.value(item, depth + 1) for item in value)}]"
        if isinstance(value, dict) and "enum" in value:
            return self._cap(f"{self.name(value['enum'], depth)}.{value['member']}")
        if isinstance(value, dict) and len(value) == 1:
            (tag, inner), *_ = value.items()
            return self._cap(f"{tag}({self.value(inner, depth + 1)})")
        return self._cap(canonical_json(value))

    def name(self, atom: str, depth: int) -> str:
        module, colon, qualname = atom.partition(":")
        if not colon or self.full:
            return atom
        definition = self.defs.get(atom)
        if definition is None:
            return f"{module}.{qualname}"
        if "origin" not in definition:
            return qualname
        text = self.memo.get((atom, depth))
        if text is None:
            origin = definition["origin"].partition(":")[2]
            if self.bounded and depth >= MAX_DEPTH:
                text = f"{origin}[{_CUT}]"
            else:
                args = self._join(self.expr(arg, depth) for arg in definition["args"])
                text = self._cap(f"{origin}[{args}]")
            self.memo[atom, depth] = text
        return text

    def _parts(self, parts: Iterable[str], sep: int) -> list[str]:
        """The parts, lazily, until the text they make is long enough to be cut anyway."""
        if not self.bounded:
            return list(parts)
        taken: list[str] = []
        size = 0
        for part in parts:
            if size > MAX_TEXT:
                taken.append(_CUT)
                break
            taken.append(part)
            size += len(part) + sep
        return taken

    def _join(self, parts: Iterable[str]) -> str:
        return ", ".join(self._parts(parts, len(", ")))

    def _cap(self, text: str) -> str:
        return text[:MAX_TEXT] + _CUT if self.bounded and len(text) > MAX_TEXT else text


def _refs(expr: Any, defs: Defs, depth: int = 0) -> Iterator[str]:
    """Yield the definitions an expression names directly (not those inside them)."""
    if depth > MAX_DEPTH:
        return
    if isinstance(expr, str):
        if expr in defs:
            yield expr
        return
    if not isinstance(expr, list) or not expr:
        return
    head, *args = expr
    if head == "Literal":
        yield from (arg["enum"] for arg in args if isinstance(arg, dict) and "enum" in arg)
        return
    if head == "Annotated":
        args = args[:1]
    elif head in ("TypeVar", "object"):
        return
    elif head in defs:
        yield head
    for arg in args:
        yield from _refs(arg, defs, depth + 1)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class _Differ:
    """Walks two signatures side by side, collecting lines; each pair of defs once."""

    def __init__(self, old: Defs, new: Defs) -> None:
        self.old = old
        self.new = new
        self.lines: list[str] = []
        self.more = 0
        """Lines past ``MAX_LINES``, counted rather than kept."""
        self.cut = False
        """Whether definitions nested past ``MAX_DEPTH`` were left unexplained."""
        self._seen: set[tuple[str, str]] = set()
        # One renderer per side and form, so each definition is rendered once per diff.
        self._short = (
            _Renderer(old, full=False, bounded=True),
            _Renderer(new, full=False, bounded=True),
        )
        self._full = (
            _Renderer(old, full=True, bounded=True),
            _Renderer(new, full=True, bounded=True),
        )

    def _say(self, line: str) -> None:
        if len(self.lines) >= MAX_LINES:
            self.more += 1
        else:
            self.lines.append(line[:MAX_LINE] + _CUT if len(line) > MAX_LINE else line)

    def _name(self, key: str) -> str:
        return self._short[1].name(key, 0)

    def root(self, old: Any, new: Any) -> None:
        if isinstance(old, str) and isinstance(new, str) and old in self.old and new in self.new:
            if old != new:
                self._say(self._renamed(old, new))
            self.defs(old, new, self._name(new), 0)
        else:
            self.expr("", old, new, 0)

    def _renamed(self, old: str, new: str) -> str:
        old_module, _, old_name = old.partition(":")
        new_module, _, new_name = new.partition(":")
        if old_name == new_name:
            return f"class moved: {old_module}.{old_name} -> {new_module}.{new_name}"
        before, after = self._short[0].name(old, 0), self._name(new)
        if old_module != new_module:
            return f"class renamed and moved: {old_module}.{before} -> {new_module}.{after}"
        return f"class renamed: {before} -> {after}"

    def expr(self, path: str, old: Any, new: Any, depth: int) -> None:
        before, after = self._short[0].expr(old, 0), self._short[1].expr(new, 0)
        if before == after and canonical_json(old) != canonical_json(new):
            before, after = self._full[0].expr(old, 0), self._full[1].expr(new, 0)
        if before != after:
            self._say(f"{path or 'type'}: {before} -> {after}")
        for key in sorted(set(_refs(old, self.old)) & set(_refs(new, self.new))):
            if depth >= MAX_DEPTH:
                self.cut = True
                return
            self.defs(key, key, _join(path, self._name(key)), depth + 1)

    def defs(self, old_key: str, new_key: str, path: str, depth: int) -> None:
        if (old_key, new_key) in self._seen:
            return
        self._seen.add((old_key, new_key))
        old, new = self.old[old_key], self.new[new_key]
        if old.get("kind") != new.get("kind"):
            kinds = (_KINDS.get(old.get("kind", ""), "?"), _KINDS.get(new.get("kind", ""), "?"))
            self._say(f"{path}: {kinds[0]} -> {kinds[1]}")
        self._members(path, old.get("members", {}), new.get("members", {}))
        self._fields(path, old.get("fields", {}), new.get("fields", {}), depth)
        if "t" in old and "t" in new:
            self.expr(path, old["t"], new["t"], depth)

    def _members(self, path: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        for name in sorted(old.keys() | new.keys()):
            if name not in old:
                self._say(f"{path}: member {name} added")
            elif name not in new:
                self._say(f"{path}: member {name} removed")
            elif canonical_json(old[name]) != canonical_json(new[name]):
                before = self._short[0].value(old[name], 0)
                after = self._short[1].value(new[name], 0)
                self._say(f"{path}.{name}: value {before} -> {after}")

    def _fields(
        self, path: str, old: Mapping[str, Any], new: Mapping[str, Any], depth: int
    ) -> None:
        for name in sorted(old.keys() | new.keys()):
            where = _join(path, name)
            if name not in old:
                self._say(f"{where}: added ({self._describe(new[name], 1)})")
            elif name not in new:
                self._say(f"{where}: removed (was {self._describe(old[name], 0)})")
            else:
                self._field(where, old[name], new[name], depth)

    def _field(
        self, where: str, old: Mapping[str, Any], new: Mapping[str, Any], depth: int
    ) -> None:
        if old.get("req") != new.get("req"):
            states = ["required" if field.get("req") else "optional" for field in (old, new)]
            self._say(f"{where}: {states[0]} -> {states[1]}")
        if old.get("alias") != new.get("alias"):
            aliases = [json.dumps(field.get("alias")) for field in (old, new)]
            self._say(f"{where}: alias {aliases[0]} -> {aliases[1]}")
        self.expr(where, old.get("t"), new.get("t"), depth)

    def _describe(self, field: Mapping[str, Any], side: int) -> str:
        required = "required" if field.get("req") else "optional"
        return f"{self._short[side].expr(field.get('t'), 0)}, {required}"
