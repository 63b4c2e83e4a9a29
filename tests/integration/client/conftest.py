"""Fixtures of the client's broker tests: a private virtual host with the catalogue's topology, deleted afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.support.broker import private_vhost, url_of
from tests.support.vhosts import provision_catalog

from contract_platform.catalog.model import Catalog
from contract_platform.client.bundle import Bundle, bundle_from_document
from contract_platform.export.bundle import export_bundle


@pytest.fixture
def vhost_url(rabbitmq_url: str, catalog: Catalog) -> Iterator[str]:
    """The URL of a fresh virtual host holding every exchange, queue and dead-letter queue of the catalogue."""
    with private_vhost() as vhost:
        provision_catalog(vhost, catalog)
        yield url_of(vhost)


@pytest.fixture(scope="session")
def accounting(catalog: Catalog) -> Bundle:
    """accounting-service's bundle: it consumes billing.invoice-issued v1 and v2."""
    return bundle_from_document(export_bundle(catalog, service="accounting-service"), "accounting.bundle.json")


@pytest.fixture(scope="session")
def billing(catalog: Catalog) -> Bundle:
    """billing-service's bundle: it publishes billing.invoice-issued v1 and v2."""
    return bundle_from_document(export_bundle(catalog, service="billing-service"), "billing.bundle.json")
