"""neograph-ext: schema-fingerprinted auto-resume for LangGraph.

``compile`` stamps the fingerprints of a graph's types into every checkpoint;
``run`` (and ``arun``, ``stream``, ``astream``) compares them on resume and rewinds a
thread to just before the earliest node whose types changed, keeping the work
upstream of it. ``plan`` explains what a resume would do without doing it;
``history`` reads a thread's lineage, each step compared with the graph, and
``check_threads`` surveys a database's threads; ``prune`` removes what rewinds left
behind; ``upgrade_threads`` brings a fleet forward after a deploy. ``export_threads``
writes threads as fixtures that ``neograph_ext.testing`` plans new code against,
offline (with ``fingerprint_type`` to pin a type's digest in a test). Budgets and their
error live in ``neograph_ext.budget``, the records the functions return in
``neograph_ext.types``.
"""

import importlib
import warnings
from importlib.metadata import version as _version

from neograph_ext._accept import aaccept, accept
from neograph_ext._attach import AutoResume, WriteChecks
from neograph_ext._checks import (
    declared_classes,
    is_stamped,
    stale_values,
    unrevivable_types,
)
from neograph_ext._compile import compile
from neograph_ext._export import export_threads
from neograph_ext._fleet import acheck_threads, check_threads
from neograph_ext._lineage import ahistory, history
from neograph_ext._pruning import aprune, prune
from neograph_ext._public import publish as _publish
from neograph_ext._run import aplan, arun, astream, plan, run, stream
from neograph_ext._upgrade import aupgrade_threads, upgrade_threads
from neograph_ext.decision._decision import PlanKind, ResumePlan
from neograph_ext.decision._errors import (
    CheckpointSchemaError,
    GraphError,
    NeographExtError,
    StampLostError,
    ThreadBusyError,
    ThreadSupersededError,
    UnreadableCheckpointError,
    WriteReadbackError,
)
from neograph_ext.decision._policy import LockPolicy, ResumePolicy
from neograph_ext.storage._stamp_store import is_store_thread as is_reserved_thread
from neograph_ext.storage._telemetry import Telemetry

# The public submodules, as attributes of the package (``neograph_ext.budget.Budget``).
from neograph_ext import budget, testing, types  # noqa: F401  # isort: skip

__version__: str = _version("neograph-ext")
"""The installed distribution's version: pyproject.toml is its one source."""

__all__ = [
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
_publish(__name__, globals(), __all__)

_MOVED = {
    **dict.fromkeys(("Budget", "BudgetExceededError", "Ledger", "Spend"), "budget"),
    **dict.fromkeys(("aledger", "ledger"), "budget"),
    **dict.fromkeys(("FixtureError", "ThreadFixture", "fingerprint_type"), "testing"),
    **dict.fromkeys(("plan_fixture", "read_fixtures"), "testing"),
    **dict.fromkeys(
        ("ChangeReason", "DescriptionPruned", "History", "HistoryEntry", "Inventory"), "types"
    ),
    **dict.fromkeys(("NodeChange", "PruneReport", "PruneSkip", "StampStatus"), "types"),
    **dict.fromkeys(("StampThreads", "TaskStep", "ThreadCheck", "ThreadPruned"), "types"),
}
"""Names that 0.4 moved to a submodule: each still works, deprecated, for 0.4 (the budget
error beside the budgets, the fixture error and ``fingerprint_type`` beside the tests)."""

_SURVEYS = {
    "inventory": ("neograph_ext.types.Inventory.of", "_inventory", "Inventory.of"),
    "list_threads": ("neograph_ext.check_threads", "_lineage", "list_threads"),
    "alist_threads": ("neograph_ext.acheck_threads", "_lineage", "alist_threads"),
}
"""0.3's other surveys of threads: ``check_threads`` is the one survey in 0.4."""


def __getattr__(name: str) -> object:
    """A 0.3 name, with a ``DeprecationWarning`` naming its 0.4 spelling."""
    if name in _MOVED:
        new = f"neograph_ext.{_MOVED[name]}.{name}"
        value = getattr(importlib.import_module(f"neograph_ext.{_MOVED[name]}"), name)
    elif name in _SURVEYS:
        new, module, path = _SURVEYS[name]
        value = importlib.import_module(f"neograph_ext.{module}")
        for part in path.split("."):
            value = getattr(value, part)
    else:
        raise AttributeError(f"module 'neograph_ext' has no attribute {name!r}")
    warnings.warn(f"neograph_ext.{name} is deprecated: use {new}", DeprecationWarning, 2)
    return value
