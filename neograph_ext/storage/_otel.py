"""A decision in OpenTelemetry: a log event and counters. Imported only when
``opentelemetry-api`` is installed (``_telemetry``); it is no dependency of the package.

Rules:
- The API alone: without an SDK configured, every call here is OpenTelemetry's no-op.
- The log event is emitted in the current context, so an SDK correlates it to the
  current span (its trace and span ids), as OpenTelemetry's logs do.
- An ``opentelemetry-api`` older than ``OLDEST`` is not used: importing this module
  raises ``ImportError``, as if the API were absent.
- Attribute values are bounded sets (kinds, reasons), never ids: ids are high-cardinality
  and belong in the log event, not on a counter.

Checked on opentelemetry-api and -sdk 1.45.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from opentelemetry import metrics
from opentelemetry._logs import SeverityNumber, get_logger

from neograph_ext.decision._decision import ResumePlan

__all__ = ["OLDEST", "SCOPE", "record_decision"]

OLDEST = (1, 45)
"""The oldest ``opentelemetry-api`` used (keyword ``Logger.emit(event_name=...)``): an
older one, installed for another package, counts as absent rather than failing runs."""

if tuple(int(part) for part in version("opentelemetry-api").split(".")[:2]) < OLDEST:
    raise ImportError(f"opentelemetry-api {version('opentelemetry-api')} is older than 1.45")

SCOPE = "neograph_ext"
"""The instrumentation scope of the meter and the logger."""


def record_decision(
    plan: ResumePlan, data: dict[str, Any], meter_provider: Any, logger_provider: Any
) -> None:
    """Emit ``plan``'s log event (body ``data``) and add it to the counters:
    ``neograph_ext.decisions`` (by kind), ``neograph_ext.decision_reasons`` (by kind and
    each distinct reason) and ``neograph_ext.rewound_nodes`` (the nodes that run again).

    Providers left None are the global ones.
    """
    kind = {"neograph_ext.decision": str(plan.kind)}
    meter = metrics.get_meter(SCOPE, meter_provider=meter_provider)
    meter.create_counter(
        "neograph_ext.decisions", unit="{decision}", description="Resume decisions, by kind"
    ).add(1, kind)
    reasons = meter.create_counter(
        "neograph_ext.decision_reasons",
        unit="{decision}",
        description="Resume decisions, by kind and by each reason a node's results no longer count",
    )
    for reason in sorted({str(change.reason) for change in plan.changes}):
        reasons.add(1, {**kind, "neograph_ext.reason": reason})
    meter.create_counter(
        "neograph_ext.rewound_nodes",
        unit="{node}",
        description="Nodes a resume decision runs again, by kind of decision",
    ).add(len(plan.rerun), kind)
    attributes = {**kind, "neograph_ext.thread_id": plan.thread_id}
    if plan.checkpoint_id is not None:
        attributes["neograph_ext.checkpoint_id"] = plan.checkpoint_id
    if plan.head_id is not None:
        attributes["neograph_ext.head_id"] = plan.head_id
    get_logger(SCOPE, logger_provider=logger_provider).emit(
        event_name="neograph_ext.plan",
        severity_number=SeverityNumber.INFO,
        body=data,
        attributes=attributes,
    )
