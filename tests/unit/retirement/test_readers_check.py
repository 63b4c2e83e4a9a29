"""The ``readers`` check on stored evidence: reader sessions, the recorder's coverage, and delivery counters.

Written from what RabbitMQ's event exchange announces (consumer.created / consumer.deleted), what the
management API's queue ``message_stats`` count (deliver_get, get_empty, ack, redeliver) and what the
retirement settings require (``observations`` audits spanning ``observationSpan``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.support.contracts import migrating_contract

from contract_platform.catalog.model import RetirementSettings
from contract_platform.evidence import Verdict
from contract_platform.evidence.records import (
    BrokerChange,
    CoverageGap,
    CoverageSegment,
    DeliveryWatch,
    QueueCounters,
    ReaderSession,
)
from contract_platform.retirement import ReaderEvidence, VersionQueue, check_readers
from contract_platform.retirement.model import iso

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SINCE = NOW - timedelta(days=30)
QUEUE = "accounting-service.billing.invoice-issued.v1"
DLQ = f"{QUEUE}.dlq"
V1_TYPE = "billing.invoice-issued.v1"
QUEUES = [VersionQueue("/", QUEUE, QUEUE), VersionQueue("/", DLQ, DLQ)]
SPAN = RetirementSettings(observations=3, observation_span=timedelta(days=7))


def covered(start: datetime = SINCE, end: datetime = NOW) -> list[CoverageSegment]:
    return [CoverageSegment("s1", start, start, end)]


def audits(*ages: timedelta, moved: dict[int, dict[str, int]] | None = None) -> list[QueueCounters]:
    """One counter snapshot of each queue per audit (oldest first); ``moved``: audit index -> counter increments."""
    rows, totals = [], {"deliver_get": 0, "get_empty": 0, "ack": 0, "redeliver": 0}
    for index, age in enumerate(sorted(ages, reverse=True)):
        for name, step in (moved or {}).get(index, {}).items():
            totals[name] += step
        for queue in (QUEUE, DLQ):
            values = totals if queue == QUEUE else dict.fromkeys(totals, 0)
            rows.append(QueueCounters("billing.invoice-issued.v1", "/", queue, NOW - age, True, **values))
    return rows


def evidence(
    counters: list[QueueCounters],
    *,
    segments: list[CoverageSegment] | None = None,
    gaps: list[CoverageGap] | None = None,
    sessions: list[ReaderSession] | None = None,
    changes: list[BrokerChange] | None = None,
    watches: list[DeliveryWatch] | None = None,
) -> ReaderEvidence:
    return ReaderEvidence(
        SINCE,
        covered() if segments is None else segments,
        gaps or [],
        sessions or [],
        changes or [],
        counters,
        traced() if watches is None else watches,
    )


def traced(start: datetime = SINCE, until: datetime = NOW, problem: str | None = None) -> list[DeliveryWatch]:
    """Every queue's deliveries traced from ``start``, stored up to ``until``."""
    return [DeliveryWatch("/", queue.queue, start, start, until, problem) for queue in QUEUES]


def session(attached: datetime | None, detached: datetime | None, name: str = "nightly-ledger-batch") -> ReaderSession:
    return ReaderSession("/", QUEUE, "ctag-1", "<rabbit@node.1.2.3>", attached, detached, name, "10.1.2.3", "ledger")


DAYS = (timedelta(days=8), timedelta(days=4), timedelta(0))


def judge(ev: ReaderEvidence, settings: RetirementSettings = SPAN) -> object:
    return check_readers(migrating_contract(retirement=settings), QUEUES, ev, now=NOW)


def test_a_clean_span_with_enough_audits_passes() -> None:
    result = judge(evidence(audits(*DAYS)))
    assert result.verdict is Verdict.PASS and result.blocker is None  # type: ignore[attr-defined]
    assert result.figures["audits"] == 3  # type: ignore[attr-defined]


def test_a_batch_consumer_between_two_audits_fails_and_is_named() -> None:
    # attached for 20 minutes between the first two audits, then left: no audit ever saw it
    batch = session(NOW - timedelta(days=6), NOW - timedelta(days=6) + timedelta(minutes=20))
    result = judge(evidence(audits(*DAYS), sessions=[batch]))
    assert result.verdict is Verdict.FAIL  # type: ignore[attr-defined]
    blocker = result.blocker or ""  # type: ignore[attr-defined]
    assert "nightly-ledger-batch from 10.1.2.3 as ledger" in blocker and QUEUE in blocker
    assert iso(batch.attached_at) in blocker and iso(batch.detached_at) in blocker
    # the clock starts again when it left: seven days from then (two audits since, a third comes daily)
    assert result.clears_at == batch.detached_at + timedelta(days=7)  # type: ignore[attr-defined,operator]


def test_a_consumer_that_received_nothing_still_blocks() -> None:
    idle = session(NOW - timedelta(hours=3), NOW - timedelta(hours=3) + timedelta(seconds=2), "dr-replay")
    result = judge(evidence(audits(*DAYS), sessions=[idle]))
    assert result.verdict is Verdict.FAIL and "dr-replay" in (result.blocker or "")  # type: ignore[attr-defined]


def test_a_consumer_still_attached_and_one_seen_only_leaving_both_block() -> None:
    still = session(NOW - timedelta(days=1), None, "still-here")
    orphan = session(None, NOW - timedelta(days=2), "was-here-before-the-recorder")
    result = judge(evidence(audits(*DAYS), sessions=[still, orphan]))
    blocker = result.blocker or ""  # type: ignore[attr-defined]
    assert "still-here" in blocker and "is still attached" in blocker
    assert "was-here-before-the-recorder" in blocker and "since before the recorder saw it" in blocker


def test_a_basic_get_poller_shows_only_in_the_counters_and_fails() -> None:
    result = judge(evidence(audits(*DAYS, moved={1: {"deliver_get": 1, "ack": 1}})))
    assert result.verdict is Verdict.FAIL  # type: ignore[attr-defined]
    assert "deliver_get +1, ack +1" in (result.blocker or "")  # type: ignore[attr-defined]


def test_an_empty_get_on_an_empty_queue_is_a_reader_too() -> None:
    result = judge(evidence(audits(*DAYS, moved={2: {"get_empty": 3}})))
    assert result.verdict is Verdict.FAIL and "get_empty +3" in (result.blocker or "")  # type: ignore[attr-defined]


def test_the_audits_own_peek_is_not_a_reader() -> None:
    # the DLQ holds two messages: each audit's peek gets both (redelivered after the first peek) and gives them
    # back; the next audit's counters show exactly that, and nothing else
    rows = []
    for index, age in enumerate(DAYS):
        at = NOW - age
        rows.append(QueueCounters(V1_TYPE, "/", QUEUE, at, True, 0, 0, 0, 0))
        rows.append(
            QueueCounters(
                V1_TYPE,
                "/",
                DLQ,
                at,
                True,
                2 * index,
                0,
                0,
                max(0, 2 * (index - 1)),
                own_deliver_get=2,
                own_redeliver=0 if index == 0 else 2,
            )
        )
    result = judge(evidence(rows))
    assert result.verdict is Verdict.PASS, result.blocker  # type: ignore[attr-defined]
    # one more get than the peek made is a reader
    rows[-1] = QueueCounters(V1_TYPE, "/", DLQ, NOW, True, 5, 0, 0, 2, own_deliver_get=2, own_redeliver=2)
    assert "deliver_get +1" in (judge(evidence(rows)).blocker or "")  # type: ignore[attr-defined]
    assert judge(evidence(rows)).verdict is Verdict.FAIL  # type: ignore[attr-defined]


def test_a_counter_going_back_is_unknown_not_zero() -> None:
    rows = audits(*DAYS, moved={0: {"deliver_get": 10}})
    last = [r for r in rows if r.observed_at == NOW and r.queue == QUEUE][0]
    rows = [r if r is not last else r.__class__(**{**r.__dict__, "deliver_get": 0}) for r in rows]
    result = judge(evidence(rows))
    assert result.verdict is Verdict.UNKNOWN  # type: ignore[attr-defined]
    assert "went back from 10 to 0" in (result.blocker or "")  # type: ignore[attr-defined]


def test_a_queue_deleted_mid_span_is_unknown() -> None:
    deleted = BrokerChange("queue.deleted", "/", QUEUE, NOW - timedelta(days=2))
    result = judge(evidence(audits(*DAYS), changes=[deleted]))
    assert result.verdict is Verdict.UNKNOWN and "was deleted at" in (result.blocker or "")  # type: ignore[attr-defined]


def test_a_gap_is_never_a_pass_and_says_where_and_when_it_can_pass() -> None:
    gap_start, gap_end = NOW - timedelta(days=3), NOW - timedelta(days=3) + timedelta(hours=1)
    segments = [CoverageSegment("a", SINCE, SINCE, gap_start), CoverageSegment("b", gap_end, gap_end, NOW)]
    gaps = [CoverageGap(gap_start, gap_end, "the recorder stopped without closing its segment (killed, ...)")]
    result = judge(evidence(audits(*DAYS), segments=segments, gaps=gaps))
    assert result.verdict is Verdict.UNKNOWN  # type: ignore[attr-defined]
    blocker = result.blocker or ""  # type: ignore[attr-defined]
    assert iso(gap_start) in blocker and iso(gap_end) in blocker and "killed" in blocker
    assert result.clears_at >= gap_end + timedelta(days=7)  # type: ignore[attr-defined,operator]
    assert iso(result.clears_at) in blocker  # type: ignore[attr-defined]


def test_no_recorder_at_all_is_unknown_and_says_how_to_start_it() -> None:
    result = judge(evidence(audits(*DAYS), segments=[]))
    assert result.verdict is Verdict.UNKNOWN and "contractctl record-activity" in (result.blocker or "")  # type: ignore[attr-defined]


def test_a_recorder_that_stopped_confirming_leaves_the_tail_unknown() -> None:
    result = judge(evidence(audits(*DAYS), segments=covered(SINCE, NOW - timedelta(hours=2))))
    assert result.verdict is Verdict.UNKNOWN and "confirmed nothing since" in (result.blocker or "")  # type: ignore[attr-defined]


def test_too_few_audits_fails_until_enough_have_run() -> None:
    result = judge(evidence(audits(timedelta(days=8), timedelta(0))))
    assert result.verdict is Verdict.FAIL  # type: ignore[attr-defined]
    assert "only 2 audits" in (result.blocker or "")  # type: ignore[attr-defined]
    assert result.clears_at == NOW + timedelta(days=1)  # type: ignore[attr-defined]


def test_a_new_queue_without_counter_history_cannot_pass_yet() -> None:
    rows = [r for r in audits(*DAYS) if r.queue == QUEUE or r.observed_at == NOW]
    result = judge(evidence(rows))
    assert result.verdict is Verdict.UNKNOWN  # type: ignore[attr-defined]
    assert f"{DLQ}: no delivery counters before the audit at {iso(NOW)}" in (result.blocker or "")  # type: ignore[attr-defined]


def test_a_version_without_queues_passes() -> None:
    result = check_readers(migrating_contract(), [], evidence([]), now=NOW)
    assert result.verdict is Verdict.PASS


def test_queues_without_a_reported_last_activity_are_named_as_blind_to_empty_polls() -> None:
    rows = audits(*DAYS)
    rows = [r if r.queue != QUEUE else r.__class__(**{**r.__dict__, "idle_since": r.observed_at}) for r in rows]
    result = judge(evidence(rows))
    assert result.verdict is Verdict.PASS  # type: ignore[attr-defined]
    assert result.figures["emptyPollsNotVisible"] == [DLQ]  # type: ignore[attr-defined]


def test_a_gap_inside_the_recorders_coverage_is_unknown_too() -> None:
    # the broker dropped events at the recorder's queue limit while the recorder kept its segment going
    start, end = NOW - timedelta(days=2), NOW - timedelta(days=2) + timedelta(minutes=3)
    dropped = CoverageGap(start, end, "the recorder's queue q reached its limit (50,000 messages or ...)")
    result = judge(evidence(audits(*DAYS), gaps=[dropped]))
    assert result.verdict is Verdict.UNKNOWN  # type: ignore[attr-defined]
    blocker = result.blocker or ""  # type: ignore[attr-defined]
    assert iso(start) in blocker and iso(end) in blocker and "reached its limit" in blocker
    assert result.clears_at == end + timedelta(days=7)  # type: ignore[attr-defined]


def test_an_event_the_store_refused_is_a_moment_not_known() -> None:
    at = NOW - timedelta(days=1)
    refused = CoverageGap(at, at, "a consumer.created event of the broker could not be stored (value too long)")
    result = judge(evidence(audits(*DAYS), gaps=[refused]))
    assert result.verdict is Verdict.UNKNOWN and "could not be stored" in (result.blocker or "")  # type: ignore[attr-defined]


def test_the_stored_figures_read_back_typed_as_they_were_written() -> None:
    """The audit writes the readers figures through ``ReadersFigures`` and the Contracts page reads them back
    through it: what was stored is what is read, sessions, coverage, gaps and obstacles included."""
    from contract_platform.evidence.figures import ReadersFigures

    gap_start, gap_end = NOW - timedelta(days=3), NOW - timedelta(days=3) + timedelta(hours=1)
    segments = [CoverageSegment("a", SINCE, SINCE, gap_start), CoverageSegment("b", gap_end, gap_end, NOW)]
    gaps = [CoverageGap(gap_start, gap_end, "the recorder stopped without closing its segment (killed, ...)")]
    batch = session(NOW - timedelta(days=6), NOW - timedelta(days=6) + timedelta(minutes=20))
    for result in (
        judge(evidence(audits(*DAYS), sessions=[batch], segments=segments, gaps=gaps)),
        judge(evidence(audits(*DAYS))),
        check_readers(migrating_contract(), [], evidence([]), now=NOW),
    ):
        stored = result.figures  # type: ignore[attr-defined]
        typed = ReadersFigures.from_json(stored)
        assert typed.to_json() == stored
    assert [
        s.consumer_tag
        for s in ReadersFigures.from_json(judge(evidence(audits(*DAYS), sessions=[batch])).figures).sessions
    ] == [  # type: ignore[attr-defined]
        batch.consumer_tag
    ]
    assert ReadersFigures.from_json({"sessions": "junk", "window": [], "audits": True}) == ReadersFigures()


# -- the delivery trace (retirement.deliveries): every message a queue hands out is explained, or a reader ------------


def delivery(
    after: datetime, before: datetime, count: int = 1, name: str = "127.0.0.1:50412 -> 127.0.0.1:5672"
) -> ReaderSession:
    return ReaderSession(
        "/", QUEUE, "", "1", after, before, name, "127.0.0.1", "cron", source="delivery", deliveries=count
    )


def test_a_traced_delivery_is_a_reader_named_with_its_count() -> None:
    clean = audits(*DAYS)
    result = judge(evidence(clean, sessions=[delivery(NOW - timedelta(days=1, seconds=2), NOW - timedelta(days=1), 3)]))

    assert result.verdict is Verdict.FAIL
    assert f"{QUEUE} handed 3 messages to 127.0.0.1:50412 -> 127.0.0.1:5672 from 127.0.0.1 as cron" in result.blocker


def test_the_audits_own_peek_explains_its_deliveries_and_no_more() -> None:
    rows = audits(*DAYS, moved={2: {"deliver_get": 2}})  # the next audit's counters show the peek's two gets
    peek_at = NOW - timedelta(days=4)
    rows = [
        QueueCounters(**{**r.__dict__, "own_deliver_get": 2, "own_until": peek_at + timedelta(seconds=1)})
        if r.observed_at == peek_at and r.queue == QUEUE
        else r
        for r in rows
    ]
    own = delivery(peek_at, peek_at + timedelta(seconds=1), 2, name="contract-platform audit")
    assert judge(evidence(rows, sessions=[own])).verdict is Verdict.PASS

    # someone else read during the peek: more deliveries in the window than the peek took
    other = delivery(peek_at, peek_at + timedelta(seconds=1), 1, name="sneaky-poller")
    result = judge(evidence(rows, sessions=[own, other]))
    assert result.verdict is Verdict.FAIL and "handed 1 message to sneaky-poller" in result.blocker


def test_queues_whose_deliveries_are_not_traced_are_unknown() -> None:
    result = judge(evidence(audits(*DAYS), watches=[]))

    assert result.verdict is Verdict.UNKNOWN
    assert "its deliveries are not traced" in result.blocker


def test_a_trace_started_late_leaves_the_span_before_it_unknown() -> None:
    late = NOW - timedelta(days=2)
    result = judge(evidence(audits(*DAYS), watches=traced(start=late)))

    assert result.verdict is not Verdict.PASS
    assert f"not traced before {iso(late)}" in str(result.figures["obstacles"])


def test_a_trace_not_confirmed_up_to_now_is_unknown_with_its_reason() -> None:
    problem = "delivery tracing is off in virtual host '/' and user 'svc' could not switch it on"
    result = judge(evidence(audits(*DAYS), watches=traced(until=NOW - timedelta(seconds=30), problem=problem)))

    assert result.verdict is Verdict.UNKNOWN and problem in result.blocker
