"""The oracle over generated apps: a fixed-seed slice on memory and SQLite in every run
of the suite, and the long suite on every saver (``make oracle``, marked ``oracle``;
``NEOGRAPH_EXT_ORACLE_EXAMPLES`` sets its size).

A case that is an instance of a row of ``test_rows`` still failing is left to that row
(``known_failure``): the row's strict xfail says what happens today."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings

from tests.conftest import opened_saver
from tests.oracle.oracle import Case, check
from tests.oracle.strategies import cases, known_failure

LONG_EXAMPLES = int(os.environ.get("NEOGRAPH_EXT_ORACLE_EXAMPLES", "10000"))


def _check(kind: str, case: Case) -> None:
    assume(known_failure(case) is None)
    with tempfile.TemporaryDirectory() as tmp, opened_saver(kind, Path(tmp)) as saver:
        check(case, saver)


_SLICE = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# Examples per saver in the slice: memory is the quicker, SQLite serializes as a
# deployment does.
_SLICE_EXAMPLES = {"memory": 60, "sqlite": 20}


@pytest.mark.parametrize("kind", list(_SLICE_EXAMPLES))
def test_a_resume_equals_a_fresh_run_of_the_new_code(kind: str) -> None:
    @settings(_SLICE, max_examples=_SLICE_EXAMPLES[kind])
    @given(case=cases())
    def resumes_as_fresh(case: Case) -> None:
        _check(kind, case)

    resumes_as_fresh()


@pytest.mark.oracle
@pytest.mark.parametrize(
    "kind", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
@settings(max_examples=LONG_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases())
def test_a_resume_equals_a_fresh_run_over_many_apps(kind: str, case: Case) -> None:
    _check(kind, case)
