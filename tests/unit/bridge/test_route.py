"""Choosing the route: a target messageType or its migration.yaml; a bad spec names file and pointer."""

from __future__ import annotations

from pathlib import Path

import pytest

from contract_platform.amqp.topology import parking_lot_name
from contract_platform.bridge import BridgeConfig, tap_queue_arguments, tap_queue_name
from contract_platform.bridge.translation import resolve_route
from contract_platform.catalog import load_catalog
from contract_platform.catalog.model import Catalog
from contract_platform.errors import MigrationSpecError, UsageError


def test_the_target_type_and_its_migration_file_give_the_same_route(catalog: Catalog, catalog_dir: Path) -> None:
    by_type = resolve_route(catalog, "billing.invoice-issued.v2")
    by_file = resolve_route(catalog, str(catalog_dir / "billing/invoice-issued/v2/migration.yaml"))
    assert by_type == by_file
    assert (by_type.source.message_type, by_type.target.message_type) == (
        "billing.invoice-issued.v1",
        "billing.invoice-issued.v2",
    )


def test_the_tap_queue_and_its_parking_lot_follow_the_source_type() -> None:
    queue = tap_queue_name("billing.invoice-issued.v1")
    assert (queue, parking_lot_name(queue)) == (
        "bridge.billing.invoice-issued.v1",
        "bridge.billing.invoice-issued.v1.parking-lot",
    )


def test_an_unknown_type_is_a_usage_error_listing_the_types_with_a_migration(catalog: Catalog) -> None:
    with pytest.raises(UsageError, match="with a migration: billing.invoice-issued.v2"):
        resolve_route(catalog, "billing.invoice-issued.v9")


def test_a_contract_without_migration_is_refused(catalog: Catalog) -> None:
    with pytest.raises(MigrationSpecError, match="has no migration.yaml"):
        resolve_route(catalog, "billing.invoice-issued.v1")


def test_a_broken_spec_names_its_file_and_pointer(catalog_copy: Path) -> None:
    spec = catalog_copy / "billing/invoice-issued/v2/migration.yaml"
    spec.write_text(spec.read_text().replace("op: decimalToMinorUnits", "op: decimalToCents"))
    with pytest.raises(MigrationSpecError) as caught:
        resolve_route(load_catalog(catalog_copy), "billing.invoice-issued.v2")
    problem = caught.value.problems[0]
    assert (problem.file, problem.pointer) == (str(spec), "/payload/3/op")


def test_a_spec_that_does_not_migrate_the_fixtures_is_refused_before_anything_runs(catalog_copy: Path) -> None:
    spec = catalog_copy / "billing/invoice-issued/v2/migration.yaml"
    spec.write_text(spec.read_text().replace("  - {op: copy, from: /status, to: /status}\n", ""))
    with pytest.raises(MigrationSpecError) as caught:
        resolve_route(load_catalog(catalog_copy), "billing.invoice-issued.v2")
    assert any(problem.file == str(spec) for problem in caught.value.problems)


def test_a_migration_file_outside_the_catalogue_is_a_usage_error(catalog: Catalog, tmp_path: Path) -> None:
    elsewhere = tmp_path / "migration.yaml"
    elsewhere.write_text("from: a\n")
    with pytest.raises(UsageError, match="is not the migration.yaml of a contract"):
        resolve_route(catalog, str(elsewhere))


@pytest.mark.parametrize("option", ["idle_timeout", "max_messages", "max_seconds", "prefetch"])
def test_limits_must_be_positive(option: str) -> None:
    with pytest.raises(UsageError, match="must be positive"):
        BridgeConfig(**{option: 0})


def test_a_message_the_tap_queue_gives_up_on_goes_to_the_parking_lot_not_away() -> None:
    arguments = tap_queue_arguments("bridge.billing.invoice-issued.v1")
    assert arguments["x-queue-type"] == "quorum"
    assert (arguments["x-dead-letter-exchange"], arguments["x-dead-letter-routing-key"]) == (
        "",
        "bridge.billing.invoice-issued.v1.parking-lot",
    )
    assert arguments["x-dead-letter-strategy"] == "at-least-once"
