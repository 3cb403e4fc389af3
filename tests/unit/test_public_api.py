"""The exported surface is exactly what ``__all__`` says, and every name is documented."""

from __future__ import annotations

import importlib
import inspect
import pickle
import traceback
import typing
import warnings

import langgraph.errors
import pytest
from pydantic import TypeAdapter

import neograph_ext

EXPECTED = [
    "AutoResume",
    "CheckpointSchemaError",
    "GraphError",
    "LockPolicy",
    "NeographExtError",
    "PlanKind",
    "ResumePlan",
    "ResumePolicy",
    "StampLostError",
    "Telemetry",
    "ThreadBusyError",
    "ThreadSupersededError",
    "UnreadableCheckpointError",
    "WriteChecks",
    "WriteReadbackError",
    "aaccept",
    "accept",
    "acheck_threads",
    "ahistory",
    "aplan",
    "aprune",
    "arun",
    "astream",
    "aupgrade_threads",
    "check_threads",
    "compile",
    "declared_classes",
    "export_threads",
    "history",
    "is_reserved_thread",
    "is_stamped",
    "plan",
    "prune",
    "run",
    "stale_values",
    "stream",
    "unrevivable_types",
    "upgrade_threads",
]
SUBMODULES = {"budget", "testing", "types"}
"""Public submodules: each with its own sorted ``__all__``, every name documented."""

NEW_IN_TYPES = {"CostLine", "DeployCost", "ThreadUpgrade", "UpgradeAction"}
"""Records 0.4 added to ``types``: never top-level names, so never moved."""

MOVED = {
    **dict.fromkeys(neograph_ext.budget.__all__, "budget"),
    **dict.fromkeys(
        ["FixtureError", "ThreadFixture", "fingerprint_type", "plan_fixture", "read_fixtures"],
        "testing",
    ),
    **dict.fromkeys(sorted(set(neograph_ext.types.__all__) - NEW_IN_TYPES), "types"),
}
"""The top-level names that 0.4 moved, and where."""


def test_exports_are_exactly_all() -> None:
    assert neograph_ext.__all__ == EXPECTED
    public = {
        name
        for name, value in vars(neograph_ext).items()
        if not name.startswith("_") and not inspect.ismodule(value)  # e.g. the cli submodule
    }
    assert public == set(EXPECTED)


def test_every_export_has_a_docstring() -> None:
    for name in EXPECTED:
        assert inspect.getdoc(getattr(neograph_ext, name)), name
    for module in SUBMODULES:
        sub = getattr(neograph_ext, module)
        assert inspect.getdoc(sub) and sub.__all__ == sorted(sub.__all__), module
        for name in sub.__all__:
            assert inspect.getdoc(getattr(sub, name)), f"{module}.{name}"


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_moved_0_3_name_warns_naming_its_place_and_is_the_same_object(name: str) -> None:
    module = getattr(neograph_ext, MOVED[name])
    assert name in module.__all__ and name not in neograph_ext.__all__
    with pytest.warns(DeprecationWarning, match=rf"neograph_ext\.{name} is deprecated: use "):
        old = getattr(neograph_ext, name)
    assert old is getattr(module, name)
    assert f"neograph_ext.{MOVED[name]}.{name}" in str(_warning(name))


@pytest.mark.parametrize(
    ("name", "new"),
    [
        ("inventory", "neograph_ext.types.Inventory.of"),
        ("list_threads", "neograph_ext.check_threads"),
        ("alist_threads", "neograph_ext.acheck_threads"),
    ],
)
def test_the_other_0_3_surveys_warn_naming_the_one_survey(name: str, new: str) -> None:
    assert f"use {new}" in str(_warning(name))
    with pytest.warns(DeprecationWarning):
        assert callable(getattr(neograph_ext, name))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        neograph_ext.Nope  # noqa: B018


def _warning(name: str) -> warnings.WarningMessage:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        getattr(neograph_ext, name)
    [warning] = seen
    assert warning.category is DeprecationWarning and warning.filename == __file__
    return warning


def test_errors_share_one_root() -> None:
    assert issubclass(neograph_ext.budget.BudgetExceededError, neograph_ext.NeographExtError)
    assert issubclass(neograph_ext.testing.FixtureError, neograph_ext.NeographExtError)
    for name in (
        "CheckpointSchemaError",
        "GraphError",
        "StampLostError",
        "ThreadBusyError",
        "UnreadableCheckpointError",
        "WriteReadbackError",
    ):
        assert issubclass(getattr(neograph_ext, name), neograph_ext.NeographExtError)


def test_reserved_threads_are_named_by_their_prefix() -> None:
    assert neograph_ext.is_reserved_thread("neograph-ext-stamp:" + "0" * 64)
    assert not neograph_ext.is_reserved_thread("ticket-1")
    assert not neograph_ext.is_reserved_thread(None)


PUBLIC_MODULES = ("neograph_ext", *(f"neograph_ext.{name}" for name in sorted(SUBMODULES)))


def _public_classes() -> list[tuple[str, type]]:
    modules = [importlib.import_module(name) for name in PUBLIC_MODULES]
    return [
        (module.__name__, value)
        for module in modules
        for value in (getattr(module, name) for name in module.__all__)
        if isinstance(value, type)
    ]


@pytest.mark.parametrize(
    ("module", "cls"), _public_classes(), ids=lambda v: getattr(v, "__name__", v)
)
def test_a_public_class_names_the_module_it_is_imported_from(module: str, cls: type) -> None:
    """Tracebacks, ``help()`` and a generated reference name the public path."""
    assert cls.__module__ == module
    assert getattr(importlib.import_module(cls.__module__), cls.__qualname__) is cls
    typing.get_type_hints(cls)  # its annotations still resolve (pydantic, FastAPI read them)


def test_a_traceback_names_the_public_exception() -> None:
    try:
        raise neograph_ext.CheckpointSchemaError("changed", _plan())
    except neograph_ext.CheckpointSchemaError as exc:
        said = "".join(traceback.format_exception_only(exc))
    assert said.startswith("neograph_ext.CheckpointSchemaError: changed")
    assert type(pickle.loads(pickle.dumps(neograph_ext.GraphError("x")))) is neograph_ext.GraphError


def test_pydantic_still_reads_a_public_record() -> None:
    schema = TypeAdapter(neograph_ext.ResumePlan).json_schema()
    assert schema["title"] == "ResumePlan" and "kind" in schema["properties"]


def _plan() -> neograph_ext.ResumePlan:
    return neograph_ext.ResumePlan(kind=neograph_ext.PlanKind.FRESH, thread_id="t1")


def test_langgraph_has_no_error_of_the_same_name() -> None:
    """``neograph_ext.GraphError`` is no LangGraph error, and shares no LangGraph error's
    name, so an ``except`` cannot catch the wrong one. Should LangGraph add a
    ``GraphError``, this fails: ours then subclasses it or takes a name of its own."""
    assert not hasattr(langgraph.errors, "GraphError")
    assert not issubclass(neograph_ext.GraphError, tuple(_langgraph_errors()))


def _langgraph_errors() -> list[type]:
    return [v for v in vars(langgraph.errors).values() if isinstance(v, type)]
