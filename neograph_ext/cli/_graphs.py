"""How the command line finds GRAPH and points it at the database.

Rules:
- ``module:attr`` is imported as ``python -m`` would (the working directory first);
  ``file.py:attr`` under its package path, so class paths (part of every fingerprint)
  match the app's.
- A graph ``neograph_ext.compile`` made is copied with the database's saver and keeps its
  stamp; a builder, a graph compiled by plain LangGraph (a ``create_agent`` agent) or an
  ``@entrypoint`` is compiled by ``neograph_ext.compile``, as the app's own call would;
  anything else is refused, naming what GRAPH may be.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel

from neograph_ext import GraphError, compile, is_stamped
from neograph_ext.cli._boundary import CliError, one_line
from neograph_ext.cli._serde import widen

__all__ = ["Graph", "GraphArg", "attach", "load"]

Graph = Pregel[Any, Any, Any, Any]

GraphArg = Annotated[
    str,
    typer.Argument(
        metavar="GRAPH",
        help="module:attribute or path/to/file.py:attribute: a StateGraph builder, a "
        "compiled graph (a create_agent agent too) or an @entrypoint",
    ),
]
"""Every command's GRAPH, which ``load`` imports and ``attach`` compiles."""


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
    if isinstance(target, Pregel) and is_stamped(target):
        return target.copy(update={"checkpointer": saver})  # the stamp lives on its class
    if isinstance(target, StateGraph | Pregel):
        # A builder, or a graph compiled by plain LangGraph (a ``create_agent`` agent, a
        # ``StateGraph(...).compile()``, an ``@entrypoint``): compiled as the app would.
        try:
            return compile(target, checkpointer=saver)
        except GraphError as exc:
            raise CliError(f"GRAPH {spec!r}: {one_line(exc)}") from exc
    raise CliError(
        f"GRAPH {spec!r} is of type {type(target).__name__}, not a StateGraph builder, a "
        "compiled graph or an @entrypoint"
    )
