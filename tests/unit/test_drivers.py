"""The drivers' table (``_drivers.ROWS``): one row per basic operation, which both drivers
perform, and a driver refuses what its rows lack."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from neograph_ext import GraphError
from neograph_ext.decision._operations import Op, TakeLock
from neograph_ext.drivers._drivers import ROWS, AsyncDriver, Driver
from neograph_ext.drivers._thread import ThreadCall


def test_every_operation_has_a_row() -> None:
    assert set(typing.get_args(Op)) == set(ROWS)


def _call() -> ThreadCall:
    """What a driver works on; the refusal below touches none of it."""
    return ThreadCall(None, {}, None, None, "t")  # type: ignore[arg-type]


def test_a_driver_refuses_an_operation_its_rows_lack() -> None:
    with Driver(_call(), rows={}) as driver, pytest.raises(GraphError, match="TakeLock"):
        driver.perform(TakeLock())


async def test_the_async_driver_refuses_it_too() -> None:
    driver: Any = AsyncDriver(_call(), rows={})
    with pytest.raises(GraphError, match="TakeLock"):
        await driver.perform(TakeLock())
