"""Per-consumer impact where a change is judged: ``contractctl check`` (text and JSON), the compatibility step
of ``contract_change`` (its evidence), and the readers perspective deciding a refused writer verdict from
what was seen of the version's readers (docs/consumer-impact.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.cli import catalogue_repo, run_cli

from contract_platform.catalog import load_catalog
from contract_platform.change import check_compatibility
from contract_platform.checks import compatibility_of
from contract_platform.evidence import EvidenceKind
from contract_platform.evidence.records import BrokerEvent, ReaderSession
from contract_platform.impact import Condition, ObservedReaders
from contract_platform.retirement.readers_seen import NO_RECORDER, BrokerReaders, observe_readers
from contract_platform.store import SqlRegistry

ORDER = "order.order-created.v1"
SCHEMA = "order/order-created/v1/payload.schema.json"
NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)
BILLING_QUEUE = "billing-service.order.order-created.v1"
FULFILMENT_QUEUE = "fulfillment-service.order.order-created.v1"


def _narrow(catalogue: Path, field: str, version: str = "1.3.0") -> None:
    """A BACKWARD-breaking change to one field of an order line: data written before may be longer."""
    path = catalogue / SCHEMA
    schema = json.loads(path.read_text())
    schema["$defs"]["OrderLine"]["properties"][field]["maxLength"] = 10
    path.write_text(json.dumps(schema, indent=2))
    contract = catalogue / "order/order-created/v1/contract.yaml"
    contract.write_text(contract.read_text().replace("version: 1.2.0", f"version: {version}", 1))


def _readers_perspective(catalogue: Path) -> None:
    contract = catalogue / "order/order-created/v1/contract.yaml"
    text = contract.read_text()
    contract.write_text(
        text.replace("compatibility: BACKWARD", "compatibility: {mode: BACKWARD, perspective: readers}")
    )


def test_check_names_the_one_consumer_a_change_breaks_with_its_owner(capsys, tmp_path, catalog_dir) -> None:
    catalogue = catalogue_repo(tmp_path / "repo", catalog_dir)
    _narrow(catalogue, "productName")  # fulfillment reads /payload/lineItems/*/productName; billing does not

    code, out, _ = run_cli(capsys, "check", str(catalogue), "--against", "main", "--no-in-flight")

    assert code == 1
    assert "consumers: 1 of 2 broken" in out
    assert (
        "breaks fulfillment-service (fulfillment-ops, fulfillment-ops@example.com): "
        "max-length-added at /payload/lineItems/*/productName" in out
    )
    assert "untouched: billing-service" in out

    code, out, _ = run_cli(capsys, "check", str(catalogue), "--against", "main", "--format", "json")
    [result] = json.loads(out)["compatibility"]
    assert result["impact"]["broken"] == ["fulfillment-service"]
    assert result["impact"]["untouched"] == ["billing-service"]
    assert "perspective" not in result  # the contract did not ask for it


def test_a_compatible_change_lists_the_consumers_that_read_it_and_breaks_none(capsys, tmp_path, catalog_dir) -> None:
    catalogue = catalogue_repo(tmp_path / "repo", catalog_dir)
    path = catalogue / SCHEMA
    schema = json.loads(path.read_text())
    schema["$defs"]["OrderLine"]["properties"]["productName"].pop("minLength")  # widened: BACKWARD allows it
    path.write_text(json.dumps(schema, indent=2))
    contract = catalogue / "order/order-created/v1/contract.yaml"
    contract.write_text(contract.read_text().replace("version: 1.2.0", "version: 1.3.0", 1))

    code, out, _ = run_cli(capsys, "check", str(catalogue), "--against", "main")

    assert code == 0, out
    assert "consumers: 0 of 2 broken" in out
    assert "reads what changed, allowed by BACKWARD: fulfillment-service" in out


def _result(catalogue: Path, observed: ObservedReaders | None):
    catalog = load_catalog(catalogue)
    contract = catalog.get(ORDER)
    base = load_catalog(catalogue.parent / "base").get(ORDER)
    return compatibility_of(
        contract,
        [("1.2.0", base.payload_schema)],
        catalog=catalog,
        readers=None if observed is None else (lambda _contract: observed),
    )


@pytest.fixture()
def perspective_catalogue(tmp_path: Path, catalog_dir: Path) -> Path:
    """A catalogue whose order.order-created.v1 asks for the readers perspective, and narrows unitPrice (read by
    no declared consumer) in 1.3.0; the unchanged catalogue sits beside it as ``base``."""
    import shutil

    shutil.copytree(catalog_dir, tmp_path / "base")
    shutil.copytree(catalog_dir, tmp_path / "contracts")
    catalogue = tmp_path / "contracts"
    _readers_perspective(catalogue)
    _narrow(catalogue, "unitPrice")
    return catalogue


def _session(queue: str, who: str) -> ReaderSession:
    return ReaderSession("/", queue, "amq.ctag-1", "ch-1", NOW - timedelta(days=1), None, connection_name=who)


def test_readers_perspective_accepts_a_break_no_declared_reader_reads(perspective_catalogue: Path) -> None:
    declared = ObservedReaders([_session(BILLING_QUEUE, "billing"), _session(FULFILMENT_QUEUE, "fulfil")], ())

    result = _result(perspective_catalogue, declared)

    assert not result.compatible and result.accepted_by_readers and result.ok
    assert result.semver_problems == []  # 1.3.0: a minor bump is what an accepted break needs
    assert result.to_dict()["perspective"]["condition"] == Condition.ACCEPTED
    assert result.evidence_figures().decided_by == "readers"


def test_an_accepted_break_still_needs_a_minor_version(perspective_catalogue: Path) -> None:
    contract = perspective_catalogue / "order/order-created/v1/contract.yaml"
    contract.write_text(contract.read_text().replace("version: 1.3.0", "version: 1.2.1", 1))

    result = _result(perspective_catalogue, ObservedReaders([], ()))

    assert result.accepted_by_readers and not result.ok
    assert "use at least 1.3.0" in result.semver_problems[0]


@pytest.mark.parametrize(
    ("observed", "condition", "named"),
    [
        (None, Condition.READERS_UNKNOWN, "no reader sessions are recorded"),
        (
            ObservedReaders([_session("adhoc.order-created", "pricing-notebook")], ()),
            Condition.UNDECLARED_READER,
            "pricing-notebook",
        ),
        (
            ObservedReaders([], (), blind=("queues bound to the version (API off)",)),
            Condition.READERS_UNKNOWN,
            "API off",
        ),
    ],
)
def test_readers_perspective_refusal_keeps_the_writer_verdict_and_says_why(
    perspective_catalogue: Path, observed: ObservedReaders | None, condition: str, named: str
) -> None:
    result = _result(perspective_catalogue, observed)

    assert not result.ok and not result.accepted_by_readers
    assert result.perspective.condition == condition and named in result.perspective.message
    assert "publish them as a new major version 2.0.0" in result.semver_problems[0]  # today's verdict


def test_contract_change_records_the_impact_and_names_broken_consumers(perspective_catalogue, tmp_path) -> None:
    registry = SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}")
    base = load_catalog(perspective_catalogue.parent / "base").get(ORDER)
    registry.snapshot_schema(ORDER, "1.2.0", base.payload_schema)
    path = perspective_catalogue / SCHEMA
    schema = json.loads(path.read_text())
    schema["$defs"]["OrderLine"]["properties"]["sku"]["maxLength"] = 3  # fulfillment reads the sku
    path.write_text(json.dumps(schema, indent=2))
    catalog = load_catalog(perspective_catalogue)

    summary = check_compatibility(catalog, registry, only=[ORDER], readers=lambda _c: ObservedReaders([], ()))

    assert summary.results[ORDER]["brokenConsumers"] == ["fulfillment-service"]
    assert any("breaks consumer fulfillment-service (fulfillment-ops" in p for p in summary.problems)
    assert any("declared-reader" not in p and "breaks declared readers" in p for p in summary.problems)
    [record] = registry.evidence(ORDER, EvidenceKind.COMPATIBILITY)
    assert record.figures["impact"]["broken"] == ["fulfillment-service"]
    assert record.figures["perspective"]["condition"] == Condition.DECLARED_READER_BROKEN
    registry.close()


def _consumer_created(queue: str, who: str, at: datetime) -> BrokerEvent:
    fields = {"queue": queue, "consumer_tag": f"ctag-{who}", "channel": f"<ch-{who}>", "client_name": who}
    return BrokerEvent(f"created-{who}", "consumer.created", at, "/", fields)


def test_observed_readers_come_from_the_recorder_and_its_gaps_are_named(perspective_catalogue, tmp_path) -> None:
    contract = load_catalog(perspective_catalogue).get(ORDER)
    registry = SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}")
    queues = BrokerReaders(queues=(("/", BILLING_QUEUE), ("/", "adhoc.order-created")))

    never = observe_readers(contract, registry, queues, now=NOW)
    assert [g.reason for g in never.gaps] == [NO_RECORDER]

    since = NOW - contract.retirement.observation_span
    registry.open_coverage_segment("seg-1", started_at=since - timedelta(hours=1), host="test")
    registry.extend_coverage("seg-1", covered_from=since - timedelta(hours=1), until=NOW)
    registry.store_broker_events(
        [_consumer_created("adhoc.order-created", "pricing-notebook", NOW - timedelta(days=2))]
    )

    seen = observe_readers(contract, registry, queues, now=NOW)

    assert seen.gaps == () and seen.blind == ()
    assert [(s.queue, s.consumer_tag) for s in seen.sessions] == [("adhoc.order-created", "ctag-pricing-notebook")]
    unseen = observe_readers(contract, registry, BrokerReaders(problem="management API off"), now=NOW)
    assert "management API off" in unseen.blind[0]
    registry.close()


def test_ci_formats_name_the_broken_consumer_at_the_contracts_consumers(capsys, tmp_path, catalog_dir) -> None:
    import xml.etree.ElementTree as ET

    catalogue = catalogue_repo(tmp_path / "repo", catalog_dir)
    _narrow(catalogue, "productName")
    argv = ["check", str(catalogue), "--against", "main", "--no-in-flight"]

    code, out, _ = run_cli(capsys, *argv, "--format", "github")

    assert code == 1
    [annotation] = [line for line in out.splitlines() if line.startswith("::error") and "title=consumers" in line]
    contract = catalogue / "order/order-created/v1/contract.yaml"
    line = next(n for n, text in enumerate(contract.read_text().splitlines(), 1) if text.startswith("consumers:"))
    assert f"line={line}," in annotation and "consumers: 1 of 2 broken by the change" in annotation
    assert "breaks fulfillment-service (fulfillment-ops" in annotation
    code, out, _ = run_cli(capsys, *argv, "--format", "junit")
    suite = ET.fromstring(out.encode("utf-8")).find("testsuite")
    [failure] = [c.find("failure") for c in suite.findall("testcase") if c.get("name") == "compatibility"]
    assert "breaks fulfillment-service (fulfillment-ops" in (failure.text or "")


def test_a_readers_name_chosen_by_a_client_is_printed_escaped(perspective_catalogue: Path, capsys) -> None:
    from contract_platform.replay.statement import statement_of

    hostile = ObservedReaders([_session("adhoc.order-created", "nb\x1b[2J\nfake: OK")], ())
    lines = statement_of(_result(perspective_catalogue, hostile)).lines()

    [said] = [line for line in lines if "undeclared-reader" in line or "outside the declared" in line]
    assert "\x1b" not in said and "\n" not in said and "nb\\x1b[2J\\nfake: OK" in said
