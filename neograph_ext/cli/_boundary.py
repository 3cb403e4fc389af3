"""How the command line turns every error into one line on stderr and exit 2.

Rules:
- ``CliError`` is a problem the user can fix; its message is the line printed.
- A checkpoint that LangGraph cannot decode, or that is not the shape it writes, is one
  line too (``reading``), whether LangGraph's reader or neograph-ext trips over it.
- ``--debug`` adds the traceback and neograph-ext's and LangGraph's serializer's log
  lines; without it, nothing else reaches stderr.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from neograph_ext import NeographExtError
from neograph_ext.cli._show import console, safe

__all__ = ["SERDE_LOGGER", "CliError", "DebugOpt", "boundary", "one_line", "reading"]

DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks and engine logs.")]
"""Every command's ``--debug``, which ``boundary`` takes."""

SERDE_LOGGER = "langgraph.checkpoint.serde.jsonplus"
"""The logger LangGraph's serializer warns on."""


class CliError(NeographExtError):
    """A problem the user can fix; its message is the one line printed."""


def one_line(exc: BaseException) -> str:
    """An error as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


@contextmanager
def reading(what: str) -> Iterator[None]:
    """A stored checkpoint that LangGraph cannot decode, or that is not the shape it
    writes (metadata that is not a JSON object, nested too deep, not UTF-8), is one
    clear line, whether LangGraph's reader or the engine's walk trips over it."""
    try:
        yield
    except NeographExtError:
        raise
    except (ValueError, TypeError, AttributeError, RecursionError) as exc:
        raise CliError(
            f"cannot read {what}: a stored checkpoint is not what LangGraph writes (damaged, "
            f"or written by other software): {one_line(exc)}; --debug shows where"
        ) from exc


@contextmanager
def boundary(debug: bool) -> Iterator[None]:
    """Turn every error into one line on stderr and exit 2; ``--debug`` shows tracebacks."""
    logger, handler = logging.getLogger("neograph_ext"), logging.StreamHandler(sys.stderr)
    serde = logging.getLogger(SERDE_LOGGER)
    level, serde_level = logger.level, serde.level
    if debug:
        logger.addHandler(handler)
    # Without --debug, plan notes are in the output already, and a value the serializer
    # declined is told by the command: no log lines on top.
    logger.setLevel(logging.INFO if debug else logging.ERROR)
    serde.setLevel(logging.WARNING if debug else logging.ERROR)
    try:
        yield
    except typer.Exit:
        raise
    except Exception as exc:  # the outermost boundary: any error is one line
        if debug:
            console(stderr=True).print_exception(show_locals=False)
        known = isinstance(exc, NeographExtError)
        message = (str(exc).strip().splitlines() or [""])[0] if known else one_line(exc)
        hint = "" if debug or known else " (--debug shows the traceback)"
        typer.echo(safe(f"error: {message}{hint}"), err=True)
        raise typer.Exit(2) from None
    finally:
        logger.setLevel(level)
        serde.setLevel(serde_level)
        logger.removeHandler(handler)
