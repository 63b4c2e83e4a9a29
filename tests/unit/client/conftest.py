"""Fixtures of the client's unit tests: bundles exported from the real catalogue, loaded as a service loads them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from contract_platform.catalog.model import Catalog
from contract_platform.client.bundle import Bundle, bundle_from_document
from contract_platform.export.bundle import export_bundle


@pytest.fixture(scope="session")
def every_version(catalog: Catalog) -> Bundle:
    """Every version of the catalogue in one bundle, as a service that publishes and consumes them all."""
    return bundle_from_document(export_bundle(catalog, message_types=list(catalog.contracts)), "every-version")


@pytest.fixture
def bundle_of(catalog: Catalog) -> Callable[..., Bundle]:
    """``bundle_of(service=..., message_types=..., catalog=...)``: the bundle ``contractctl export bundle`` writes."""

    def make(
        *, service: str | None = None, message_types: tuple[str, ...] = (), source: Catalog | Path | None = None
    ) -> Bundle:
        from contract_platform.catalog import load_catalog

        chosen = load_catalog(source) if isinstance(source, Path) else (source or catalog)
        return bundle_from_document(export_bundle(chosen, service=service, message_types=message_types), "test-bundle")

    return make
