"""Reading type signatures: render their expressions as text and explain what changed.

Rules:
- Works on the stored JSON alone and never looks at the types themselves, so a signature
  saved by an older deploy can be explained against today's.
- A class with a definition is shown by its qualname (``Inner``, ``Page[int]``), any
  other class by module and name (``uuid.UUID``); when both sides of a change read the
  same, the full import paths are shown instead.
- Lines are deterministic: fields in sorted order, depth first. ``diff`` returns ``[]``
  exactly when the two signatures have the same canonical JSON.

The expression grammar is described in ``neograph_ext._fingerprint``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = ["canonical_json", "diff", "render", "render_value"]

Defs = Mapping[str, Mapping[str, Any]]

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
        Python-like text such as ``"a"``, ``3``, ``None`` or ``Color.RED``.
    """
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int | float | str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(render_value(item, defs, full=full) for item in value) + "]"
    if isinstance(value, dict) and "enum" in value:
        return f"{_name(value['enum'], defs, full)}.{value['member']}"
    if isinstance(value, dict) and len(value) == 1:
        (tag, inner), *_ = value.items()
        return f"{tag}({render_value(inner, defs, full=full)})"
    return canonical_json(value)


def render(expr: Any, defs: Defs, *, full: bool = False) -> str:
    """Render a type expression of a signature as Python-like text.

    Args:
        expr: A type expression (a name, or a list headed by its constructor).
        defs: The signature's definitions, used to name classes briefly.
        full: Name classes by their full import path (``module:qualname``), which
            makes the text unambiguous; used to build keys of parametrised classes.

    Returns:
        Text such as ``list[str]``, ``int | None``, ``Literal["a", "b"]`` or
        ``Annotated[int, ge=0]``.
    """
    if isinstance(expr, str):
        return _name(expr, defs, full)
    if not isinstance(expr, list) or not expr:  # not written by this module: show it as is
        return canonical_json(expr)
    head, *args = expr
    if head == "Union":
        parts = [render(arg, defs, full=full) for arg in args]
        return " | ".join(sorted(parts, key=lambda part: part == "None"))
    if head == "Literal":
        return "Literal[" + ", ".join(render_value(arg, defs, full=full) for arg in args) + "]"
    if head == "Annotated":
        base, constraints = args
        extra = [
            f"{key}={render_value(constraints[key], defs, full=full)}"
            for key in sorted(constraints)
        ]
        return f"Annotated[{', '.join([render(base, defs, full=full), *extra])}]"
    if head == "TypeVar":
        return f"~{args[0]}"
    if head == "NewType":
        return _name(args[0], defs, full)
    if head == "params":
        return "[" + ", ".join(render(arg, defs, full=full) for arg in args) + "]"
    if head == "object":
        return f"<{_name(args[0], defs, full)} object>"
    if head == "tuple" and not args:
        return "tuple[()]"
    return f"{_name(head, defs, full)}[{', '.join(render(arg, defs, full=full) for arg in args)}]"


def diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Explain how one type signature differs from another, field by field.

    Args:
        old: The signature stored earlier.
        new: The signature of the current type.

    Returns:
        Human-readable lines such as ``Analysis.score: int -> float`` or
        ``Report.meta.Inner.tags: added (list[str], required)``; empty exactly when
        both signatures have the same canonical form.
    """
    differ = _Differ(old.get("defs", {}), new.get("defs", {}))
    differ.root(old.get("root"), new.get("root"))
    if not differ.lines and canonical_json(old) != canonical_json(new):
        differ.lines.append("signature changed (no field-level detail available)")
    return differ.lines


def _name(atom: str, defs: Defs, full: bool) -> str:
    module, colon, qualname = atom.partition(":")
    if not colon or full:
        return atom
    definition = defs.get(atom)
    if definition is None:
        return f"{module}.{qualname}"
    if "origin" in definition:
        args = ", ".join(render(arg, defs) for arg in definition["args"])
        return f"{definition['origin'].partition(':')[2]}[{args}]"
    return qualname


def _refs(expr: Any, defs: Defs) -> Iterator[str]:
    """Yield the definitions an expression names directly (not those inside them)."""
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
        yield from _refs(arg, defs)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class _Differ:
    """Walks two signatures side by side, collecting lines; each pair of defs once."""

    def __init__(self, old: Defs, new: Defs) -> None:
        self.old = old
        self.new = new
        self.lines: list[str] = []
        self._seen: set[tuple[str, str]] = set()

    def root(self, old: Any, new: Any) -> None:
        if isinstance(old, str) and isinstance(new, str) and old in self.old and new in self.new:
            if old != new:
                self.lines.append(self._renamed(old, new))
            self.defs(old, new, _name(new, self.new, False))
        else:
            self.expr("", old, new)

    def _renamed(self, old: str, new: str) -> str:
        old_module, _, old_name = old.partition(":")
        new_module, _, new_name = new.partition(":")
        if old_name == new_name:
            return f"class moved: {old_module}.{old_name} -> {new_module}.{new_name}"
        before, after = _name(old, self.old, False), _name(new, self.new, False)
        if old_module != new_module:
            return f"class renamed and moved: {old_module}.{before} -> {new_module}.{after}"
        return f"class renamed: {before} -> {after}"

    def expr(self, path: str, old: Any, new: Any) -> None:
        before, after = render(old, self.old), render(new, self.new)
        if before == after and canonical_json(old) != canonical_json(new):
            before, after = render(old, self.old, full=True), render(new, self.new, full=True)
        if before != after:
            self.lines.append(f"{path or 'type'}: {before} -> {after}")
        for key in sorted(set(_refs(old, self.old)) & set(_refs(new, self.new))):
            self.defs(key, key, _join(path, _name(key, self.new, False)))

    def defs(self, old_key: str, new_key: str, path: str) -> None:
        if (old_key, new_key) in self._seen:
            return
        self._seen.add((old_key, new_key))
        old, new = self.old[old_key], self.new[new_key]
        if old.get("kind") != new.get("kind"):
            kinds = (_KINDS.get(old.get("kind", ""), "?"), _KINDS.get(new.get("kind", ""), "?"))
            self.lines.append(f"{path}: {kinds[0]} -> {kinds[1]}")
        self._members(path, old.get("members", {}), new.get("members", {}))
        self._fields(path, old.get("fields", {}), new.get("fields", {}))
        if "t" in old and "t" in new:
            self.expr(path, old["t"], new["t"])

    def _members(self, path: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        for name in sorted(old.keys() | new.keys()):
            if name not in old:
                self.lines.append(f"{path}: member {name} added")
            elif name not in new:
                self.lines.append(f"{path}: member {name} removed")
            elif canonical_json(old[name]) != canonical_json(new[name]):
                before = render_value(old[name], self.old)
                after = render_value(new[name], self.new)
                self.lines.append(f"{path}.{name}: value {before} -> {after}")

    def _fields(self, path: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        for name in sorted(old.keys() | new.keys()):
            where = _join(path, name)
            if name not in old:
                self.lines.append(f"{where}: added ({self._describe(new[name], self.new)})")
            elif name not in new:
                self.lines.append(f"{where}: removed (was {self._describe(old[name], self.old)})")
            else:
                self._field(where, old[name], new[name])

    def _field(self, where: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if old.get("req") != new.get("req"):
            states = ["required" if field.get("req") else "optional" for field in (old, new)]
            self.lines.append(f"{where}: {states[0]} -> {states[1]}")
        if old.get("alias") != new.get("alias"):
            aliases = [json.dumps(field.get("alias")) for field in (old, new)]
            self.lines.append(f"{where}: alias {aliases[0]} -> {aliases[1]}")
        self.expr(where, old.get("t"), new.get("t"))

    @staticmethod
    def _describe(field: Mapping[str, Any], defs: Defs) -> str:
        required = "required" if field.get("req") else "optional"
        return f"{render(field.get('t'), defs)}, {required}"
