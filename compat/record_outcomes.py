"""Pytest plugin: record every test's outcome and failure text as JSON.

Loaded with ``-p record_outcomes`` in both passes of ``make compat``; the file named
by ``--compat-record`` maps node ids to ``{"outcome": ..., "text": ...}``. Under
pytest-xdist only the controller writes it (workers send their reports there).

It also explains failed ``==`` assertions whose operands are equal once every
metadata key neograph-ext writes (``neograph_ext``, ``neograph_ext_run``) is removed
from them: the explanation starts with ``METADATA_ONLY_MARK``, which is how the
comparison recognises a failure caused only by what neograph-ext adds to metadata.
Anything it cannot strip safely (syrupy snapshots, unknown objects) is left for
pytest to explain as usual.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

__all__ = ["METADATA_ONLY_MARK", "STAMP_PREFIX", "strip_stamp"]

METADATA_ONLY_MARK = "NEOGRAPH_EXT_METADATA_ONLY"
STAMP_PREFIX = "neograph_ext"
STAMP_KEYS = frozenset({STAMP_PREFIX, f"{STAMP_PREFIX}_run"})
"""Every metadata key neograph-ext writes: the stamp reference and the run mark."""
# Kept in step with route_compile.ROUTED_PROPERTY: only the wrapped pass loads that plugin.
ROUTED_PROPERTY = "neograph_ext_routed_compiles"
ENTRYPOINT_PROPERTY = "neograph_ext_routed_entrypoints"
READBACK_PROPERTY = "neograph_ext_readback_warnings"


class _Unstrippable(Exception):
    """An operand holds something whose equality cannot be rebuilt without the stamp."""


def _is_stamp_key(key: object) -> bool:
    return isinstance(key, str) and key in STAMP_KEYS


def _only_stamp(value: object) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(map(_is_stamp_key, value))


def strip_stamp(value: Any) -> Any:
    """A copy of ``value`` without neograph-ext's metadata keys, at any depth.

    Raises:
        _Unstrippable: ``value`` contains an object whose equality could depend on
            state this function cannot see (e.g. a syrupy snapshot, which records
            every comparison made against it).
    """
    if type(value).__module__.startswith("syrupy"):
        raise _Unstrippable(type(value).__qualname__)
    if isinstance(value, Mapping):
        # A mapping that holds nothing but the stamp (e.g. a task event's `metadata`)
        # would be absent plainly: LangGraph leaves empty metadata out.
        items = {
            k: strip_stamp(v)
            for k, v in value.items()
            if not _is_stamp_key(k) and not _only_stamp(v)
        }
        try:
            rebuild: Any = type(value)  # keeps AnyDict and friends comparing their way
            return rebuild(items)
        except TypeError:
            return items
    if isinstance(value, tuple):
        stripped = [strip_stamp(v) for v in value]
        if hasattr(value, "_fields"):  # NamedTuple: StateSnapshot, CheckpointTuple, ...
            return type(value)(*stripped)
        return tuple(stripped)
    if isinstance(value, list):
        return [strip_stamp(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: strip_stamp(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init
        }
        return dataclasses.replace(value, **changes)
    return value


def _stamp_paths(value: Any, path: str = "") -> set[str]:
    """Where the stamp sits in ``value`` (list positions as ``[*]``), for the list's reasons."""
    if isinstance(value, Mapping):
        found = {f"{path}.{k}".lstrip(".") for k in value if _is_stamp_key(k)}
        for k, v in value.items():
            found |= _stamp_paths(v, f"{path}.{k}")
        return found
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return set().union(*(_stamp_paths(getattr(value, f), f"{path}.{f}") for f in value._fields))
    if isinstance(value, list | tuple):
        return set().union(*(_stamp_paths(v, f"{path}[*]") for v in value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return set().union(
            *(_stamp_paths(getattr(value, f.name), f"{path}.{f.name}") for f in fields)
        )
    return set()


@pytest.hookimpl(tryfirst=True)
def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: object, right: object
) -> list[str] | None:
    if op != "==":
        return None
    try:
        equal_without_stamp = bool(strip_stamp(left) == strip_stamp(right))
    except Exception:
        # Stripping or comparing failed: this assertion is not metadata-only.
        return None
    if not equal_without_stamp:
        return None
    paths = sorted(_stamp_paths(left) | _stamp_paths(right))
    where = ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")
    return [
        f"{METADATA_ONLY_MARK}: operands differ only under `{STAMP_PREFIX}` metadata keys"
        f" (at {where})",
    ]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--compat-record",
        metavar="PATH",
        help="write each test's outcome and failure text to PATH as JSON",
    )


class _Recorder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.results: dict[str, dict[str, Any]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.results.setdefault(
            report.nodeid, {"outcome": "passed", "text": "", "seconds": 0.0}
        )
        entry["seconds"] = round(entry["seconds"] + report.duration, 3)
        routed = sum(
            n for key, n in report.user_properties if key == ROUTED_PROPERTY and isinstance(n, int)
        )
        entry["routed"] = entry.get("routed", 0) + routed
        entrypoints = sum(
            n
            for key, n in report.user_properties
            if key == ENTRYPOINT_PROPERTY and isinstance(n, int)
        )
        if entrypoints:
            entry["entrypoints"] = entry.get("entrypoints", 0) + entrypoints
        for key, reasons in report.user_properties:
            if key == READBACK_PROPERTY and isinstance(reasons, list) and reasons:
                entry["readback"] = sorted({*entry.get("readback", []), *reasons})
        if entry["outcome"] in ("failed", "error"):
            return  # keep the first failure: later phases (teardown) only add noise
        xfail = hasattr(report, "wasxfail")
        if report.when == "call":
            if report.passed:
                entry["outcome"] = "xpassed" if xfail else "passed"
            elif report.skipped:
                entry["outcome"] = "xfailed" if xfail else "skipped"
            else:
                entry["outcome"] = "failed"
        elif report.failed:
            entry["outcome"] = "error"
        elif report.skipped:
            entry["outcome"] = "xfailed" if xfail else "skipped"
        if report.failed:
            entry["text"] = report.longreprtext

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # A module that fails to import (e.g. compiles a graph at import) hides its tests.
        if report.failed:
            self.results[report.nodeid] = {
                "outcome": "error",
                "text": report.longreprtext,
                "seconds": 0.0,
            }

    def pytest_sessionfinish(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.results, indent=0, sort_keys=True))


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--compat-record")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Recorder(Path(path)), "compat-recorder")
