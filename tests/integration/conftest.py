"""The integration suite runs under the plan == run harness (``agreement``)."""

from __future__ import annotations

import pytest

from tests.integration.agreement import install


@pytest.fixture(autouse=True)
def plan_agrees_with_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``run``/``arun``/``stream``/``astream`` call is checked against ``plan()``."""
    install(monkeypatch)
