"""The pure pieces of migration parity: one pair compared, the report, its evidence and what the guards make of it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from contract_platform.catalog.model import Catalog, Contract
from contract_platform.errors import UsageError
from contract_platform.lifecycle.guards import GuardContext, guard_migration_running, guard_parity_verified
from contract_platform.migration import (
    MigrationSpec,
    ParityMode,
    ParityReport,
    TwinStatus,
    compare_twins,
    parity_route,
    record_parity,
)
from contract_platform.migration.parity import NOT_COMPARED, SAMPLE_KINDS, compare_batches
from contract_platform.store import SqlRegistry
from contract_platform.validation.bundle import CatalogBundle

V1 = "billing.invoice-issued.v1"
V2 = "billing.invoice-issued.v2"
FIXTURES = ("eur-issued-net30-inv-10001", "jpy-prepaid-paid-inv-10002", "kwd-three-decimals-inv-10003")


def fixture(contract: Contract, name: str) -> dict[str, Any]:
    return json.loads((contract.directory / "fixtures" / "valid" / f"{name}.json").read_text())


@pytest.fixture()
def route(catalog: Catalog) -> tuple[Contract, Contract, MigrationSpec]:
    return parity_route(catalog, V1)


@pytest.fixture()
def pair(route: tuple[Contract, Contract, MigrationSpec]) -> tuple[dict[str, Any], dict[str, Any]]:
    source, target, _ = route
    return fixture(source, FIXTURES[0]), fixture(target, FIXTURES[0])


def report(**changes: Any) -> ParityReport:
    figures: dict[str, Any] = {
        "source": V1,
        "source_version": "1.3.0",
        "target": V2,
        "mode": "bridge",
        "v1_total": 200,
        "v2_total": 200,
        "matched": 200,
        "missing": 0,
        "mismatches": 0,
        "extra": 0,
        "duplicates": 0,
        "redeliveries": 0,
        "out_of_order": 0,
        "lag_p50_ms": 3.0,
        "lag_p99_ms": 12.0,
    }
    return ParityReport(**(figures | changes))


# -- one pair ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_each_v1_fixture_matches_its_v2_fixture(route, name):
    source, target, spec = route
    result = compare_twins(spec, target, fixture(source, name), fixture(target, name))
    assert result.status is TwinStatus.MATCH and result.matched and result.differences == ()


def test_a_changed_payload_value_is_a_mismatch_at_its_pointer(route, pair):
    _, target, spec = route
    v1, v2 = pair
    v2["payload"]["amountMinorUnits"] += 1
    del v2["payload"]["dueDate"]
    result = compare_twins(spec, target, v1, v2)
    assert result.status is TwinStatus.MISMATCH
    assert result.differences == ("/payload/amountMinorUnits", "/payload/dueDate")


def test_a_kept_metadata_field_that_changed_or_appeared_is_a_mismatch(route, pair):
    _, target, spec = route
    v1, v2 = pair
    v2["metadata"]["traceId"] = "0" * 32
    v2["metadata"]["replayed"] = True
    result = compare_twins(spec, target, v1, v2)
    assert result.differences == ("/metadata/replayed", "/metadata/traceId")


def test_fields_the_target_sets_are_compared_with_the_target_contract(route, pair):
    _, target, spec = route
    v1, v2 = pair
    v2["metadata"].update(schemaVersion=1, messageVersion="1.3.0")
    result = compare_twins(spec, target, v1, v2)
    assert result.differences == ("/metadata/schemaVersion", "/metadata/messageVersion")
    v2["metadata"].update(schemaVersion=2, messageVersion="2.0.7")  # any version of the target's major
    assert compare_twins(spec, target, v1, v2).matched


def test_published_at_is_compared_for_the_bridge_not_for_dual_publish(route, pair):
    _, target, spec = route
    v1, v2 = pair
    v2["metadata"]["publishedAt"] = "2026-07-01T10:15:31.004Z"
    assert compare_twins(spec, target, v1, v2, mode="bridge").differences == ("/metadata/publishedAt",)
    assert compare_twins(spec, target, v1, v2, mode=ParityMode.DUAL_PUBLISH).matched
    assert set(NOT_COMPARED) == set(ParityMode)  # every mode has its rule


def test_numbers_compare_by_value_and_booleans_by_type(route, pair):
    _, target, spec = route
    v1, v2 = pair
    v2["payload"]["amountMinorUnits"] = float(v2["payload"]["amountMinorUnits"])
    assert compare_twins(spec, target, v1, v2).matched
    v1["payload"]["aggregateVersion"] = 1
    v2["payload"]["aggregateVersion"] = True
    assert compare_twins(spec, target, v1, v2).differences == ("/payload/aggregateVersion",)


def test_no_twin_is_missing_and_says_when_the_spec_cannot_migrate_it(route, pair):
    _, target, spec = route
    v1, v2 = pair
    assert compare_twins(spec, target, v1, None).status is TwinStatus.MISSING
    assert compare_twins(spec, target, v1, None).reason is None
    v1["payload"]["amount"] = "10.005"  # EUR has 2 decimals: not rounded, so not migratable
    parked = compare_twins(spec, target, v1, None)
    assert parked.status is TwinStatus.MISSING
    assert parked.reason.startswith("not migratable: /payload/amount:") and "decimal places" in parked.reason
    assert compare_twins(spec, target, v1, v2).status is TwinStatus.MISMATCH  # a twin the spec cannot explain


def test_a_reason_about_personal_data_is_withheld(catalog):
    _, target, spec = parity_route(catalog, V1)
    bad = {"metadata": {"messageType": V1}, "payload": []}
    assert "not a JSON object" in (compare_twins(spec, target, bad, None).reason or "")
    withheld = compare_twins(spec, target, bad, None, private=("/payload",)).reason or ""
    assert "personal data" in withheld and "not a JSON object" not in withheld


def test_parity_route_refuses_a_type_without_a_migration(catalog):
    with pytest.raises(UsageError, match="no successor"):
        parity_route(catalog, V2)
    with pytest.raises(UsageError, match="not a messageType"):
        parity_route(catalog, "billing.nothing.v1")


def test_compare_batches_passes_columns_through_and_compares_each_row(catalog_dir, route):
    source, target, _ = route
    v1, v2 = fixture(source, FIXTURES[1]), fixture(target, FIXTURES[1])
    changed = copy.deepcopy(v2)
    changed["payload"]["currency"] = "EUR"
    batch = pa.RecordBatch.from_pydict(
        {
            "message_id": ["a", "b", "c", "d"],
            "v1_record_id": [1, 2, 3, 4],
            "v1_body": [json.dumps(v1)] * 4,
            "v2_body": [json.dumps(v2), json.dumps(changed), None, "{not json"],
        }
    )
    out = list(compare_batches([batch], catalog=CatalogBundle.read(catalog_dir), source=V1, mode="bridge"))
    assert out[0].schema.names == ["message_id", "v1_record_id", "status", "differences", "reason"]
    rows = out[0].to_pylist()
    assert [r["status"] for r in rows] == ["match", "mismatch", "missing", "mismatch"]
    assert rows[1]["differences"] == ["/payload/currency"]
    assert rows[3]["reason"] == "the v2 body is not JSON"


# -- the report and its evidence ----------------------------------------------------------------------


def test_parity_holds_only_without_missing_mismatch_or_disorder():
    clean = report(extra=3, duplicates=4, redeliveries=1)  # reported, not failed
    assert clean.holds and clean.parity == 1.0 and str(clean.verdict) == "pass" and clean.exit_code == 0
    for finding in ({"missing": 1, "matched": 199}, {"mismatches": 1, "matched": 199}, {"out_of_order": 1}):
        broken = report(**finding)
        assert not broken.holds and str(broken.verdict) == "fail" and broken.exit_code == 1
    assert report(missing=1, matched=199).parity == pytest.approx(0.995)


def test_no_v1_traffic_is_unknown_not_pass():
    empty = report(v1_total=0, v2_total=0, matched=0)
    assert empty.parity is None and str(empty.verdict) == "unknown" and not empty.holds
    assert "cannot be decided" in empty.problems()[0]


def test_figures_carry_what_the_guards_and_the_cli_read():
    samples = {"missing": [f"m-{i}" for i in range(12)]}
    figures = report(missing=12, matched=188, samples=samples, window={"since": None, "until": None}).figures()
    assert figures["mode"] == "bridge" and figures["parity"] == 0.94
    assert set(figures["samples"]) == set(SAMPLE_KINDS) and len(figures["samples"]["missing"]) == 10
    assert {"v1_total", "v2_total", "extra", "duplicates", "redeliveries", "lag_p50_ms", "lag_p99_ms"} <= set(figures)
    json.dumps(report().to_dict())  # JSON all the way down
    with pytest.raises(ValueError, match="unknown sample kinds"):
        report(samples={"lost": ["x"]})


def test_recorded_evidence_moves_the_guards(tmp_path: Path, catalog):
    v1 = catalog.get(V1)
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as registry:
        failed = record_parity(report(missing=1, matched=199), registry, "run-1", reference="/tmp/r.json")
        assert (failed.message_type, failed.contract_version, failed.run_id) == (V1, "1.3.0", "run-1")
        assert str(failed.kind) == "migration_parity" and failed.figures["missing"] == 1
        ctx = GuardContext(v1, registry)
        assert "parity failed" in guard_migration_running(ctx)[0]
        assert guard_parity_verified(ctx.fresh())
        record_parity(report(mode="dual-publish"), registry, "run-2")
        assert guard_migration_running(ctx.fresh()) == [] and guard_parity_verified(ctx.fresh()) == []
        record_parity(report(v1_total=0, v2_total=0, matched=0), registry, "run-3")
        assert guard_migration_running(ctx.fresh()) == []  # unknown: still running
        assert "inconclusive" in guard_parity_verified(ctx.fresh())[0]
