"""The real catalogue's billing.invoice-issued v1 -> v2 route and its translator, for the bridge's unit tests."""

from __future__ import annotations

import pytest

from contract_platform.bridge.translation import MigrationRoute, Translator, resolve_route, target_validator
from contract_platform.catalog.model import Catalog


@pytest.fixture(scope="session")
def route(catalog: Catalog) -> MigrationRoute:
    return resolve_route(catalog, "billing.invoice-issued.v2")


@pytest.fixture(scope="session")
def translator(catalog: Catalog, route: MigrationRoute) -> Translator:
    return Translator(route, target_validator(catalog), "bridge.billing.invoice-issued.v1.parking-lot")
