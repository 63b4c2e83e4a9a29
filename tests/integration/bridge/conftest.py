"""Fixtures of the bridge's broker tests: one lane (catalogue copy, names, topology) per test, deleted afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.bridge.bridge_support import Lane, declare, delete_all, make_lane


@pytest.fixture
def lane(rabbitmq_url: str, tmp_path: Path) -> Iterator[Lane]:
    """A lane with its v2 consumer queue bound: the target topology is there."""
    lane = make_lane(rabbitmq_url, tmp_path)
    try:
        declare(lane)
        yield lane
    finally:
        delete_all(lane)


@pytest.fixture
def lane_without_v2(rabbitmq_url: str, tmp_path: Path) -> Iterator[Lane]:
    """A lane whose v2 routing key reaches no queue: the target topology is missing."""
    lane = make_lane(rabbitmq_url, tmp_path)
    try:
        declare(lane, v2_bound=False)
        yield lane
    finally:
        delete_all(lane)
