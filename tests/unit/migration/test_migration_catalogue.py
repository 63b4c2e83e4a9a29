"""The real billing.invoice-issued v1 -> v2 migration: it checks clean and turns every v1 fixture into its v2 twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from contract_platform.catalog import load_catalog
from contract_platform.errors import MigrationSpecError
from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.migration import check_migration, check_spec, migrate_envelope, parse_spec

V1, V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
SAME_FACT = (
    "messageId",
    "correlationId",
    "causationId",
    "producer",
    "producerVersion",
    "occurredAt",
    "publishedAt",
    "traceId",
    "tenantId",
    "partitionKey",
)


def test_the_real_spec_checks_clean(catalog, v1, v2, validator):
    spec = parse_spec(v2.migration, str(v2.migration_file))
    assert (spec.source, spec.target) == (V1, V2)
    assert check_spec(spec, v1, v2, validator) == []

    result = check_migration(catalog, v2)
    assert result.ok and result.problems == [] and result.fixtures_checked == 3
    assert result.verdict is Verdict.PASS and result.kind is EvidenceKind.MIGRATION_SPEC
    assert result.to_evidence() == {
        "source": V1,
        "target": V2,
        "ok": True,
        "fixtures_checked": 3,
        "problem_count": 0,
        "problems": [],
    }


def test_every_v1_fixture_migrates_to_its_v2_twin(v1, v2, validator):
    spec = parse_spec(v2.migration, str(v2.migration_file))
    twins = {fixture.name: fixture.document for fixture in v2.fixtures if fixture.valid}
    old_fixtures = [fixture for fixture in v1.fixtures if fixture.valid]
    assert sorted(f.name for f in old_fixtures) == sorted(twins) and len(old_fixtures) == 3

    for fixture in old_fixtures:
        migrated = migrate_envelope(spec, fixture.document, v2)
        assert migrated == twins[fixture.name], fixture.name
        assert validator.issues(migrated) == (v2, [])
        old, new = fixture.document["metadata"], migrated["metadata"]
        assert (new["messageType"], new["schemaVersion"], new["messageVersion"]) == (V2, 2, "2.0.0")
        assert all(new[key] == old[key] for key in SAME_FACT if key in old)
        assert old["messageType"] == V1, "the source fixture must not be modified"


def test_a_v2_twin_that_differs_from_the_migrated_v1_fixture_is_reported(catalog_copy: Path):
    twin = catalog_copy / "billing/invoice-issued/v2/fixtures/valid/kwd-three-decimals-inv-10003.json"
    twin.write_text(twin.read_text().replace('"amountMinorUnits": 42125', '"amountMinorUnits": 42120'))
    catalog = load_catalog(catalog_copy)

    result = check_migration(catalog, catalog.get(V2))

    assert not result.ok and result.verdict is Verdict.FAIL
    [problem] = result.problems
    assert (problem.file, problem.pointer) == (str(twin), "/payload/amountMinorUnits")
    assert "42125" in problem.message and "42120" in problem.message
    assert result.to_evidence()["problem_count"] == 1


def test_a_v1_fixture_that_cannot_be_migrated_is_reported_with_its_pointer(catalog_copy: Path):
    fixture = catalog_copy / "billing/invoice-issued/v1/fixtures/valid/eur-issued-net30-inv-10001.json"
    fixture.write_text(fixture.read_text().replace('"amount": "129.95"', '"amount": "129.955"'))
    catalog = load_catalog(catalog_copy)

    result = check_migration(catalog, catalog.get(V2))

    [problem] = result.problems
    assert (problem.file, problem.pointer) == (str(fixture), "/payload/amount")
    assert result.fixtures_checked == 3


def test_a_spec_that_does_not_parse_raises_with_file_and_pointer(catalog_copy: Path):
    spec_file = catalog_copy / "billing/invoice-issued/v2/migration.yaml"
    spec_file.write_text(spec_file.read_text().replace("op: copy, from: /orderId", "op: rename, from: /orderId"))
    catalog = load_catalog(catalog_copy)

    with pytest.raises(MigrationSpecError) as caught:
        check_migration(catalog, catalog.get(V2))

    [problem] = caught.value.problems
    assert (problem.file, problem.pointer) == (str(spec_file), "/payload/1/op")


def test_a_contract_without_migration_cannot_be_checked(catalog):
    with pytest.raises(MigrationSpecError):
        check_migration(catalog, catalog.get(V1))
