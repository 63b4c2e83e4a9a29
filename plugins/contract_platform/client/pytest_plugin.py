"""The consumer test kit as a pytest fixture, for a service's own test suite (optional: pytest is not required).

Enable it in the service's ``conftest.py``::

    pytest_plugins = ["contract_platform.client.pytest_plugin"]

    def test_our_handlers_meet_their_contracts(consumer_kit):
        report = consumer_kit(bundle, dispatcher, state=ledger.snapshot)   # fails the test on any failed case
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from contract_platform.client.bundle import Bundle
from contract_platform.client.consumer import Dispatcher
from contract_platform.client.testkit import KitReport, run_consumer_kit

__all__ = ["consumer_kit"]

KitRunner = Callable[..., KitReport]


@pytest.fixture
def consumer_kit() -> KitRunner:
    """``consumer_kit(bundle, dispatcher, state=None) -> KitReport``, asserting every case passed."""

    def run(bundle: Bundle, dispatcher: Dispatcher, *, state: Callable[[], Any] | None = None) -> KitReport:
        report = run_consumer_kit(bundle, dispatcher, state=state)
        report.assert_ok()
        return report

    return run
