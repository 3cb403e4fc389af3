"""Pytest plugin: run the collected tests in an order shuffled by a seed.

Loaded with ``-p shuffle`` by every pass of ``make compat``; ``--compat-order SEED`` with
a seed other than 0 shuffles, 0 keeps the suite's own order. Every pytest-xdist worker
collects the same items and shuffles them with the same seed, so they agree on the order,
as pytest-xdist requires. A routed pass is compared with the baseline run in the same
order, so a difference seen in one order only is one: a test passing only because of what
an earlier test left behind (an import, a cache) shows up.
"""

from __future__ import annotations

import random

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--compat-order", type=int, default=0, metavar="SEED", help="shuffle the tests by SEED"
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seed = config.getoption("--compat-order")
    if seed:
        random.Random(seed).shuffle(items)
