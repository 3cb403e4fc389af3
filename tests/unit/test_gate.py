"""The CI gate's verdicts, judged from plans alone."""

from __future__ import annotations

import pytest

from neograph_ext import CheckpointSchemaError, GraphError, PlanKind, ResumePlan
from neograph_ext.decision._errors import UnreadableCheckpointError
from neograph_ext.decision._gate import GateReport, Outcome, allowed, verdict

REWIND = ResumePlan(
    PlanKind.REWIND,
    "t",
    head_id="h",
    checkpoint_id="c1",
    step=1,
    invalidated_nodes=frozenset({"c"}),
    rerun=frozenset({"c", "d"}),
    order=("a", "b", "c", "d"),
)
NONE: frozenset[Outcome] = frozenset()


@pytest.mark.parametrize(
    ("plan", "error", "outcome"),
    [
        (ResumePlan(PlanKind.UP_TO_DATE, "t"), None, Outcome.RESUMES),
        (ResumePlan(PlanKind.CONTINUE, "t", next_nodes=frozenset({"d"})), None, Outcome.RESUMES),
        (ResumePlan(PlanKind.MIGRATE, "t"), None, Outcome.RESUMES),
        (REWIND, None, Outcome.REWIND),
        (REWIND, CheckpointSchemaError("strict", REWIND), Outcome.RAISE),
        (ResumePlan(PlanKind.REWIND, "t", blocker="an earlier turn"), None, Outcome.REFUSE),
        (None, UnreadableCheckpointError("damaged"), Outcome.ERROR),
    ],
)
def test_each_plan_has_one_outcome(
    plan: ResumePlan | None, error: CheckpointSchemaError | None, outcome: Outcome
) -> None:
    found = verdict("t", "t.json", plan, error, NONE)
    assert found.outcome is outcome
    assert found.passed is (outcome is Outcome.RESUMES)


def test_allowing_rewinds_passes_rewinds_only() -> None:
    rewind = allowed("rewind")
    assert verdict("t", "t.json", REWIND, None, rewind).passed
    strict = CheckpointSchemaError("strict mode", REWIND)
    assert not verdict("t", "t.json", REWIND, strict, rewind).passed
    blocked = ResumePlan(PlanKind.REWIND, "t", blocker="an earlier turn")
    assert not verdict("t", "t.json", blocked, None, rewind).passed


def test_only_rewind_can_be_allowed() -> None:
    assert allowed(["rewind"]) == {Outcome.REWIND}
    with pytest.raises(GraphError, match="allow takes rewind, not 'raise'"):
        allowed(["raise"])


def test_the_report_says_per_thread_what_reruns_and_why() -> None:
    report = GateReport(
        (
            verdict("done", "done.json", REWIND, None, NONE),
            verdict("ok", "ok.json", ResumePlan(PlanKind.UP_TO_DATE, "ok"), None, NONE),
        )
    )
    assert not report.ok and [v.thread_id for v in report.failing] == ["done"]
    text = str(report)
    assert text.splitlines()[0] == (
        "2 thread fixture(s) planned against this code: 1 would not resume cleanly"
    )
    assert "FAIL thread 'done' (done.json): rewind from step 1, checkpoint c1" in text
    assert "re-runs: c, d" in text
    assert "ok   thread 'ok' (ok.json): resumes (up_to_date)" in text


def test_a_rewind_the_missing_values_may_explain_says_so() -> None:
    found = verdict("t", "t.json", REWIND, None, NONE, values_missing=True)
    assert "--with-values" in found.describe()
    kept = verdict("t", "t.json", ResumePlan(PlanKind.UP_TO_DATE, "t"), None, NONE)
    assert "--with-values" not in kept.describe()
