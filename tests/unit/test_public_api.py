"""The exported surface is exactly what ``__all__`` says, and every name is documented."""

from __future__ import annotations

import inspect

import neograph_ext

EXPECTED = [
    "Budget",
    "BudgetExceededError",
    "ChangeReason",
    "CheckpointSchemaError",
    "DescriptionPruned",
    "FixtureError",
    "GraphError",
    "History",
    "HistoryEntry",
    "Inventory",
    "Ledger",
    "LockPolicy",
    "NeographExtError",
    "NodeChange",
    "PlanKind",
    "PruneReport",
    "PruneSkip",
    "ResumePlan",
    "ResumePolicy",
    "Spend",
    "StampLostError",
    "StampStatus",
    "StampThreads",
    "TaskStep",
    "Telemetry",
    "ThreadBusyError",
    "ThreadCheck",
    "ThreadFixture",
    "ThreadPruned",
    "ThreadSupersededError",
    "UnreadableCheckpointError",
    "WriteReadbackError",
    "aaccept",
    "accept",
    "acheck_threads",
    "ahistory",
    "aledger",
    "alist_threads",
    "aplan",
    "aprune",
    "arun",
    "astream",
    "check_threads",
    "compile",
    "declared_classes",
    "export_threads",
    "fingerprint_type",
    "history",
    "inventory",
    "is_reserved_thread",
    "is_stamped",
    "ledger",
    "list_threads",
    "plan",
    "plan_fixture",
    "prune",
    "read_fixtures",
    "run",
    "stale_values",
    "stream",
    "unrevivable_types",
]


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


def test_errors_share_one_root() -> None:
    for name in (
        "CheckpointSchemaError",
        "FixtureError",
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
