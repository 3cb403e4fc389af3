"""How the command line finds GRAPH and points it at the database.

Rules:
- ``module:attr`` is imported as ``python -m`` would (the working directory first);
  ``file.py:attr`` under its package path, so class paths (part of every fingerprint)
  match the app's.
- A builder (or an ``@entrypoint``) is compiled by ``neograph_ext.compile``; a graph it
  made is copied with the database's saver and keeps its stamp; anything else is
  refused, naming the fix.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel

from neograph_ext import GraphError, compile, is_stamped
from neograph_ext.cli._boundary import CliError, one_line
from neograph_ext.cli._serde import widen

__all__ = ["Graph", "attach", "load"]

Graph = Pregel[Any, Any, Any, Any]


def load(spec: str) -> object:
    """Import ``module:attr`` or ``file.py:attr``. A file inside a package is imported
    under its package path, so class paths (part of every fingerprint) match the app's."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise CliError(f"GRAPH must be module:attribute or path/to/file.py:attribute, not {spec!r}")
    if target.endswith(".py") or "/" in target or os.sep in target:
        path = Path(target).resolve()
        if not path.is_file():
            raise CliError(f"GRAPH file {target!r} does not exist")
        parts, root = [] if path.stem == "__init__" else [path.stem], path.parent
        while (root / "__init__.py").is_file():
            parts, root = [root.name, *parts], root.parent
        name = ".".join(parts)
    else:
        name, root = target, Path.cwd()  # like `python -m`: the working directory first
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        obj: object = importlib.import_module(name)
    except Exception as exc:
        raise CliError(f"cannot import {name!r} for GRAPH {spec!r}: {one_line(exc)}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CliError(f"GRAPH {spec!r}: {name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def attach(target: object, saver: BaseCheckpointSaver[Any], spec: str | None) -> Graph:
    """The graph to plan with, reading checkpoints through ``saver``, which revives the
    classes the graph declares (``_serde.widen``)."""
    graph = _attached(target, saver, spec)
    for reading in {id(saver): saver, id(graph.checkpointer): graph.checkpointer}.values():
        widen(reading, graph)
    return graph


def _attached(target: object, saver: BaseCheckpointSaver[Any], spec: str | None) -> Graph:
    if isinstance(target, StateGraph):
        return compile(target, checkpointer=saver)
    entrypoint = isinstance(target, Pregel) and not isinstance(target, CompiledStateGraph)
    if entrypoint and not is_stamped(target):  # compiled as a builder is
        try:
            return compile(target, checkpointer=saver)  # type: ignore[arg-type]
        except GraphError as exc:
            raise CliError(f"GRAPH {spec!r}: {one_line(exc)}") from exc
    if isinstance(target, Pregel):
        if not is_stamped(target):
            raise CliError(
                f"GRAPH {spec!r} was compiled by plain LangGraph and carries no fingerprints: "
                "build it with neograph_ext.compile(builder, ...) or point GRAPH at the builder"
            )
        return target.copy(update={"checkpointer": saver})  # the stamp lives on its class
    raise CliError(
        f"GRAPH {spec!r} is of type {type(target).__name__}, not a StateGraph builder "
        "or a graph made by neograph_ext.compile"
    )
