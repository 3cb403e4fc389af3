"""How ``--help`` reads: prose as prose, flags as flags.

Rules:
- A docstring's line breaks are the source's, not the reader's: each paragraph is joined
  into one line, and the help wraps it to the terminal (typer's rich help would keep
  them, mid-sentence, in the command list).
- A flag (``--json``) takes no value, so no type is printed after it (typer prints
  ``<bool>``). Every command is a ``Command`` and the app a ``Group``.
"""

from __future__ import annotations

import inspect
from typing import Any

import typer.core

__all__ = ["Command", "Group", "prose"]


def prose(text: str | None) -> str | None:
    """``text`` with each paragraph on one line."""
    if text is None:
        return None
    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(text).split("\n\n"))


class _Flags:
    """Params listed with no type after a flag."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if getattr(param, "is_flag", False):
                param.metavar = ""
        return params


class Command(_Flags, typer.core.TyperCommand):
    """A command whose help reads as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = prose(self.help)


class Group(_Flags, typer.core.TyperGroup):
    """The app, whose own flags (``--version``, ``--help``) read as flags."""
