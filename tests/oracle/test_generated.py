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


@settings(_SLICE, max_examples=60)
@given(case=cases())
def test_a_resume_equals_a_fresh_run_of_the_new_code_in_memory(case: Case) -> None:
    _check("memory", case)


@settings(_SLICE, max_examples=20)
@given(case=cases())
def test_a_resume_equals_a_fresh_run_of_the_new_code_on_sqlite(case: Case) -> None:
    _check("sqlite", case)


@pytest.mark.oracle
@pytest.mark.parametrize(
    "kind", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
@settings(max_examples=LONG_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases())
def test_a_resume_equals_a_fresh_run_over_many_apps(kind: str, case: Case) -> None:
    _check(kind, case)
