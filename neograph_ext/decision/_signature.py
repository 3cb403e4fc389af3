"""The signature of a Python type: what ``_fingerprint`` hashes.

A *signature* is a small JSON document describing a type as stored data sees it::

    {"root": <expr>, "defs": {"module:qualname": <def>, ...}}

Rules:
- Pure: no I/O, no LangGraph, no caches; types are only read, never rebuilt.
- Classes with a shape (pydantic models, dataclasses, TypedDicts, NamedTuples, enums,
  type aliases) are defined once in ``defs`` under their import path and referenced by
  it, so recursive types terminate and a type used twice is listed once. A class is its
  import path: renaming or moving it changes the fingerprint (the serializer revives
  classes by that path). Any other class is just its import path.
- Canonical: typing spellings are normalised (``List[int]`` is ``list[int]``,
  ``Optional[X]`` is ``X | None``); union and ``Literal`` members are deduplicated and
  sorted; field order is ignored. Nothing comes from ``str()``, ``repr()`` or
  ``id()`` of a typing object, so digests hold across processes and Python versions.
- A field records its type, whether it is required, and its alias. Default values,
  docs, methods, validators, ClassVars and private (underscore) attributes are left
  out. ``Annotated`` metadata keeps constraints (``ge``, ``max_length``, ``pattern``...)
  and drops strings, docs, validators and callables such as LangGraph reducers.
- Whoever changes what a signature contains bumps ``_fingerprint.FORMAT_VERSION`` on
  purpose: it is part of every digest (tests pin digests).

Expressions: a name (``"int"``, ``"None"``, ``"Any"``, ``"datetime:date"``, a def key)
or a list headed by its constructor: ``["list", X]``, ``["dict", K, V]``,
``["tuple", X, "..."]``, ``["Union", *members]``, ``["Literal", *values]``,
``["Annotated", X, {constraint: value}]``, ``["TypeVar", name]``,
``["NewType", path, X]``, ``[origin_path, *args]`` for other generics. Defs:
``{"kind": ..., "fields": {name: {"t": <expr>, "req": bool, "alias"?: str}}}``,
``{"kind": "enum", "members": {name: value}}`` or ``{"kind": "alias", "t": <expr>}``;
a parametrised generic (``Page[int]``) adds ``"origin"`` and ``"args"``.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import inspect
import math
import re
import sys
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

import typing_extensions
from pydantic.fields import FieldInfo

from neograph_ext.decision._errors import UnresolvedTypeError
from neograph_ext.decision._typediff import render
from neograph_ext.decision._typeforms import (
    ALIAS_TYPES,
    ARITY,
    CONSTRAINT_PACKAGES,
    DROPPED_CLASSES,
    DROPPED_MODULES,
    LITERALS,
    NONE_TYPE,
    NOT_REQUIRED,
    QUALIFIERS,
    REQUIRED,
    SPECIAL_FORMS,
    UNIONS,
    class_path,
    object_path,
    shape,
    sorted_unique,
)

__all__ = ["Signature", "signature"]

Signature: TypeAlias = dict[str, Any]
"""``{"root": <expr>, "defs": {...}}``: a JSON-able, canonical description of a type."""


def signature(tp: object) -> Signature:
    """Describe a type structurally, deeply and canonically.

    Args:
        tp: Any type or type expression: a class, ``list[int]``, ``X | None``,
            ``Annotated[...]``, ``Literal[...]``, a forward reference string...

    Returns:
        ``{"root": <expr>, "defs": {"module:qualname": <def>}}``, JSON-able and small
        enough to store next to a checkpoint.

    Raises:
        UnresolvedTypeError: A forward reference inside ``tp`` cannot be resolved.
    """
    builder = _Builder()
    root = builder.expr(tp)
    return {"root": root, "defs": dict(sorted(builder.defs.items()))}


class _Builder:
    """Builds one signature; holds the defs and the context of the def being built."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self._owners: list[object] = []  # whose namespace resolves forward references
        self._subst: dict[object, Any] = {}  # TypeVar -> expr, inside a parametrised def
        self._names: dict[type, str] = {}  # class -> its name or def key, for this signature

    def expr(self, tp: object) -> Any:
        if tp is None or tp is NONE_TYPE:
            return "None"
        if isinstance(tp, type) and tp is not typing.Any and tp is not typing_extensions.Any:
            return self._names.get(tp) or self._class(tp)  # the common case first
        if tp is Ellipsis:
            return "..."
        for form, name in SPECIAL_FORMS:
            if tp is form:
                return name
        if isinstance(tp, str | typing.ForwardRef):
            return self.expr(self._resolve(tp))
        if isinstance(tp, typing.TypeVar):
            return self._typevar(tp)
        if isinstance(tp, list):  # the parameters of a Callable
            return ["params", *(self.expr(item) for item in tp)]
        if isinstance(tp, ALIAS_TYPES):
            key = f"{tp.__module__}:{tp.__name__}"
            return self._define(
                key, tp, {}, lambda: {"kind": "alias", "t": self.expr(tp.__value__)}
            )
        if isinstance(tp, typing.NewType):
            return ["NewType", object_path(tp), self.expr(tp.__supertype__)]
        if isinstance(tp, dataclasses.InitVar):
            return self.expr(tp.type)
        origin = typing.get_origin(tp)
        if origin is not None:
            return self._generic(tp, origin, typing.get_args(tp))
        if isinstance(tp, typing.ParamSpec | typing.TypeVarTuple):
            return [type(tp).__name__, tp.__name__]
        return ["object", class_path(type(tp))]

    def _generic(self, tp: Any, origin: Any, args: tuple[Any, ...]) -> Any:
        if origin is typing.Annotated:
            return self._annotated(self.expr(tp.__origin__), tp.__metadata__)
        if origin in UNIONS:
            members = (self.expr(arg) for arg in args)
            flat = [m for e in members for m in (e[1:] if e[:1] == ["Union"] else [e])]
            unique = sorted_unique(flat)
            return unique[0] if len(unique) == 1 else ["Union", *unique]
        if origin in LITERALS:
            return ["Literal", *sorted_unique(self._value(arg) for arg in args)]
        if origin in QUALIFIERS:
            return self.expr(args[0])
        if origin is tuple:
            if tp is typing.Tuple:  # noqa: UP006 - the bare alias has no args, like tuple[()]
                return ["tuple", "Any", "..."]
            if len(args) == 2 and args[1] is Ellipsis:
                return ["tuple", self.expr(args[0]), "..."]
            return ["tuple", *(self.expr(arg) for arg in args)]
        if not args:
            return self.expr(origin)
        if isinstance(origin, type):
            if origin not in ARITY and shape(origin) is not None:  # Box[int], a generic dataclass
                return self._parametrised(origin, [self.expr(arg) for arg in args])
            head = self._head(origin)
        elif isinstance(origin, ALIAS_TYPES):
            head = self.expr(origin)
        else:
            head = getattr(origin, "_name", None) or object_path(origin)
        return [head, *(self.expr(arg) for arg in args)]

    def _class(self, cls: type) -> Any:
        arity = ARITY.get(cls)
        if arity is not None:
            return [self._head(cls), *["Any"] * arity]
        if cls is tuple:
            return ["tuple", "Any", "..."]
        kind = shape(cls)
        meta = getattr(cls, "__pydantic_generic_metadata__", None) if kind == "pydantic" else None
        if meta and meta.get("origin") is not None:
            # Page[int]: pydantic made a class whose name is repr-based; name it ourselves.
            args = [self.expr(arg) for arg in meta["args"]]
            return self._parametrised(meta["origin"], args, concrete=cls)
        if kind is None:
            name = self._head(cls)
        else:
            name = self._define(class_path(cls), cls, {}, lambda: self._body(cls, kind))
        self._names[cls] = name
        return name

    @staticmethod
    def _head(cls: type) -> str:
        return cls.__qualname__ if cls.__module__ == "builtins" else class_path(cls)

    def _parametrised(self, origin: type, args: list[Any], concrete: type | None = None) -> str:
        """A def for ``Origin[args]``: a key built from the args, the TypeVars bound to them."""
        path = class_path(origin)
        key = f"{path}[{', '.join(render(arg, {}, full=True) for arg in args)}]"
        params = getattr(origin, "__parameters__", ())
        subst = dict(zip(params, args, strict=False)) if concrete is None else {}
        cls = concrete or origin
        kind = shape(cls) or "?"
        return self._define(
            key, cls, subst, lambda: {**self._body(cls, kind), "origin": path, "args": args}
        )

    def _define(
        self, key: str, owner: object, subst: dict[object, Any], build: Callable[[], dict[str, Any]]
    ) -> str:
        if key not in self.defs:
            self.defs[key] = {}  # placeholder: a reference back to `key` while building ends here
            saved, self._subst = self._subst, subst
            self._owners.append(owner)
            try:
                self.defs[key] = build()
            finally:
                self._subst = saved
                self._owners.pop()
        return key

    def _body(self, cls: Any, kind: str) -> dict[str, Any]:
        if kind == "enum":
            members = {name: self._value(m.value) for name, m in cls.__members__.items()}
            return {"kind": kind, "members": dict(sorted(members.items()))}
        if kind == "pydantic" or "__pydantic_fields__" in vars(cls):
            # model_fields (or a pydantic dataclass's fields), never raw annotations
            infos = cls.model_fields if kind == "pydantic" else cls.__pydantic_fields__
            fields = self._pydantic_fields(infos)
        elif kind == "dataclass":
            hints = self._hints(cls)
            fields = {
                f.name: self._field(
                    hints.get(f.name, f.type),
                    f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
                )
                for f in dataclasses.fields(cls)
                if not f.name.startswith("_")
            }
        elif kind == "typeddict":
            required = cls.__required_keys__
            fields = {
                name: self._typeddict_field(hint, name in required)
                for name, hint in self._hints(cls).items()
            }
        else:
            hints, defaults = self._hints(cls), cls._field_defaults
            fields = {
                name: self._field(hints.get(name, Any), name not in defaults)
                for name in cls._fields
            }
        return {"kind": kind, "fields": dict(sorted(fields.items()))}

    def _pydantic_fields(self, infos: Mapping[str, FieldInfo]) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for name, info in infos.items():
            if name.startswith("_"):
                continue
            field = self._field(info.annotation, info.is_required(), info.metadata)
            if info.alias is not None and info.alias != name:
                field["alias"] = info.alias
            fields[name] = field
        return fields

    def _field(
        self, hint: object, required: bool, metadata: Sequence[object] = ()
    ) -> dict[str, Any]:
        return {"t": self._annotated(self.expr(hint), metadata), "req": required}

    def _typeddict_field(self, hint: object, required: bool) -> dict[str, Any]:
        # An explicit Required/NotRequired wins over `total`; Python 3.11 misses the
        # wrappers in string annotations when it computes __required_keys__.
        if isinstance(hint, str | typing.ForwardRef):
            hint = self._resolve(hint)
        while (origin := typing.get_origin(hint)) in QUALIFIERS:
            if origin in REQUIRED:
                required = True
            elif origin in NOT_REQUIRED:
                required = False
            hint = typing.get_args(hint)[0]
        return self._field(hint, required)

    def _hints(self, cls: type) -> dict[str, Any]:
        try:
            return typing.get_type_hints(cls, include_extras=True)
        except Exception:  # fall back to resolving the names one by one
            raw: dict[str, Any] = {}
            for base in reversed(cls.__mro__):
                raw.update(inspect.get_annotations(base))
            return raw

    def _resolve(self, ref: str | typing.ForwardRef) -> object:
        text = ref.__forward_arg__ if isinstance(ref, typing.ForwardRef) else ref
        owner = self._owners[-1] if self._owners else None
        module_name = getattr(ref, "__forward_module__", None) or getattr(owner, "__module__", None)
        module = sys.modules.get(module_name) if isinstance(module_name, str) else None
        globalns: dict[str, Any] = vars(module) if module is not None else {}
        localns: dict[str, Any] = dict(vars(owner)) if isinstance(owner, type) else {}
        if owner is not None:  # the owner itself and its type parameters, as typing does
            localns[getattr(owner, "__name__", "")] = owner
            localns.update((p.__name__, p) for p in getattr(owner, "__parameters__", ()))
        where = object_path(owner) if owner is not None else "top level"
        try:
            value = eval(text, globalns, localns)  # what typing.get_type_hints does, name by name
        except Exception as exc:
            raise UnresolvedTypeError(f"cannot resolve {text!r} in {where}: {exc}") from exc
        if isinstance(value, str | typing.ForwardRef):
            raise UnresolvedTypeError(f"{text!r} in {where} names another forward reference")
        return value

    def _typevar(self, tv: typing.TypeVar) -> Any:
        if tv in self._subst:
            return self._subst[tv]
        out: list[Any] = ["TypeVar", tv.__name__]
        if tv.__bound__ is not None:
            out.append({"bound": self.expr(tv.__bound__)})
        if tv.__constraints__:
            out.append({"constraints": sorted_unique(self.expr(c) for c in tv.__constraints__)})
        return out

    def _annotated(self, base: Any, metadata: Sequence[object]) -> Any:
        if not metadata:
            return base
        constraints: dict[str, Any] = {}
        others: set[str] = set()
        self._collect(metadata, constraints, others)
        if others:
            constraints["other"] = sorted(others)
        if not constraints:
            return base
        if isinstance(base, list) and base[:1] == ["Annotated"]:
            return ["Annotated", base[1], {**base[2], **constraints}]
        return ["Annotated", base, constraints]

    def _collect(
        self, metadata: Iterable[object], constraints: dict[str, Any], others: set[str]
    ) -> None:
        for item in metadata:
            if isinstance(item, FieldInfo):  # Annotated[int, Field(ge=0)]
                self._collect(item.metadata, constraints, others)
                continue
            if getattr(item, "__is_annotated_types_grouped_metadata__", False):
                self._collect(list(typing.cast(Iterable[object], item)), constraints, others)
                continue
            if isinstance(item, str | bytes) or callable(item):  # docs; reducers like operator.add
                continue
            cls = type(item)
            if cls.__module__.startswith(DROPPED_MODULES) or class_path(cls) in DROPPED_CLASSES:
                continue
            if cls.__module__.partition(".")[0] not in CONSTRAINT_PACKAGES:
                others.add(class_path(cls))  # unknown: its class counts, never its repr
            elif dataclasses.is_dataclass(item):
                for f in dataclasses.fields(item):
                    constraints[f.name] = self._value(getattr(item, f.name))
            else:
                for name, value in getattr(item, "__dict__", {}).items():
                    constraints[name] = self._value(value)

    def _value(self, value: object) -> Any:
        """A JSON-able, canonical form of a Literal value, enum value or constraint."""
        if isinstance(value, enum.Enum):
            return {"enum": self._class(type(value)), "member": value.name}
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            return int(value)
        if isinstance(value, str):
            return str(value)
        if isinstance(value, float):
            return float(value) if math.isfinite(value) else {"float": str(value)}
        if isinstance(value, bytes | bytearray):
            return {"bytes": bytes(value).hex()}
        if isinstance(value, decimal.Decimal):
            return {"decimal": str(value)}
        if isinstance(value, datetime.date | datetime.time):
            return {class_path(type(value)): value.isoformat()}
        if isinstance(value, datetime.timedelta):
            return {"timedelta": [value.days, value.seconds, value.microseconds]}
        if isinstance(value, re.Pattern):
            return {"regex": [self._value(value.pattern), value.flags]}
        if isinstance(value, list | tuple):
            return [self._value(item) for item in value]
        if isinstance(value, set | frozenset):
            return sorted_unique(self._value(item) for item in value)
        if isinstance(value, dict):
            return {
                "dict": sorted_unique([self._value(k), self._value(v)] for k, v in value.items())
            }
        if isinstance(value, type) or typing.get_origin(value) is not None:
            return {"type": self.expr(value)}
        if callable(value):
            return {"callable": object_path(value)}
        return {"object": class_path(type(value))}
