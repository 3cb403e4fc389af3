"""A CI gate without the production database: plan new code against exported threads.

Export real threads once (``neograph-ext export GRAPH --db DB --out fixtures/``, or
``neograph_ext.export_threads``), commit the files, and fail the build when the code
about to ship would rewind them, refuse them or raise::

    from neograph_ext.testing import assert_resumable

    def test_the_deploy_resumes_production_threads() -> None:
        assert_resumable(builder, "tests/fixtures/threads/")

Planning is ``plan``'s own decision over the fixture's checkpoints; no database is
opened (``docs/operations.md``, "A CI gate from exported threads"). A test can pin a
type's digest as well (``fingerprint_type``); a file that is not a fixture this version
reads is a ``FixtureError``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from neograph_ext._offline import judged, offline_graph, plan_fixture
from neograph_ext._public import publish
from neograph_ext.decision._claim import last_writer
from neograph_ext.decision._errors import FixtureError
from neograph_ext.decision._fingerprint import fingerprint_type
from neograph_ext.decision._gate import GateReport, Outcome, ThreadVerdict, allowed, verdict
from neograph_ext.decision._policy import ResumePolicy
from neograph_ext.decision._stamp import read_marks
from neograph_ext.storage._fixtures import ThreadFixture, read_fixtures

__all__ = [
    "FixtureError",
    "GateReport",
    "Outcome",
    "ThreadFixture",
    "ThreadVerdict",
    "assert_resumable",
    "check_fixtures",
    "fingerprint_type",
    "plan_fixture",
    "read_fixtures",
]


def check_fixtures(
    graph: object,
    fixtures: str | Path,
    *,
    allow: str | Collection[str] = (),
    resume: ResumePolicy | None = None,
) -> GateReport:
    """Plan ``graph`` against every fixture in the directory ``fixtures``, offline.

    Args:
        graph: The code about to ship: a ``StateGraph`` builder, a graph made by
            ``neograph_ext.compile`` (its checkpointer is never used), or one plain
            LangGraph compiled (a ``create_agent`` agent, an ``@entrypoint``).
        fixtures: A directory of exported threads (``*.json``).
        allow: Outcomes to accept: ``"rewind"`` for teams that accept rewinds but not
            errors. A thread that would refuse or raise always fails.
        resume: Plan under this policy rather than the graph's (``compile(resume=...)``).

    Returns:
        The report: one verdict per thread (``GateReport.ok``; ``str()`` reads it out).

    Raises:
        FixtureError: The directory holds no fixture, or a file is not one this
            version reads.
        GraphError: ``graph`` cannot be planned with, or ``allow`` names something else.
    """
    accepted = allowed(allow)
    found = read_fixtures(fixtures)
    planned_with = offline_graph(graph)
    verdicts = []
    for fixture in found:
        plan, error, carries = judged(planned_with, fixture, resume)
        judgement = verdict(
            fixture.thread_id,
            fixture.source,
            plan,
            error,
            accepted,
            values_missing=carries and not fixture.with_values,
        )
        verdicts.append(replace(judgement, written_by=_writer(fixture), ledger=fixture.ledger))
    return GateReport(tuple(verdicts), accepted)


def assert_resumable(
    graph: object,
    fixtures: str | Path,
    *,
    allow: str | Collection[str] = (),
    resume: ResumePolicy | None = None,
) -> GateReport:
    """``check_fixtures``, raising when any thread fails: for a pytest test.

    Returns:
        The report, when every thread passed.

    Raises:
        AssertionError: A thread would rewind (unless allowed), refuse or raise, or
            could not be planned; the message is the whole report.
        FixtureError: As for ``check_fixtures``.
        GraphError: As for ``check_fixtures``.
    """
    report = check_fixtures(graph, fixtures, allow=allow, resume=resume)
    if not report.ok:
        raise AssertionError(str(report))
    return report


def _writer(fixture: ThreadFixture) -> str | None:
    """The stamp that last wrote the fixture's thread, as ``check_threads`` reads it."""
    head = fixture.tuple_at(None)
    if head is None:
        return None
    return last_writer(read_marks(head.metadata or {})[0], head.pending_writes or ())


publish(__name__, globals(), __all__)
