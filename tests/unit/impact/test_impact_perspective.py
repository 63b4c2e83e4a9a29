"""The readers perspective's decision table (impact.perspective): accepted only when every consumer declares
its reads, the reader sessions of the window are known, no reader outside the declared consumers was seen and
no declared reader is broken; each refusal names the condition and who failed it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from contract_platform.catalog.model import Consumer
from contract_platform.compat import Mode, check_compatibility
from contract_platform.evidence.records import CoverageGap, ReaderSession
from contract_platform.impact import Condition, ConsumerImpact, ObservedReaders, impact_of, readers_perspective

OLD: dict[str, Any] = {
    "type": "object",
    "properties": {"invoiceId": {"type": "string"}, "legacyCode": {"type": "string"}, "amount": {"type": "string"}},
}
NARROWED = {**OLD, "properties": {**OLD["properties"], "legacyCode": {"type": "string", "maxLength": 4}}}
T0 = datetime(2026, 11, 20, tzinfo=UTC)
T1 = datetime(2026, 11, 25, tzinfo=UTC)

LEDGER = Consumer("ledger-service", "ledger-service.billing.invoice-issued.v1", reads=("/payload/invoiceId",))
MAILER = Consumer("mailer-service", "mailer-service.billing.invoice-issued.v1", reads=("/payload/amount",))
SILENT = Consumer("silent-service", "silent-service.billing.invoice-issued.v1")
LEGACY_READER = Consumer("legacy-service", "legacy-service.billing.invoice-issued.v1", reads=("/payload/legacyCode",))


def _impact(consumers: list[Consumer], new: Any = NARROWED) -> ConsumerImpact:
    verdict = check_compatibility(OLD, new, mode=Mode.BACKWARD)
    return impact_of(verdict.changes, consumers, old_schema=OLD, new_schema=new)


def _session(queue: str, connection: str = "ledger-service@host-1") -> ReaderSession:
    return ReaderSession("/", queue, "amq.ctag-1", "ch-1", T0, None, connection_name=connection, peer_host="10.0.0.7")


DECLARED_ONLY = ObservedReaders([_session(LEDGER.queue), _session(MAILER.queue, "mailer@host-2")], (), T0, T1)
STRANGER = _session("adhoc.billing.invoice-issued.v1", "jupyter-notebook-7")


@pytest.mark.parametrize(
    ("consumers", "observed", "accepted", "condition", "named"),
    [
        # every consumer declares, only they read, the narrowed field is read by none of them
        ([LEDGER, MAILER], DECLARED_ONLY, True, Condition.ACCEPTED, ""),
        # none seen at all in a fully recorded window: still no reader outside the declared ones
        ([LEDGER, MAILER], ObservedReaders([], (), T0, T1), True, Condition.ACCEPTED, ""),
        # one consumer declares nothing: it reads everything
        ([LEDGER, SILENT], DECLARED_ONLY, False, Condition.CONSUMER_WITHOUT_READS, "silent-service"),
        # an undeclared reader attached in the window: named by its connection and queue
        (
            [LEDGER, MAILER],
            ObservedReaders([*DECLARED_ONLY.sessions, STRANGER], (), T0, T1),
            False,
            Condition.UNDECLARED_READER,
            "jupyter-notebook-7",
        ),
        # the sessions are not known at all
        ([LEDGER, MAILER], None, False, Condition.READERS_UNKNOWN, ""),
        # the recorder had a gap: absence of a reader then is not known
        (
            [LEDGER, MAILER],
            ObservedReaders(DECLARED_ONLY.sessions, [CoverageGap(T0, T1, "recorder stopped")], T0, T1),
            False,
            Condition.READERS_UNKNOWN,
            "recorder stopped",
        ),
        # a declared consumer reads the narrowed field
        (
            [LEDGER, LEGACY_READER],
            ObservedReaders([_session(LEDGER.queue)], (), T0, T1),
            False,
            Condition.DECLARED_READER_BROKEN,
            "legacy-service",
        ),
    ],
)
def test_readers_perspective_decision_table(
    consumers: list[Consumer], observed: ObservedReaders | None, accepted: bool, condition: str, named: str
) -> None:
    decision = readers_perspective(_impact(consumers), observed)
    assert (decision.accepted, decision.condition) == (accepted, condition)
    if named:
        assert named in decision.message
        assert any(named in name for failure in decision.failures for name in failure.names)


def test_every_failed_condition_is_named_not_only_the_first() -> None:
    observed = ObservedReaders([STRANGER], [CoverageGap(T0, T1, "broker restarted")], T0, T1)
    decision = readers_perspective(_impact([SILENT, LEGACY_READER]), observed)
    assert decision.accepted is False
    assert [f.condition for f in decision.failures] == [
        Condition.CONSUMER_WITHOUT_READS,
        Condition.READERS_UNKNOWN,
        Condition.UNDECLARED_READER,
        Condition.DECLARED_READER_BROKEN,
    ]
    assert decision.to_dict()["condition"] == Condition.CONSUMER_WITHOUT_READS


def test_a_compatible_change_needs_no_perspective() -> None:
    decision = readers_perspective(_impact([SILENT], new=OLD), None)
    assert (decision.accepted, decision.condition) == (True, Condition.COMPATIBLE)
