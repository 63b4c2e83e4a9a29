"""Verdict logic of the retirement checks that need no broker: each blocker on its own, and when it clears."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta

import pytest
from tests.support.contracts import V1, V2, catalog_of, migrating_contract

from contract_platform import evidence
from contract_platform.amqp.inspection import QueueState
from contract_platform.amqp.topology import Role
from contract_platform.catalog.model import Consumer, Contract, Hold
from contract_platform.evidence import Verdict
from contract_platform.evidence.figures import ArchiveRetentionFigures
from contract_platform.retirement import (
    CheckName,
    CheckResult,
    LastSeen,
    QueueLook,
    TypeLastSeen,
    check_holds,
    check_queues,
    check_retention,
    check_successor_consumers,
)
from contract_platform.retirement.model import iso
from contract_platform.store import SqlRegistry

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
QUEUE = "accounting-service.billing.invoice-issued.v1"


def look(name: str = QUEUE, role: Role = Role.CONSUMER, **state: object) -> QueueLook:
    values: dict[str, object] = {"exists": True, "ready": 0, "consumers": 0, "unacked": 0} | state
    return QueueLook(name, role, QueueState(name, **values))  # type: ignore[arg-type]


def clean_looks() -> list[QueueLook]:
    return [
        look(),
        look(f"{QUEUE}.retry.30s", Role.RETRY),
        look(f"{QUEUE}.dlq", Role.DLQ),
        look(f"{QUEUE}.parking-lot", Role.PARKING_LOT),
    ]


# -- queues ----------------------------------------------------------------------------------------


def test_queues_pass_when_every_queue_is_empty_and_unconsumed_or_absent() -> None:
    result = check_queues([*clean_looks(), look("gone", Role.DLQ, exists=False, unacked=None)])
    assert result.verdict is Verdict.PASS and result.blocker is None
    assert result.figures["missing"] == ["gone"]


@pytest.mark.parametrize(
    ("changed", "says"),
    [
        (look(consumers=1), f"{QUEUE} has 1 consumer connected"),
        (look(f"{QUEUE}.retry.30s", Role.RETRY, ready=2), "holds 2 messages waiting to be retried"),
        (look(f"{QUEUE}.dlq", Role.DLQ, ready=1), "replay them to the successor or discard them"),
        (look(unacked=3), "3 unacknowledged messages"),
    ],
)
def test_queues_fail_on_any_consumer_ready_or_unacked_message_and_say_where(changed: QueueLook, says: str) -> None:
    looks = [changed if item.name == changed.name else item for item in clean_looks()]
    result = check_queues(looks)
    assert result.verdict is Verdict.FAIL
    assert says in (result.blocker or "") and changed.name in (result.blocker or "")


def test_queues_are_unknown_not_passed_when_unacked_counts_are_unknown() -> None:
    looks = [look(unacked=None), *clean_looks()[1:]]
    result = check_queues(looks)
    assert result.verdict is Verdict.UNKNOWN
    assert result.figures["unackedUnknown"] == [QUEUE]
    assert "management API" in (result.blocker or "")


# -- retention -------------------------------------------------------------------------------------


def seen(days_ago: float) -> LastSeen:
    return LastSeen({V1: TypeLastSeen(NOW - timedelta(days=days_ago), 42)}, scanned=True, source="last-seen.json")


def test_retention_passes_once_the_longer_of_queue_and_dlq_retention_has_elapsed() -> None:
    result = check_retention(migrating_contract(), seen(14), now=NOW)  # queue 14d, dlq 10d
    assert result.verdict is Verdict.PASS
    assert result.figures["archiveKeepsUntil"] == iso(NOW - timedelta(days=14) + timedelta(days=90))


def test_retention_not_elapsed_fails_and_says_when_it_passes() -> None:
    result = check_retention(migrating_contract(), seen(11), now=NOW)
    assert result.verdict is Verdict.FAIL
    assert result.clears_at == NOW + timedelta(days=3)
    assert iso(NOW + timedelta(days=3)) in (result.blocker or "")
    assert result.figures["records"] == 42


def test_retention_never_archived_passes_only_when_an_archive_was_scanned() -> None:
    scanned = check_retention(migrating_contract(), LastSeen({}, scanned=True, source="f"), now=NOW)
    assert scanned.verdict is Verdict.PASS and scanned.figures["neverArchived"] is True
    unscanned = check_retention(migrating_contract(), LastSeen(source="f (missing)"), now=NOW)
    assert unscanned.verdict is Verdict.UNKNOWN
    assert "archive_last_seen" in (unscanned.blocker or "")


def test_retention_after_archive_retention_deleted_the_type_names_the_deletion_not_never_archived(
    registry: SqlRegistry,
) -> None:
    """The scan finds no message of the type because archive retention deleted its exchange's partitions: whatever
    was archived is older than the day the deletion kept from, so the check passes once max(queue, dlq) has passed
    since then, saying so (the evidence of the deletion, never "never archived")."""
    contract = migrating_contract()  # queue 14d, dlq 10d, archive 90d
    kept_from = (NOW - timedelta(days=90)).date()
    figures = ArchiveRetentionFigures(exchange=contract.transport.exchange, window="90d", before=kept_from.isoformat(),
                                      partitions=({"day": "2026-08-01", "files": 1, "records": 3, "bytes": 900},),
                                      files=1, records=3, bytes=900)  # fmt: skip
    deletion = evidence.record(registry, V1, "1.0.0", figures, verdict=Verdict.PASS, collected_at=NOW)
    scanned = LastSeen({}, scanned=True, source="f")

    result = check_retention(contract, scanned, now=NOW, deleted=deletion)

    assert result.verdict is Verdict.PASS and result.figures["neverArchived"] is False
    assert result.figures["deletedByRetention"]["evidenceId"] == deletion.id
    assert (
        f"archive retention deleted the partitions of {contract.transport.exchange} before {kept_from}"
        in (result.figures["note"])
    )
    soon = check_retention(contract, scanned, now=NOW - timedelta(days=80), deleted=deletion)  # the cut + 10d
    assert soon.verdict is Verdict.FAIL and soon.clears_at == datetime.combine(kept_from, time(0), UTC) + timedelta(
        days=14
    )


# -- holds and successor ---------------------------------------------------------------------------


def test_holds_in_force_fail_and_clear_the_day_after_the_last_one() -> None:
    contract = migrating_contract(
        holds=(
            Hold("audit", date(2026, 12, 31), "FY2026 tax audit"),
            Hold("legal", date(2027, 1, 15), "litigation"),
            Hold("replay", date(2026, 1, 1), "expired"),
        )
    )
    result = check_holds(contract, now=NOW)
    assert result.verdict is Verdict.FAIL
    assert result.clears_at == datetime(2027, 1, 16, tzinfo=UTC)
    assert "audit hold until 2026-12-31" in (result.blocker or "") and "legal hold" in (result.blocker or "")
    assert "replay" not in (result.blocker or "")
    assert check_holds(contract, now=datetime(2027, 1, 16, tzinfo=UTC)).verdict is Verdict.PASS


def test_successor_consumers_name_the_services_that_have_not_moved() -> None:
    v1 = migrating_contract(V1)
    v2 = replace(migrating_contract(V2), consumers=(Consumer("accounting-service", "accounting-service.v2"),))
    result = check_successor_consumers(v1, catalog_of(v1, v2))
    assert result.verdict is Verdict.FAIL
    assert result.figures["notMoved"] == ["notification-service"]
    assert "notification-service" in (result.blocker or "") and V2 in (result.blocker or "")
    assert check_successor_consumers(v1, catalog_of(v1, migrating_contract(V2))).verdict is Verdict.PASS


def test_a_missing_successor_fails() -> None:
    v1: Contract = migrating_contract(V1)
    result = check_successor_consumers(v1, catalog_of(v1))
    assert result.verdict is Verdict.FAIL and V2 in (result.blocker or "")


def test_a_check_result_has_a_blocker_exactly_when_it_did_not_pass() -> None:
    with pytest.raises(ValueError, match="blocker"):
        CheckResult(CheckName.HOLDS, Verdict.FAIL, {})
    with pytest.raises(ValueError, match="blocker"):
        CheckResult(CheckName.HOLDS, Verdict.PASS, {}, "why")
