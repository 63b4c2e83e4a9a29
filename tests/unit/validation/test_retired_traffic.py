"""Traffic on a retired version is an alarm of its own: archive validation says who still publishes it, how
many messages and when, in its report and as ``retired_traffic`` evidence (no Spark: tests/spark has the job)."""

from __future__ import annotations

import json
from pathlib import Path

from contract_platform.catalog import Catalog
from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.evidence.figures import ProducerTraffic, RetiredTrafficFigures
from contract_platform.store import SqlRegistry
from contract_platform.validation import Figures, Group, Reason, RecordChecker, ValidationReport, record_evidence
from contract_platform.validation.report import InputFigures, RetiredGroup

ORDER = "order.order-created.v1"
RETIRED = {ORDER: "retired@2026-07-02T00:00:00+00:00"}
US = 1_000_000  # microseconds in a second


def test_a_message_received_after_the_retirement_names_its_producer(catalog: Catalog, envelope, record) -> None:
    checker = RecordChecker(catalog, statuses=RETIRED)
    after = record(envelope(ORDER), receivedAt="2026-07-02T08:00:00Z")
    before = record(envelope(ORDER), receivedAt="2026-07-01T08:00:00Z")
    anonymous = envelope(ORDER)
    by_app_id = record(anonymous, receivedAt="2026-07-02T09:00:00Z")
    del anonymous["metadata"]["producer"]  # an envelope the contract refuses, sent by a client that says who it is
    by_app_id["body"] = json.dumps(anonymous)
    by_app_id["properties"]["appId"] = "legacy-order-feed"

    assert checker.check(json.dumps(after)).retired_producer == "order-service"
    assert checker.check(json.dumps(before)).retired_producer is None  # history: DEPRECATED_TYPE, no alarm
    checked = checker.check(json.dumps(by_app_id))
    assert checked.retired_producer == "legacy-order-feed"
    assert checked.findings[0].code is Reason.ENVELOPE_INVALID  # counted as retired traffic whatever comes first
    assert RecordChecker(catalog).check(json.dumps(after)).retired_producer is None  # not retired: no alarm


def test_the_report_and_the_evidence_say_who_sent_how_many_and_when(catalog: Catalog, tmp_path: Path) -> None:
    at = 1_782_950_400 * US  # 2026-07-02T00:00:00Z
    groups = [
        Group(ORDER, Reason.DEPRECATED_TYPE.rank, 40, 0, at - 3600 * US, at - 60 * US),
        Group(ORDER, Reason.RETIRED_TYPE.rank, 3, 0, at + 60 * US, at + 7200 * US),
    ]
    retired = [
        RetiredGroup(ORDER, "order-service", 2, at + 60 * US, at + 3600 * US),
        RetiredGroup(ORDER, "", 1, at + 7200 * US, at + 7200 * US),  # named by nobody
    ]
    report = ValidationReport(
        "/a", "/c", "sha256:0", Figures.from_groups(groups, (), retired), InputFigures(), 1.0, statuses=RETIRED
    )

    shown = report.to_dict()["by_type"][ORDER]["retired_traffic"]
    assert (shown["messages"], shown["first_received_at"], shown["last_received_at"]) == (
        3,
        "2026-07-02T00:01:00.000000Z",
        "2026-07-02T02:00:00.000000Z",
    )
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    with SqlRegistry.open(url) as registry:
        record_evidence(report, catalog, registry, run_id="scheduled__2026-07-02")
        alarm = registry.latest_evidence(ORDER, EvidenceKind.RETIRED_TRAFFIC)
        assert registry.latest_evidence("quote.quote-approved.v1", EvidenceKind.RETIRED_TRAFFIC) is None
    assert alarm is not None and alarm.verdict is Verdict.FAIL and alarm.run_id == "scheduled__2026-07-02"
    figures = RetiredTrafficFigures.of(alarm)
    assert (figures.messages, figures.retired_at) == (3, "2026-07-02T00:00:00+00:00")
    assert figures.by_producer == (
        ProducerTraffic("order-service", 2, "2026-07-02T00:01:00.000000Z", "2026-07-02T01:00:00.000000Z"),
        ProducerTraffic("", 1, "2026-07-02T02:00:00.000000Z", "2026-07-02T02:00:00.000000Z"),
    )


def test_the_registrys_states_are_given_in_the_form_the_record_rules_read(catalog, tmp_path) -> None:
    """One format, one place: a retired version's status carries its retirement moment, which
    ``retirement_times`` reads back; every other status is given as it is."""
    from datetime import UTC, datetime

    from contract_platform.catalog.model import Status
    from contract_platform.store import SqlRegistry
    from contract_platform.validation.records import effective_statuses, retirement_times, statuses_given

    with SqlRegistry.open(f"sqlite:///{tmp_path / 'r.db'}") as registry:
        state = registry.register(ORDER, catalog.contracts[ORDER].version, actor="test")
        for status in (Status.EXPERIMENTAL, Status.ACTIVE, Status.DEPRECATED, Status.RETIRED):
            state = registry.apply_transition(ORDER, expected=state, to=status, actor="test", reason="test")
        given = statuses_given(registry.all_effective())

    assert given[ORDER] == f"retired@{state.updated_at.isoformat()}"
    assert effective_statuses(catalog, given)[ORDER].value == "retired"
    assert retirement_times(given)[ORDER] == int(state.updated_at.astimezone(UTC).timestamp() * 1_000_000)
    assert state.updated_at <= datetime.now(UTC)
