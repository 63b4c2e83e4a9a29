"""Suites built from the catalogue (no Spark): which expectations apply, their kwargs and thresholds."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from datetime import timedelta

import pytest

from contract_platform.catalog import Catalog
from contract_platform.catalog.model import Contract, Kind, Ordering, QualitySettings
from contract_platform.errors import CatalogError
from contract_platform.quality import RULES, ExpectationId, suite_for
from contract_platform.quality import suite as suite_module
from contract_platform.quality.samples import UNEXPECTED

E = ExpectationId
ORDER_CREATED = "order.order-created.v1"
QUOTE = "quote.quote-approved.v1"
GENERATE = "billing.generate-invoice.v1"
ALWAYS = set(E) - {
    E.CAUSATION_ID_PRESENT,
    E.TENANT_ID_PRESENT,
    E.PARTITION_KEY_PRESENT,
    E.PARTITION_KEY_CARDINALITY,
}


def ids(contract: Contract) -> set[str]:
    return {spec.id for spec in suite_for(contract)}


def spec(contract: Contract, expectation: ExpectationId):  # type: ignore[no-untyped-def]
    [found] = [s for s in suite_for(contract) if s.id == expectation]
    return found


def test_ids_are_stable_kebab_case_and_documented_once_in_the_table():
    table = suite_module.__doc__ or ""
    documented = set(re.findall(r"^([a-z0-9]+(?:-[a-z0-9]+)+)\s{2,}", table, flags=re.MULTILINE))
    assert documented == {str(e) for e in E}
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", str(e)) for e in E)
    assert set(RULES) == set(E)


def test_which_expectations_apply_follows_kind_tenancy_and_ordering(catalog: Catalog):
    assert ids(catalog.contracts[ORDER_CREATED]) == {str(e) for e in E}  # event, tenancy, ordered by partitionKey
    assert ids(catalog.contracts[QUOTE]) == ALWAYS | {E.CAUSATION_ID_PRESENT}  # event, no tenancy, no ordering
    assert ids(catalog.contracts[GENERATE]) == ALWAYS  # a command: no causation
    for contract in catalog:
        suite = suite_for(contract)
        assert len({s.id for s in suite}) == len(suite), contract.message_type
        assert (E.CAUSATION_ID_PRESENT in ids(contract)) is (contract.kind is Kind.EVENT)


def test_partition_key_checks_only_where_the_contract_orders_by_it(catalog: Catalog):
    contract = catalog.contracts[ORDER_CREATED]
    by_payload = replace(contract, ordering=Ordering(key="/payload/orderId", sequence="/payload/aggregateVersion"))
    assert E.PARTITION_KEY_PRESENT not in ids(by_payload) and E.PARTITION_KEY_CARDINALITY not in ids(by_payload)
    cardinality = spec(contract, E.PARTITION_KEY_CARDINALITY)
    assert (cardinality.gx_type, cardinality.mostly, cardinality.min_rows) == (
        "expect_column_values_to_be_between",
        0.5,
        20,
    )
    assert cardinality.kwargs == {"column": "partitionKeyMessages", "min_value": 2}


def test_kwargs_come_from_the_contract(catalog: Catalog):
    quote = catalog.contracts[QUOTE]
    assert spec(quote, E.BODY_WITHIN_BUDGET).kwargs["max_value"] == 131072
    assert spec(catalog.contracts[GENERATE], E.BODY_WITHIN_BUDGET).kwargs["max_value"] == 262144  # the default
    assert spec(quote, E.PRODUCER_IS_OWNER_SERVICE).kwargs["value_set"] == ["quote-service"]
    assert spec(quote, E.ROUTING_KEY_SINGLE_VALUE).kwargs["value_set"] == ["quote.quote.approved.v1"]
    v2 = catalog.contracts["billing.invoice-issued.v2"]
    assert spec(v2, E.SCHEMA_VERSION_EQUALS_MAJOR).kwargs["value_set"] == [2]
    semver = re.compile(spec(v2, E.MESSAGE_VERSION_SEMVER_MAJOR).kwargs["regex"])
    assert [bool(semver.match(v)) for v in ("2.0.0", "2.13.4", "1.3.0", "2.01.0", "2.0", "12.0.0")] == [
        True,
        True,
        False,
        False,
        False,
        False,
    ]


def test_time_checks_compare_with_the_contracts_clock_skew(catalog: Catalog):
    contract = replace(catalog.contracts[QUOTE], quality=QualitySettings(clock_skew=timedelta(seconds=30)))
    occurred = spec(contract, E.OCCURRED_NOT_AFTER_PUBLISHED)
    assert occurred.kwargs == {
        "column_A": "publishedAt_ts",
        "column_B": "occurredAt_minus_skew",
        "or_equal": True,
        "ignore_row_if": "either_value_is_missing",
    }
    assert "30s" in occurred.description
    received = spec(contract, E.PUBLISHED_NOT_AFTER_RECEIVED).kwargs
    assert (received["column_A"], received["column_B"]) == ("receivedAt_ts", "publishedAt_minus_skew")


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2026-07-01T10:15:30Z", True),
        ("2026-07-01T10:15:30.120Z", True),
        ("2026-07-01T10:15:30+00:00", True),
        ("2026-07-01T12:15:30+02:00", False),
        ("2026-07-01T10:15:30", False),
        ("2026-07-01 10:15:30Z", False),
        ("1782900931", False),
    ],
)
def test_the_utc_format_check(text: str, utc: bool):
    assert bool(re.match(suite_module.UTC_ISO8601, text)) is utc


def test_mostly_comes_from_the_contract(catalog: Catalog):
    contract = catalog.contracts[ORDER_CREATED]
    assert {s.mostly for s in suite_for(contract) if s.id != E.PARTITION_KEY_CARDINALITY} == {1.0}
    tolerant = replace(
        contract, quality=QualitySettings(mostly={"producer-is-owner-service": 0.9, "partition-key-cardinality": 0.0})
    )
    assert spec(tolerant, E.PRODUCER_IS_OWNER_SERVICE).mostly == 0.9
    assert spec(tolerant, E.PARTITION_KEY_CARDINALITY).mostly == 0.0
    assert spec(tolerant, E.MESSAGE_ID_UNIQUE).mostly == 1.0
    assert spec(tolerant, E.PRODUCER_IS_OWNER_SERVICE).configuration()["kwargs"]["mostly"] == 0.9


def test_an_unknown_id_in_quality_mostly_is_a_catalogue_error_with_file_and_pointer(catalog: Catalog):
    contract = replace(catalog.contracts[QUOTE], quality=QualitySettings(mostly={"producer-is-owner": 0.9}))
    with pytest.raises(CatalogError) as raised:
        suite_for(contract)
    [problem] = raised.value.problems
    assert (
        problem.file.endswith("quote-approved/v1/contract.yaml")
        and problem.pointer == "/quality/mostly/producer-is-owner"
    )
    assert "producer-is-owner-service" in problem.message  # says what the ids are


def test_the_producer_rule_holds_an_event_to_its_owner_and_a_command_to_its_callers(catalog: Catalog):
    event = spec(catalog.contracts[QUOTE], E.PRODUCER_IS_OWNER_SERVICE)
    assert (event.kwargs["value_set"], event.skip) == (["quote-service"], None)
    command = catalog.contracts[GENERATE]  # owned (and handled) by billing-service, sent by order-service
    sent_by = spec(replace(command, callers=("order-service", "checkout-service")), E.PRODUCER_IS_OWNER_SERVICE)
    assert sent_by.kwargs["value_set"] == ["order-service", "checkout-service"] and sent_by.skip is None
    assert command.owner.service not in sent_by.kwargs["value_set"]
    assert "order-service, checkout-service" in sent_by.description


def test_the_producer_rule_of_a_command_without_callers_is_skipped_with_its_reason(catalog: Catalog):
    silent = replace(catalog.contracts[GENERATE], callers=())
    producer = spec(silent, E.PRODUCER_IS_OWNER_SERVICE)
    assert producer.kwargs["value_set"] == [] and producer.skip is not None
    assert "billing.generate-invoice.v1" in producer.skip and "callers" in producer.skip
    assert [s.id for s in suite_for(silent) if s.skip is not None] == [E.PRODUCER_IS_OWNER_SERVICE]


def test_every_gx_type_has_an_unexpected_rows_condition():
    assert {rule.gx_type for rule in RULES.values()} <= set(UNEXPECTED)


def test_great_expectations_accepts_every_suite_of_the_catalogue(catalog: Catalog):
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

    for contract in catalog:
        for item in suite_for(contract):
            expectation = ExpectationConfiguration(**item.configuration()).to_domain_obj()
            assert expectation.meta == {"id": item.id} and expectation.mostly == item.mostly
            assert expectation.description == f"{item.id}: {item.description}"  # Data Docs show the id


def test_importing_the_package_imports_neither_great_expectations_nor_pyspark():
    code = (
        "import sys, contract_platform.quality, contract_platform.cli.quality; "
        "print(sorted(m for m in ('great_expectations', 'pyspark') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"
