"""The broker lab's gate: its tests need Java and Maven (the jars resolve once into ~/.cache/replog/brokers/).

Where either is missing the lab's tests fail under `CI=true` (CI must run them) and skip with a one-line reason
elsewhere. `make test` runs the bounded set (tests marked `brokers` without `brokers_full`); `make test-brokers`
(REPLOG_LAB=all) runs every scenario of every version.
"""
from __future__ import annotations

import os

import pytest

from tests.brokers.jars import tools_problem


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("REPLOG_LAB") == "all":
        return
    full = [item for item in items if item.get_closest_marker("brokers_full")]
    if full:
        config.hook.pytest_deselected(items=full)
        items[:] = [item for item in items if not item.get_closest_marker("brokers_full")]


@pytest.fixture(autouse=True)
def _lab_tools() -> None:
    problem = tools_problem()
    if problem is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"broker lab under CI=true: {problem}")
    pytest.skip(f"broker lab: {problem}")
