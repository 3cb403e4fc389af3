"""Validating stored values by a declared type, on every supported Python.

Rules:
- One way to build the validator of a declared type (``adapter``), used wherever a
  stored value is judged (kept, migrated, read back).
- Every typing form the fingerprints read is validated without error. Before Python
  3.12 pydantic refuses a ``typing.TypedDict`` (``PydanticUserError``); it is validated
  as the ``typing_extensions.TypedDict`` of the same fields, read as the fingerprints
  read them (``_signature``): resolved hints, an explicit ``Required`` /
  ``NotRequired`` winning over ``total``. A TypedDict reached again inside itself (a
  recursive one) is validated there as a plain mapping.
- A type pydantic still has no validator for gets None: nothing judges by it.
"""

from __future__ import annotations

import sys
import types
import typing
from typing import Annotated, Any, get_args, get_origin

import typing_extensions
from pydantic import TypeAdapter
from pydantic.errors import PydanticUserError
from typing_extensions import is_typeddict

from neograph_ext.decision._typeforms import ALIAS_TYPES, NOT_REQUIRED, QUALIFIERS, REQUIRED, UNIONS

__all__ = ["adapter", "validatable"]

_OWN_TYPEDDICT = sys.version_info >= (3, 12)
"""From Python 3.12 on, pydantic validates ``typing.TypedDict`` itself."""


def adapter(tp: object) -> TypeAdapter[Any] | None:
    """The validator of values declared as ``tp``; None when pydantic has none for it."""
    try:
        return TypeAdapter[Any](validatable(tp))  # type: ignore[arg-type]
    except (PydanticUserError, TypeError, ValueError, AttributeError, NameError):
        return None


def validatable(tp: object) -> object:
    """``tp`` with each ``typing.TypedDict`` in it (at any depth pydantic follows
    through typing forms) as the ``typing_extensions.TypedDict`` of the same fields, on a
    Python whose pydantic refuses the former; ``tp`` itself where there is none."""
    return tp if _OWN_TYPEDDICT else _rebuilt(tp, {})


def _rebuilt(tp: object, seen: dict[int, object]) -> object:
    if is_typeddict(tp) and type(tp).__module__ == "typing":
        return _typeddict(tp, seen)
    if isinstance(tp, ALIAS_TYPES):  # ``type X = ...``: validated as what it names
        return _rebuilt(tp.__value__, seen)
    supertype = getattr(tp, "__supertype__", None)
    if supertype is not None:  # a ``NewType``: validated as its supertype
        return _rebuilt(supertype, seen)
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is None or not args:
        return tp
    new = tuple(_rebuilt(arg, seen) if not isinstance(arg, list) else arg for arg in args)
    if all(a is b for a, b in zip(new, args, strict=True)):
        return tp
    if origin is Annotated:
        return Annotated[(new[0], *tp.__metadata__)]  # type: ignore[attr-defined]
    if origin in UNIONS:
        return typing.Union[new]  # noqa: UP007
    if origin in QUALIFIERS:
        return origin[new[0]]
    if type(tp) is types.GenericAlias:
        return types.GenericAlias(origin, new)
    return tp.copy_with(new)  # type: ignore[attr-defined]


def _typeddict(cls: Any, seen: dict[int, object]) -> object:
    """The ``typing_extensions.TypedDict`` of ``cls``'s fields; a plain mapping where
    ``cls`` is reached again while its fields are rebuilt."""
    if id(cls) in seen:
        return seen[id(cls)]
    seen[id(cls)] = dict[str, Any]
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # unresolvable annotations: their names are all there is
        hints = dict(getattr(cls, "__annotations__", {}))
    fields: dict[str, object] = {}
    for name, hint in hints.items():
        required = name in cls.__required_keys__
        while (origin := get_origin(hint)) in QUALIFIERS:
            if origin in REQUIRED:
                required = True
            elif origin in NOT_REQUIRED:
                required = False
            hint = get_args(hint)[0]
        field = _rebuilt(hint, seen)
        wrap = typing_extensions.Required if required else typing_extensions.NotRequired
        fields[name] = wrap[field]
    # The functional form, with fields known only at run time (not a checked literal).
    make: Any = typing_extensions.TypedDict
    made = make(cls.__name__, fields)
    made.__module__, made.__qualname__ = cls.__module__, cls.__qualname__
    config = getattr(cls, "__pydantic_config__", None)
    if config is not None:
        made.__pydantic_config__ = config
    seen[id(cls)] = made
    return made
