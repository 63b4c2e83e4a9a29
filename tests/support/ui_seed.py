"""A registry store as the platform's DAGs would leave it, for the UI tests (tests/airflow/test_ui_api.py and
tests/e2e/test_ui_browser.py).

Every contract of the real catalogue is registered by a ``contract_change`` run and walked to its
declared status, except ``order.order-created.v1``: its step to *active* was refused (invalid rate
above target), so it is the one declared/effective mismatch. Archive validation, envelope quality,
migration parity and retirement audit evidence carry figures; reader sessions, as the broker activity
recorder stores them, show v1's consumers moving to v2 (``record_reader_sessions``). ``record_readers_audit`` adds a retirement audit whose ``readers`` check saw
the reader sessions and coverage gaps a test names.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from contract_platform.catalog.model import Contract, Status
from contract_platform.evidence.records import (
    CoverageGap,
    CoverageSegment,
    DeliveryWatch,
    QueueCounters,
    ReaderSession,
)
from contract_platform.retirement import ReaderEvidence, VersionQueue, check_readers
from contract_platform.retirement.model import AuditResult
from contract_platform.retirement.report import record_audit
from contract_platform.store import SqlRegistry

CHANGE_DAG = "contract_change"
MISMATCHED = "order.order-created.v1"
MIGRATED_FROM, MIGRATED_TO = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
VALIDATION_RUN = "scheduled__2026-11-19T00:00:00+00:00"
VERSIONS = {
    "billing.generate-invoice.v1": ("1.0.0", Status.ACTIVE),
    "billing.invoice-issued.v1": ("1.3.0", Status.DEPRECATED),
    "billing.invoice-issued.v2": ("2.0.0", Status.ACTIVE),
    "order.create-order.v1": ("1.0.0", Status.ACTIVE),
    "order.order-created.v1": ("1.2.0", Status.EXPERIMENTAL),
    "quote.quote-approved.v1": ("1.1.0", Status.ACTIVE),
}
RATES = [0.0004, 0.0006, 0.0009, 0.0021, 0.0035]  # order-created: the last ones above its 0.1% target


@dataclass(frozen=True)
class Seeded:
    run_id: str  # the contract_change run that applied every transition
    now: datetime


def seed_registry(url: str, run_id: str) -> Seeded:
    now = datetime.now(UTC).replace(microsecond=0)
    actor = f"dag:{CHANGE_DAG}"
    with SqlRegistry.open(url) as registry:
        for message_type, (version, target) in VERSIONS.items():
            state = registry.register(message_type, version, actor=actor, run_id=run_id)
            for status in Status:
                if state.status.rank >= target.rank:
                    break
                if status.rank == state.status.rank + 1:
                    state = registry.apply_transition(
                        message_type,
                        expected=state,
                        to=status,
                        actor=actor,
                        reason=f"guards passed for {status}",
                        run_id=run_id,
                    )
        registry.record_refusal(
            MISMATCHED,
            from_status=Status.EXPERIMENTAL,
            to_status=Status.ACTIVE,
            reasons=[
                "invalid rate 0.350% (35 of 10000 archived messages in the last 7 days) is above the target 0.100%"
            ],
            actor=actor,
            run_id=run_id,
        )
        for days_ago, rate in zip(range(len(RATES), 0, -1), RATES, strict=True):
            total = 10_000
            invalid = round(rate * total)
            registry.add_evidence(
                MISMATCHED,
                contract_version="1.2.0",
                kind="archive_validation",
                verdict="pass" if rate <= 0.001 else "fail",
                figures={
                    "total": total,
                    "invalid": invalid,
                    "invalid_rate": invalid / total,
                    "invalid_rate_target": 0.001,
                },
                run_id=VALIDATION_RUN if days_ago == 1 else f"scheduled__day-{days_ago}",
                collected_at=now - timedelta(days=days_ago),
            )
        registry.add_evidence(
            MISMATCHED,
            contract_version="1.2.0",
            kind="envelope_quality",
            verdict="fail",
            figures={"evaluated": 12, "failed_expectations": ["publishedAt not before occurredAt"]},
            run_id="scheduled__2026-11-19T01:00:00+00:00",
            collected_at=now - timedelta(hours=20),
        )
        registry.add_evidence(
            "quote.quote-approved.v1",
            contract_version="1.1.0",
            kind="archive_validation",
            verdict="pass",
            figures={"total": 5200, "invalid": 0, "invalid_rate": 0.0, "invalid_rate_target": 0.001},
            run_id=VALIDATION_RUN,
            collected_at=now - timedelta(days=1),
        )
        registry.add_evidence(
            MIGRATED_FROM,
            contract_version="1.3.0",
            kind="migration_parity",
            verdict="pass",
            figures={"mode": "bridge", "v1_messages": 4200, "missing_in_v2": 0, "mismatched": 0, "max_lag_ms": 180},
            collected_at=now - timedelta(days=2),
        )
        registry.add_evidence(
            MIGRATED_FROM,
            contract_version="1.3.0",
            kind="retirement_audit",
            verdict="fail",
            figures={"failed_checks": ["no_consumers"], "consumers": 1},
            collected_at=now - timedelta(hours=6),
        )
        # v1's consumers move to v2: accounting-service reads both for five days, notification-service moves
        record_reader_sessions(
            registry,
            [
                (f"accounting-service.{MIGRATED_FROM}", "accounting-1", now - timedelta(days=7), None),
                (f"notification-service.{MIGRATED_FROM}", "notify-1", now - timedelta(days=7), now - timedelta(days=3)),
                (f"accounting-service.{MIGRATED_TO}", "accounting-2", now - timedelta(days=5), None),
                (f"notification-service.{MIGRATED_TO}", "notify-2", now - timedelta(days=3), None),
            ],
        )
    return Seeded(run_id=run_id, now=now)


def record_reader_sessions(
    registry: SqlRegistry, readers: list[tuple[str, str, datetime, datetime | None]], *, vhost: str = "/"
) -> None:
    """Reader sessions as the broker activity recorder stores them from RabbitMQ's event exchange: per
    (queue, connection name, attached, detached or None while attached) a connection, a channel on it and a
    consumer created (and deleted), through the store's own ``store_broker_events``."""
    from contract_platform.evidence.records import BrokerEvent

    events = []
    for number, (queue, connection, attached, detached) in enumerate(readers):
        pid, channel = f"<rabbit@seed.{number}.1>", f"<rabbit@seed.{number}.2>"
        consumer = {"queue": queue, "consumer_tag": f"amq.ctag-{number}", "channel": channel}
        events += [
            BrokerEvent(
                f"conn-{number}", "connection.created", attached, vhost, {"pid": pid, "client_name": connection}
            ),
            BrokerEvent(f"chan-{number}", "channel.created", attached, vhost, {"pid": channel, "connection": pid}),
            BrokerEvent(f"created-{number}", "consumer.created", attached, vhost, consumer),
        ]
        if detached is not None:
            events.append(BrokerEvent(f"deleted-{number}", "consumer.deleted", detached, vhost, consumer))
    registry.store_broker_events(sorted(events, key=lambda event: event.at))


# -- a retirement audit with a readers check --------------------------------------------------------


@dataclass(frozen=True)
class ReaderSeed:
    """One consumer the broker activity recorder saw on a queue: ``attached``/``detached`` None as recorded."""

    queue: str
    connection: str | None
    attached: datetime | None
    detached: datetime | None
    consumer_tag: str = "amq.ctag-reader"
    peer_host: str | None = "10.1.2.3"
    user: str | None = "ledger"


def record_readers_audit(
    registry: SqlRegistry,
    contract: Contract,
    now: datetime,
    *,
    queues: tuple[str, ...],
    readers: tuple[ReaderSeed, ...] = (),
    gaps: tuple[tuple[datetime, datetime, str], ...] = (),
    audits: tuple[int, ...] = (8, 4, 0),
) -> None:
    """A ``retirement_audit`` as the audit records it, holding only the ``readers`` check, judged by the audit's
    own ``check_readers`` over what the recorder would have stored: coverage for 30 days but ``gaps``, the
    ``readers``' sessions, and unmoved delivery counters of every queue at audits ``audits`` days ago."""
    since = now - timedelta(days=30)
    segments, cursor = [], since
    for index, (start, end, reason) in enumerate(sorted(gaps)):
        segments.append(CoverageSegment(f"seg-{index}", cursor, cursor, start, start, reason))
        cursor = end
    segments.append(CoverageSegment(f"seg-{len(gaps)}", cursor, cursor, now))
    sessions = [
        ReaderSession(
            vhost="/",
            queue=r.queue,
            consumer_tag=r.consumer_tag,
            channel="<rabbit@broker.1.2>",
            attached_at=r.attached,
            detached_at=r.detached,
            connection_name=r.connection,
            peer_host=r.peer_host,
            user=r.user,
        )
        for r in readers
    ]
    counters = [
        QueueCounters(contract.message_type, "/", queue, now - timedelta(days=age), True, 0, 0, 0, 0)
        for age in audits
        for queue in queues
    ]
    watches = [DeliveryWatch("/", queue, since, since, now) for queue in queues]  # every delivery traced
    evidence = ReaderEvidence(since, segments, [CoverageGap(*gap) for gap in gaps], sessions, [], counters, watches)
    check = check_readers(contract, [VersionQueue("/", q, q) for q in queues], evidence, now=now)
    result = AuditResult(contract.message_type, contract.version, now, (check,), run_id="scheduled__readers")
    record_audit(result, registry)


# -- a retired version that still receives messages ----------------------------------------------------


def retire_with_late_traffic(
    registry: SqlRegistry, contract: Contract, *, late: tuple[tuple[str, int], ...]
) -> datetime:
    """``contract`` (effective deprecated) as the main job leaves it when Airflow keeps running: parity passed,
    retired now, then the scheduled migration judged parity once more (fail: the v1 messages published after
    the retirement are missing in v2) and archive validation found those messages, ``late`` ((producer, count),
    one minute apart from a minute after the retirement). Returns the moment of the retirement."""
    from contract_platform import evidence
    from contract_platform.evidence import Verdict
    from contract_platform.validation.evidence import retired_traffic_figures
    from contract_platform.validation.report import RetiredGroup, RetiredTraffic

    mt = contract.message_type
    registry.add_evidence(
        mt,
        contract_version=contract.version,
        kind="migration_parity",
        verdict="pass",
        figures={"mode": "bridge", "parity": 1.0, "v1_total": 200, "v2_total": 200, "missing": 0},
        collected_at=datetime.now(UTC) - timedelta(hours=2),
    )
    state = registry.effective(mt)
    assert state is not None and state.status is Status.DEPRECATED
    retired = registry.apply_transition(
        mt, expected=state, to=Status.RETIRED, actor="dag:retirement_audit", reason="proven"
    )
    at = retired.updated_at
    registry.add_evidence(
        mt,
        contract_version=contract.version,
        kind="migration_parity",
        verdict="fail",
        figures={"mode": "bridge", "parity": 200 / 202, "v1_total": 202, "v2_total": 200, "missing": 2},
        run_id="scheduled__after-retirement",
        collected_at=at + timedelta(minutes=30),
    )
    minute, groups, sent = 60_000_000, [], 1
    first = int(at.timestamp() * 1_000_000)
    for producer, count in late:
        groups.append(RetiredGroup(mt, producer, count, first + sent * minute, first + (sent + count - 1) * minute))
        sent += count
    figures = retired_traffic_figures(RetiredTraffic.of(groups), retired_at=at.isoformat())
    evidence.record(
        registry,
        mt,
        contract.version,
        figures,
        verdict=Verdict.FAIL,
        run_id="scheduled__after-retirement",
        collected_at=at + timedelta(minutes=31),
    )
    return at


# -- an estate: many generated contracts with a history, for paging and scale ----------------------------

ESTATE_DOMAINS = ("stock", "travel", "warehouse", "yard")  # all sort after the real catalogue's domains
ESTATE_TEAMS = ("inventory-platform", "journeys", "fulfilment", "logistics-core")


@dataclass(frozen=True)
class EstateContract:
    message_type: str
    domain: str
    status: Status  # declared, and effective unless ``mismatched``
    mismatched: bool  # declared active, stopped at experimental by a refused step
    quality_fails: bool  # its latest envelope quality failed


def estate_plan(count: int) -> list[EstateContract]:
    """``count`` contracts: mostly active; every 10th deprecated (v1 superseded by the active v2 of its name),
    every 17th declared active but refused at experimental, every 7th with a failed latest quality run."""
    plan = []
    for index in range(count):
        domain = ESTATE_DOMAINS[index % len(ESTATE_DOMAINS)]
        name = f"item-{index:05d}-recorded"
        deprecated = index % 10 == 3
        mismatched = not deprecated and index % 17 == 5
        plan.append(
            EstateContract(
                f"{domain}.{name}.v1",
                domain,
                Status.DEPRECATED if deprecated else Status.ACTIVE,
                mismatched,
                quality_fails=index % 7 == 2,
            )
        )
    return plan


_PAYLOAD = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["itemId", "quantity"],
    "properties": {
        "itemId": {"type": "string", "minLength": 1, "description": "The item's business identifier."},
        "quantity": {"type": "integer", "minimum": 0, "description": "Units recorded."},
    },
    "additionalProperties": False,
}


def write_estate_catalog(target: Path, count: int, source: Path | None = None) -> list[EstateContract]:
    """A catalogue at ``target``: a copy of ``source`` (default: none) plus ``count`` generated contracts."""
    import json
    import shutil

    if source is not None:
        shutil.copytree(source, target, dirs_exist_ok=True)
    else:
        envelope = Path(__file__).resolve().parents[2] / "contracts" / "envelope"
        shutil.copytree(envelope, target / "envelope", dirs_exist_ok=True)
    plan = estate_plan(count)
    for index, item in enumerate(plan):
        domain, name, _ = item.message_type.split(".")
        folder = target / domain / name / "v1"
        (folder / "fixtures" / "valid").mkdir(parents=True, exist_ok=True)
        (folder / "fixtures" / "invalid").mkdir(parents=True, exist_ok=True)
        team = ESTATE_TEAMS[index % len(ESTATE_TEAMS)]
        lines = [
            f"messageType: {item.message_type}",
            "kind: event",
            "version: 1.0.0",
            f"status: {item.status.value}",
            f"description: Item {index} of the {domain} estate was recorded (generated for scale tests).",
            f"owner: {{team: {team}, service: {domain}-service, contact: {team}@example.com}}",
            f"transport: {{exchange: {domain}.events, routingKey: {domain}.{name.removesuffix('-recorded')}.recorded.v1}}",
            "compatibility: BACKWARD",
            "idempotencyKey: /metadata/messageId",
            "pii: {containsPii: false, fields: []}",
            "retention: {queue: 14d, dlq: 14d, archive: 90d}",
            "consumers:",
            f"  - {{service: ledger-service, queue: ledger-service.{item.message_type}}}",
        ]
        if item.status is Status.DEPRECATED:
            lines += [f"supersededBy: {domain}.{name}.v2", 'sunset: "2027-03-01"']
        (folder / "contract.yaml").write_text("\n".join(lines) + "\n")
        (folder / "payload.schema.json").write_text(json.dumps(_PAYLOAD, indent=2))
        envelope = {
            "metadata": {
                "messageId": f"m-{index}",
                "messageType": item.message_type,
                "schemaVersion": 1,
                "messageVersion": "1.0.0",
                "producer": f"{domain}-service",
                "occurredAt": "2026-07-01T10:15:30Z",
                "publishedAt": "2026-07-01T10:15:31Z",
                "correlationId": f"c-{index}",
                "partitionKey": f"item-{index}",
            },
            "payload": {"itemId": f"it-{index}", "quantity": 3},
        }
        (folder / "fixtures" / "valid" / "three-units.json").write_text(json.dumps(envelope))
        bad = {**envelope, "payload": {"itemId": "", "quantity": -1}}
        (folder / "fixtures" / "invalid" / "negative-quantity.json").write_text(json.dumps(bad))
    return plan


def seed_estate(url: str, plan: list[EstateContract], *, days: int = 30, now: datetime | None = None) -> int:
    """The registry history of ``plan`` as the DAGs would leave it after ``days`` days, in a few bulk inserts:
    registered and walked by contract_change runs (the mismatched refused at experimental), its change
    evidence, a daily archive validation and envelope quality, and for deprecated versions parity and a
    daily retirement audit over the last week. Returns the evidence rows written."""
    from sqlalchemy import create_engine, insert

    from contract_platform.store import tables

    now = now or datetime.now(UTC).replace(microsecond=0)
    SqlRegistry.open(url).close()  # the schema, at its latest version
    versions, transitions, refusals, evidence = [], [], [], []
    actor = f"dag:{CHANGE_DAG}"
    start = now - timedelta(days=days + 1)
    for item in plan:
        mt = item.message_type
        reached = Status.EXPERIMENTAL if item.mismatched else item.status
        walk = [s for s in Status if s.rank <= reached.rank]
        for revision, status in enumerate(walk, start=1):
            transitions.append(
                {
                    "message_type": mt,
                    "revision": revision,
                    "from_status": walk[revision - 2].value if revision > 1 else None,
                    "to_status": status.value,
                    "at": start + timedelta(hours=revision),
                    "actor": actor,
                    "run_id": f"estate__{revision}",
                    "reason": f"guards passed for {status.value}" if revision > 1 else "registered at 1.0.0",
                    "evidence_id": None,
                }
            )
        versions.append(
            {
                "message_type": mt,
                "effective_status": reached.value,
                "contract_version": "1.0.0",
                "revision": len(walk),
                "updated_at": start + timedelta(hours=len(walk)),
            }
        )
        if item.mismatched:
            refusals.append(
                {
                    "message_type": mt,
                    "from_status": Status.EXPERIMENTAL.value,
                    "to_status": Status.ACTIVE.value,
                    "at": now - timedelta(hours=3),
                    "actor": actor,
                    "run_id": "estate__refused",
                    "reasons": ["no envelope quality evidence for version 1.0.0 yet: run the envelope_quality DAG"],
                }
            )

        def add(kind: str, verdict: str, figures: dict[str, object], at: datetime, mt: str = mt) -> None:
            evidence.append(
                {
                    "message_type": mt,
                    "contract_version": "1.0.0",
                    "kind": kind,
                    "collected_at": at,
                    "verdict": verdict,
                    "figures": figures,
                    "reference": None,
                    "run_id": f"scheduled__{at.date().isoformat()}",
                }
            )

        for kind in ("lint", "fixtures", "compatibility", "topology"):
            add(kind, "pass", {"problems": 0}, start + timedelta(minutes=30))
        for day in range(days, 0, -1):
            at = now - timedelta(days=day, hours=-1)
            total = 10_000 + day
            add(
                "archive_validation",
                "pass",
                {"total": total, "invalid": day % 3, "invalid_rate": (day % 3) / total, "invalid_rate_target": 0.001},
                at,
            )
            failing = item.quality_fails and day == 1
            add(
                "envelope_quality",
                "fail" if failing else "pass",
                {
                    "evaluated": 2,
                    "failed": 1 if failing else 0,
                    "failed_expectations": ["published-after-occurred"] if failing else [],
                    "unexpected": {"message-id-unique": 0, "published-after-occurred": 17 if failing else 0},
                    "samples": {"published-after-occurred": [f"m-late-{n}" for n in range(3)]} if failing else {},
                    "mostly": {"message-id-unique": 1.0, "published-after-occurred": 0.999},
                    "skipped": {"tenant-id-present": "the contract does not require tenancy"},
                    "rows": total,
                },
                at + timedelta(hours=1),
            )
            if item.status is Status.DEPRECATED and day <= 7:
                add("retirement_audit", "pass", {"failed_checks": [], "consumers": 0}, at + timedelta(hours=2))
        if item.status is Status.DEPRECATED:
            add("migration_parity", "pass", {"mode": "bridge", "parity": 1.0}, now - timedelta(days=8))
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(insert(tables.contract_versions), versions)
            conn.execute(insert(tables.transitions), transitions)
            if refusals:
                conn.execute(insert(tables.refusals), refusals)
            for i in range(0, len(evidence), 20_000):
                conn.execute(insert(tables.evidence), evidence[i : i + 20_000])
    finally:
        engine.dispose()
    return len(evidence)
