"""The typing forms a signature knows, and how it names a class.

Rules:
- Tables only, and the few pure functions that read a class: nothing here walks a
  type (``_signature`` does).
- A class is named by its import path, ``module:qualname``: the path the serializer
  revives it by. A standard-library class is named under its public module.
- Bare containers have an arity: ``list`` reads as ``list[Any]``.
- ``Annotated`` metadata from the modules and classes listed here documents or
  validates and is dropped; only that of ``annotated_types`` and pydantic constrains.
"""

from __future__ import annotations

import collections
import collections.abc as abc
import dataclasses
import enum
import sys
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Final

import typing_extensions
from pydantic import BaseModel

from neograph_ext.decision._typediff import canonical_json

__all__ = [
    "ALIAS_TYPES",
    "ARITY",
    "CONSTRAINT_PACKAGES",
    "DROPPED_CLASSES",
    "DROPPED_MODULES",
    "LITERALS",
    "NONE_TYPE",
    "NOT_REQUIRED",
    "QUALIFIERS",
    "REQUIRED",
    "SPECIAL_FORMS",
    "UNIONS",
    "class_path",
    "object_path",
    "shape",
    "sorted_unique",
]

NONE_TYPE: Final = type(None)
UNIONS: Final = frozenset({typing.Union, types.UnionType})
LITERALS: Final = frozenset({typing.Literal, typing_extensions.Literal})
REQUIRED: Final = frozenset({typing.Required, typing_extensions.Required})
NOT_REQUIRED: Final = frozenset({typing.NotRequired, typing_extensions.NotRequired})
# Qualifiers say how a field is declared, not what its values are.
QUALIFIERS: Final = frozenset(
    {*REQUIRED, *NOT_REQUIRED, typing_extensions.ReadOnly, typing.Final, typing.ClassVar}
)
# typing's own class from Python 3.12 on, typing_extensions' before (a duplicate is harmless)
ALIAS_TYPES: Final = (
    typing_extensions.TypeAliasType,
    getattr(typing, "TypeAliasType", typing_extensions.TypeAliasType),
)
SPECIAL_FORMS: Final = (
    (typing.Any, "Any"),
    (typing_extensions.Any, "Any"),
    (typing.NoReturn, "Never"),
    (typing.Never, "Never"),
    (typing_extensions.Never, "Never"),
    (typing.LiteralString, "LiteralString"),
    (typing_extensions.LiteralString, "LiteralString"),
    (typing.Self, "Self"),
    (typing_extensions.Self, "Self"),
)
# Bare containers mean "of Any": ``list`` and ``List`` read as ``list[Any]``.
ARITY: Final[Mapping[type, int]] = types.MappingProxyType(
    dict.fromkeys([dict, collections.defaultdict, collections.OrderedDict, abc.Mapping], 2)
    | dict.fromkeys([abc.MutableMapping], 2)
    | dict.fromkeys([list, set, frozenset, type, collections.deque, collections.Counter], 1)
    | dict.fromkeys([abc.Sequence, abc.MutableSequence, abc.Set, abc.MutableSet], 1)
    | dict.fromkeys([abc.Collection, abc.Iterable, abc.Iterator], 1)
)
# Annotated metadata from these modules documents or validates; it never shapes data.
DROPPED_MODULES: Final = (
    "pydantic.functional_validators",
    "pydantic.functional_serializers",
    "pydantic.json_schema",
    "annotated_doc",
)
DROPPED_CLASSES: Final = frozenset({"typing:Doc", "typing_extensions:Doc"})
CONSTRAINT_PACKAGES: Final = frozenset({"annotated_types", "pydantic"})


def class_path(cls: type) -> str:
    """``module:qualname``; a stdlib class under its public module (``pathlib._local``)."""
    module, qualname = cls.__module__, cls.__qualname__
    if module == "builtins":
        return qualname
    if module.partition(".")[0] in sys.stdlib_module_names:
        parts = module.split(".")
        while len(parts) > 1 and parts[-1].startswith("_"):
            parts.pop()
            public = sys.modules.get(".".join(parts))
            if public is not None and getattr(public, qualname, None) is cls:
                return f"{'.'.join(parts)}:{qualname}"
    return f"{module}:{qualname}"


def object_path(obj: object) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "?")
    return f"{getattr(obj, '__module__', None) or '?'}:{name}"


def shape(cls: type) -> str | None:
    """The kind of definition a class gets, or None when its import path says it all."""
    if issubclass(cls, enum.Enum):
        return "enum"
    if issubclass(cls, BaseModel):
        return "pydantic"
    if dataclasses.is_dataclass(cls):
        return "dataclass"
    if issubclass(cls, dict) and hasattr(cls, "__required_keys__"):
        return "typeddict"
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return "namedtuple"
    return None


def sorted_unique(items: Iterable[Any]) -> list[Any]:
    """Deduplicate and sort by a total order of JSON values: names first, then the rest."""
    unique = {
        (0, item) if isinstance(item, str) else (1, canonical_json(item)): item for item in items
    }
    return [unique[key] for key in sorted(unique)]
