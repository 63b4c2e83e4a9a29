"""Envelope quality of commands: a command is sent by its declared callers, not by its owner.

A command's owner is the service that carries it out (it consumes the command); the services
allowed to send it are its ``callers``. ``producer-is-owner-service`` holds a command's envelopes to
those callers, and is skipped, with the reason in the report, for a command that declares none.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.quality import quality_traffic as traffic

from contract_platform.catalog import Catalog, load_catalog
from contract_platform.quality import ExpectationId as E
from contract_platform.quality import QualityReport
from spark_jobs import envelope_quality as job

pytestmark = pytest.mark.spark

CREATE = "order.create-order.v1"  # owner order-service, callers [quote-service]
GENERATE = "billing.generate-invoice.v1"  # owner billing-service, callers [order-service]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory, catalog: Catalog) -> Path:
    create = traffic.clean_traffic(catalog.contracts[CREATE], 8)  # every one sent by quote-service
    generate = traffic.clean_traffic(catalog.contracts[GENERATE], 8)  # sent by order-service...
    traffic.apply_defects(
        generate,
        {
            2: traffic.metadata(producer="billing-service"),  # ...but for one sent by the owner itself
            5: traffic.metadata(producer="checkout-service"),  # and one by a service nobody declared
        },
    )
    return traffic.write_archive(tmp_path_factory.mktemp("commands"), [*create, *generate])


@pytest.fixture(scope="module")
def report(spark, archive: Path, catalog_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> QualityReport:
    return job.run_quality(spark, archive, catalog_dir, gx_root=tmp_path_factory.mktemp("gx"), data_docs=False)


def test_a_clean_archive_of_a_command_sent_by_a_declared_caller_passes(report: QualityReport, catalog: Catalog):
    contract = catalog.contracts[CREATE]
    assert contract.owner.service not in contract.callers  # the owner never sends it here
    create = report.of(CREATE)
    assert create.rows == 8 and str(create.verdict) == "pass" and not create.skipped
    producer = create.result(E.PRODUCER_IS_OWNER_SERVICE)
    assert (producer.judged, producer.unexpected, producer.success) == (8, 0, True)


def test_a_command_sent_by_an_undeclared_service_fails_the_producer_rule_alone(report: QualityReport):
    generate = report.of(GENERATE)
    assert str(generate.verdict) == "fail" and generate.failed == [E.PRODUCER_IS_OWNER_SERVICE]
    producer = generate.result(E.PRODUCER_IS_OWNER_SERVICE)
    assert (producer.judged, producer.unexpected) == (8, 2)  # the owner is not a caller, nor is checkout-service
    assert not report.success


def test_a_command_without_callers_skips_the_producer_rule_and_says_so(
    spark, archive: Path, catalog_copy: Path, tmp_path: Path
):
    contract_file = catalog_copy / "billing" / "generate-invoice" / "v1" / "contract.yaml"
    text = contract_file.read_text(encoding="utf-8")
    contract_file.write_text(text.replace("callers: [order-service]\n", ""), encoding="utf-8")
    assert load_catalog(catalog_copy).contracts[GENERATE].callers == ()

    report = job.run_quality(spark, archive / "billing.commands", catalog_copy, gx_root=tmp_path, data_docs=False)
    generate = report.of(GENERATE)
    assert str(generate.verdict) == "pass"  # three producers, none of them judged
    assert E.PRODUCER_IS_OWNER_SERVICE not in {r.id for r in generate.results}
    reason = generate.skipped[E.PRODUCER_IS_OWNER_SERVICE]
    assert "without callers" in reason and "callers:" in reason  # why, and how to turn the check on
    assert generate.to_dict()["skipped"] == {E.PRODUCER_IS_OWNER_SERVICE: reason}
