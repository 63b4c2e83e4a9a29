"""The catalogue as shipped to Spark workers: same catalogue, stable fingerprint, compiled once per process."""

from __future__ import annotations

from pathlib import Path

from contract_platform.catalog import Catalog
from contract_platform.validation import CatalogBundle, checker_for


def test_a_bundle_rebuilds_the_same_catalogue(catalog: Catalog, catalog_dir: Path):
    bundle = CatalogBundle.read(catalog_dir)
    rebuilt = bundle.load()
    assert sorted(rebuilt.contracts) == sorted(catalog.contracts)
    assert rebuilt.envelope_schema == catalog.envelope_schema
    assert all(rebuilt.get(c.message_type).payload_schema == c.payload_schema for c in catalog)
    assert "envelope/envelope.v1.schema.json" in bundle.files


def test_the_fingerprint_changes_with_any_file(catalog_copy: Path):
    before = CatalogBundle.read(catalog_copy).fingerprint
    assert CatalogBundle.read(catalog_copy).fingerprint == before
    (catalog_copy / "README.md").write_text("changed", encoding="utf-8")
    assert CatalogBundle.read(catalog_copy).fingerprint != before


def test_checkers_are_cached_per_catalogue_and_options(catalog_dir: Path):
    bundle = CatalogBundle.read(catalog_dir)
    first = checker_for(bundle, oversize_bytes=100)
    assert checker_for(bundle, oversize_bytes=100) is first
    assert checker_for(bundle, oversize_bytes=200) is not first
    assert checker_for(bundle, oversize_bytes=100, statuses={"order.order-created.v1": "retired"}) is not first
