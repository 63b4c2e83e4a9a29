"""Which queues the non-destructive peek may read, by queue type, limit and broker version."""

from __future__ import annotations

from typing import Any

import pytest

from contract_platform.amqp.peek import requeue_risk


@pytest.mark.parametrize(
    ("queue_type", "arguments", "policy", "version", "safe"),
    [
        ("classic", {}, {}, (4, 2, 0), True),
        ("quorum", {}, {}, (4, 2, 3), False),  # 4.0-4.2: the default limit (20) counts every nack-requeue
        ("quorum", {"x-delivery-limit": 3}, {}, (4, 2, 3), False),
        ("quorum", {}, {}, (4, 3, 0), True),  # 4.3+: a nack-requeue is not a failed delivery
        ("quorum", {"x-delivery-limit": 3}, {}, (4, 3, 0), True),
        ("quorum", {}, {"delivery-limit": 2}, (4, 4, 1), True),
        ("quorum", {}, {"delivery-limit": 2}, (3, 13, 7), False),
        ("stream", {}, {}, (4, 3, 0), False),  # never: basic.get does not read streams
        ("quorum", {}, {}, None, False),  # unknown version: assume the limit counts
    ],
)
def test_which_queues_the_peek_may_read(
    queue_type: str, arguments: dict[str, Any], policy: dict[str, Any], version: Any, safe: bool
) -> None:
    assert (requeue_risk(queue_type, arguments, policy, version) is None) is safe


def test_the_reason_names_the_limit_and_the_version() -> None:
    reason = requeue_risk("quorum", {}, {}, (4, 1, 0))
    assert reason is not None and "4.1.0" in reason and "20" in reason and "4.3" in reason
