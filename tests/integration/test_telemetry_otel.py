"""``compile(telemetry=Telemetry(...))`` with OpenTelemetry: a log event correlated to the
current span and counters, read back from the SDK's in-memory exporters; and without
OpenTelemetry, nothing breaks.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span

import neograph_ext as ne
from tests.drive import SYNC_ONLY, Drive
from tests.graphs.pipelines import Crash, linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))
ROOT = Path(__file__).resolve().parents[2]


class Exporters:
    """In-memory OpenTelemetry providers, and what reached them."""

    def __init__(self) -> None:
        self.metrics = InMemoryMetricReader()
        self.logs = InMemoryLogRecordExporter()
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        self.telemetry = ne.Telemetry(
            meter_provider=MeterProvider(metric_readers=[self.metrics]),
            logger_provider=logger_provider,
        )
        self.tracer = TracerProvider().get_tracer("app")

    def counted(self) -> dict[str, dict[tuple[tuple[str, Any], ...], Any]]:
        """Per counter, its value per attribute set."""
        found: dict[str, dict[tuple[tuple[str, Any], ...], Any]] = {}
        data = self.metrics.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    points = found.setdefault(metric.name, {})
                    for point in metric.data.data_points:  # type: ignore[union-attr]
                        points[tuple(sorted((point.attributes or {}).items()))] = point.value
        return found


def _in_span(
    drive: Drive, exporters: Exporters, graph: Any, config: RunnableConfig
) -> tuple[Any, Span]:
    """``run`` inside a span of the application's, as a request handler would call it."""
    if not drive.is_async:
        with exporters.tracer.start_as_current_span("request") as span:
            return ne.run(graph, None, config), span

    async def inside() -> tuple[Any, Span]:
        with exporters.tracer.start_as_current_span("request") as span:
            return await ne.arun(graph, None, config), span

    return drive.wait(inside())


def test_a_rewind_is_logged_in_the_current_span_and_counted(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    crashing = ne.compile(linear(Counter(), {"c": V1}, crash="d"), checkpointer=saver)
    with pytest.raises(Crash):
        drive.run(crashing, {"log": []}, config)
    exporters, runs = Exporters(), Counter[str]()
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver, attach=[exporters.telemetry])
    expected = drive.plan(graph, config)

    _, span = _in_span(drive, exporters, graph, config)
    assert runs == Counter("cd")
    (log,) = [finished.log_record for finished in exporters.logs.get_finished_logs()]
    assert log.event_name == "neograph_ext.plan"
    assert log.span_id == span.get_span_context().span_id
    assert log.trace_id == span.get_span_context().trace_id
    assert isinstance(log.body, dict)
    assert log.body["kind"] == "rewind" and log.body["rerun"] == ["c", "d"]
    assert dict(log.attributes or {}) == {
        "neograph_ext.decision": "rewind",
        "neograph_ext.thread_id": config["configurable"]["thread_id"],
        "neograph_ext.checkpoint_id": expected.checkpoint_id,
        "neograph_ext.head_id": expected.head_id,
    }
    rewind = (("neograph_ext.decision", "rewind"),)
    assert exporters.counted() == {
        "neograph_ext.decisions": {rewind: 1},
        "neograph_ext.decision_reasons": {(*rewind, ("neograph_ext.reason", "output type")): 1},
        "neograph_ext.rewound_nodes": {rewind: 2},
    }

    _in_span(drive, exporters, graph, config)
    assert runs == Counter("cd")
    counted = exporters.counted()
    up_to_date = (("neograph_ext.decision", "up_to_date"),)
    assert counted["neograph_ext.decisions"] == {rewind: 1, up_to_date: 1}
    assert counted["neograph_ext.rewound_nodes"] == {rewind: 2, up_to_date: 0}
    assert len(exporters.logs.get_finished_logs()) == 2


def test_a_plain_call_of_an_auto_resume_graph_is_counted(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    exporters = Exporters()
    graph = ne.compile(
        linear(Counter()), checkpointer=saver, attach=[ne.AutoResume(), exporters.telemetry]
    )
    drive.invoke(graph, {"log": []}, config)
    (log,) = [finished.log_record for finished in exporters.logs.get_finished_logs()]
    assert isinstance(log.body, dict) and log.body["kind"] == "fresh"
    fresh = (("neograph_ext.decision", "fresh"),)
    assert exporters.counted()["neograph_ext.decisions"] == {fresh: 1}


ABSENT = """
import sys
sys.modules["opentelemetry"] = None  # as if opentelemetry-api were not installed
"""
TOO_OLD = """
import importlib.metadata
newest = importlib.metadata.version
importlib.metadata.version = lambda name: "1.20.0" if name == "opentelemetry-api" else newest(name)
"""


@pytest.mark.slow
@SYNC_ONLY  # its subject is the import of the package, in a subprocess
@pytest.mark.parametrize("without", [ABSENT, TOO_OLD], ids=["absent", "too-old"])
def test_without_opentelemetry_the_event_is_still_dispatched(drive: Drive, without: str) -> None:
    script = without + textwrap.dedent(
        """
        import sys
        from collections import Counter
        from langgraph.checkpoint.memory import InMemorySaver
        from langchain_core.callbacks import BaseCallbackHandler
        import neograph_ext as ne
        from tests.graphs.pipelines import linear

        class Seen(BaseCallbackHandler):
            kinds = []
            def on_custom_event(self, name, data, **kwargs):
                self.kinds.append(data["kind"])

        graph = ne.compile(linear(Counter()), checkpointer=InMemorySaver(), attach=[ne.Telemetry()])
        config = {"configurable": {"thread_id": "t"}, "callbacks": [Seen()]}
        assert ne.run(graph, {"log": []}, config) == {"log": list("abcd")}
        assert "neograph_ext.storage._otel" not in sys.modules
        print(Seen.kinds)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['fresh']"
