"""The garbage collector is paused while a batch of rows decodes, and only then."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from neograph_ext.storage._storage_rows import collector_paused


@pytest.fixture
def collector() -> Iterator[None]:
    """Leave the collector as the test found it."""
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()


def test_the_collector_is_paused_inside_and_runs_again_after(collector: None) -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_runs_again_when_decoding_fails(collector: None) -> None:
    gc.enable()
    with pytest.raises(ValueError, match="bad row"), collector_paused():
        raise ValueError("bad row")
    assert gc.isenabled()


def test_a_collector_the_caller_paused_stays_paused(collector: None) -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
