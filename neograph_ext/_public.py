"""Each public class names the module users import it from.

A traceback, ``repr`` of the class, ``help()`` and a generated reference then say
``neograph_ext.CheckpointSchemaError``, not the private module that defines it
(``neograph_ext.decision._errors``), as httpx does for its own. Pickling still finds
each class: the public module holds it under the same name.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Mapping, Sequence

__all__ = ["publish"]


def publish(module: str, namespace: Mapping[str, object], names: Sequence[str]) -> None:
    """Set ``__module__`` to ``module`` on each class among ``names`` in ``namespace``
    (a public module's ``globals()`` and ``__all__``) that neograph-ext defines.

    A class's annotations are strings (``from __future__ import annotations``) naming
    what its defining module imports; ``typing.get_type_hints`` (and pydantic, FastAPI)
    look them up in the module ``__module__`` names. So they are resolved first, where
    they were written, and stored resolved (a dataclass's fields too, which pydantic
    reads).
    """
    for name in names:
        value = namespace[name]
        if not isinstance(value, type) or not value.__module__.startswith("neograph_ext."):
            continue
        own = inspect.get_annotations(value)
        if own:
            hints = typing.get_type_hints(value, include_extras=True)
            value.__annotations__ = {field: hints[field] for field in own}
            for field in dataclasses.fields(value) if dataclasses.is_dataclass(value) else ():
                field.type = hints[field.name]  # what pydantic reads a dataclass by
        value.__module__ = module
