"""Reader evidence through routine operations, on the real broker: restarts, a standby, the bounded buffer.

Each test runs ``contractctl record-activity`` as its own process (as a deployment does: killable, several
at once) or in a thread, records into the test's registry and audits v1 three times a few seconds apart
(3 audits spanning 4 s, the main job's shortened ``observationSpan``). What decides the check is what the
recorder proves when it starts: the queue is the same one, the broker did not restart, nothing was
dropped (docs/retirement-audit.md#restarts-standby-and-the-buffer).
"""

from __future__ import annotations

import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pika
import pytest
from tests.integration.retirement.reader_evidence_support import Audits, Recorders, named_connection, readers
from tests.support import broker
from tests.support.broker import url_of
from tests.support.private_node import NodeUnavailable, PrivateNode
from tests.support.retirement import running_recorder, seed_coverage
from tests.support.waiting import wait_until

from contract_platform.activity.continuity import MARGIN
from contract_platform.activity.recorder import QUEUE_EXPIRES_MS, recorder_queues
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.cli.main import main
from contract_platform.evidence import Verdict
from contract_platform.evidence.records import QueueCounters
from contract_platform.retirement import VersionQueue
from contract_platform.retirement.audit import judge_readers
from contract_platform.retirement.model import iso
from contract_platform.store import SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def store(recorders: Recorders) -> Any:
    """The registry the recorder processes write (the test reads it as the audit does)."""
    with SqlRegistry.open(recorders.registry_url) as opened:
        yield opened


def attach_and_leave(queue: str, times: int) -> None:
    """A client that attaches to ``queue`` and leaves again ``times`` times: two broker events each."""
    connection = named_connection("churn")
    channel = connection.channel()
    channel.queue_declare(queue, durable=False, auto_delete=False)
    for _ in range(times):
        channel.basic_cancel(channel.basic_consume(queue, lambda *args: None))
    connection.close()


def test_a_recorder_restarted_with_sigterm_between_audits_continues_and_the_check_passes(
    connection: Any, contracts: Catalog, store: SqlRegistry, prefix: str, version: Contract, recorders: Recorders
) -> None:
    audits = Audits(connection, contracts, store, prefix, version)
    first = recorders.start()
    recorders.wait_for_coverage(store, "the recorder's coverage")
    assert readers(audits.run())[0] is not Verdict.PASS  # nothing is known before the first audit
    recorders.stop(first, signal.SIGTERM)  # a deploy
    stopped = store.last_confirmation()
    attach_and_leave(f"{prefix}scratch", 5)  # the broker goes on while no recorder reads: its events wait
    recorders.start()
    recorders.wait_for_coverage(store, "the restarted recorder")
    audits.run()
    third = audits.run()
    assert readers(third)[0] is Verdict.PASS, readers(third)[1]
    segments, gaps = store.coverage(datetime.now(UTC) - timedelta(hours=1))
    assert gaps == [] and len(segments) == 2
    assert stopped is not None and segments[1].covered_from == stopped.covered_until  # continued, no gap
    assert segments[0].end_reason == "the recorder was stopped"


def test_a_reader_attached_while_no_recorder_ran_fails_the_check_once_a_recorder_starts(
    connection: Any, contracts: Catalog, store: SqlRegistry, prefix: str, version: Contract, recorders: Recorders
) -> None:
    audits = Audits(connection, contracts, store, prefix, version)
    queue = version.consumers[0].queue
    first = recorders.start()
    recorders.wait_for_coverage(store, "the recorder's coverage")
    audits.run()
    recorders.stop(first)
    reader = named_connection("offline-window-reader")  # reads v1 while nobody records
    attached = datetime.now(UTC)
    reader.channel().basic_consume(queue, lambda *args: None)
    reader.sleep(1)
    reader.close()
    recorders.start()
    recorders.wait_for_coverage(store, "the restarted recorder")
    audits.run()
    verdict, blocker = readers(audits.run())
    assert verdict is Verdict.FAIL and "offline-window-reader from 127.0.0.1 as guest" in blocker and queue in blocker
    (session,) = [
        s
        for s in store.reader_sessions([("/", queue)], since=attached - timedelta(minutes=1), until=datetime.now(UTC))
        if s.connection_name == "offline-window-reader"
    ]
    # stored with the broker's own moments, though no recorder ran then
    assert session.attached_at is not None and abs(session.attached_at - attached) < timedelta(seconds=2)
    assert session.detached_at is not None and session.detached_at > session.attached_at


def test_the_standby_takes_over_when_the_active_recorder_is_killed_and_the_check_passes(
    connection: Any, contracts: Catalog, store: SqlRegistry, prefix: str, version: Contract, recorders: Recorders
) -> None:
    audits = Audits(connection, contracts, store, prefix, version)
    active = recorders.start()
    recorders.wait_for_coverage(store, "the first recorder's coverage")
    standby = recorders.start()

    def waiting() -> dict[str, Any] | None:
        status = recorders.status()
        consumers = (status["broker"] or {}).get("consumers", [])
        return status if len(consumers) == 2 and [c["active"] for c in consumers].count(False) == 1 else None

    status = wait_until(waiting, 60, 0.5, what="one recorder active and one waiting", diagnose=recorders.log)
    assert status["active"]["recorder"].endswith(f":{active.pid}") and status["fresh"] is True
    assert status["broker"]["singleActiveConsumer"] is True
    audits.run()
    recorders.stop(active, signal.SIGKILL)
    killed = datetime.now(UTC)

    def taken_over() -> dict[str, Any] | None:
        status = recorders.status()
        mine = (status["active"] or {}).get("recorder", "").endswith(f":{standby.pid}")
        # the management API counts a queue's messages only after its statistics interval (about 5 s)
        counted = (status["broker"] or {}).get("ready") is not None
        return status if mine and status["fresh"] and counted else None

    status = wait_until(taken_over, 60, 0.5, what="the standby recording", diagnose=recorders.log)
    assert status["eventsStoredLastDay"] > 0 and status["gapsToday"] == []
    assert isinstance(status["lagSeconds"], float) and status["broker"]["ready"] is not None
    assert status["broker"]["limits"] == {"messages": 50_000, "bytes": 16 * 1024 * 1024}
    audits.run()
    third = audits.run()
    assert readers(third)[0] is Verdict.PASS, readers(third)[1]
    segments, gaps = store.coverage(killed - timedelta(minutes=5))
    assert gaps == [] and segments[-1].covered_from == segments[-2].covered_until
    assert "killed" in (segments[-2].end_reason or "")
    assert datetime.fromisoformat(status["active"]["since"]) - killed < timedelta(seconds=10)  # within a heartbeat


def test_status_lists_the_recorders_queue_when_the_broker_url_names_a_vhost_of_its_own(
    store: SqlRegistry, recorders: Recorders
) -> None:
    """The platform on a vhost of its own: the recorder declares its queue where the event exchange is (``/``),
    and ``--status`` asks there, not on the vhost the broker URL names."""
    with broker.private_vhost() as vhost:
        recorders.environment["CONTRACT_RABBITMQ_URL"] = url_of(vhost)
        running = recorders.start()
        recorders.wait_for_coverage(store, "the recorder's coverage")

        def listed() -> dict[str, Any] | None:
            status = recorders.status()
            return status if (status["broker"] or {}).get("consumers") else None

        status = wait_until(listed, 30, 0.5, what="the recorder's queue listed by --status", diagnose=recorders.log)
        assert broker.queue_listed("/", recorders.queue) and not broker.queue_listed(vhost, recorders.queue)
        assert [c["active"] for c in status["broker"]["consumers"]] == [True]
        assert status["broker"]["singleActiveConsumer"] is True
        assert status["active"]["recorder"].endswith(f":{running.pid}") and status["fresh"] is True
        recorders.stop(running)


def test_events_dropped_at_the_limit_while_no_recorder_ran_are_a_gap_naming_the_interval(
    connection: Any, contracts: Catalog, store: SqlRegistry, prefix: str, version: Contract, recorders: Recorders
) -> None:
    recorders.environment["CONTRACT_RECORDER_MAX_EVENTS"] = "20"
    audits = Audits(connection, contracts, store, prefix, version)
    first = recorders.start()
    recorders.wait_for_coverage(store, "the recorder's coverage")
    audits.run()
    recorders.stop(first)
    confirmed = store.last_confirmation()
    attach_and_leave(f"{prefix}scratch", 60)  # 120 events, and the queue keeps 20
    churned = datetime.now(UTC)
    queue, dropped_queue, _ = recorder_queues(recorders.queue)
    assert broker.ready(url_of("/"), queue) <= 20
    broker.wait_for_depth(url_of("/"), dropped_queue, 1)  # the latest dropped, no more
    recorders.start()
    recorders.wait_for_coverage(store, "the restarted recorder")
    audits.run()
    verdict, blocker = readers(audits.run())
    assert verdict is Verdict.UNKNOWN, blocker
    assert f"{queue} reached its limit (20 messages or 16,777,216 bytes) while no recorder read it" in blocker
    segments, (gap,) = store.coverage(churned - timedelta(minutes=5))
    assert confirmed is not None and gap.start == confirmed.covered_until  # the last confirmed moment ...
    # ... to the latest event dropped: the churn's end, or a later event of the shared broker's other clients
    assert churned - timedelta(seconds=1) < gap.end - MARGIN < datetime.now(UTC)
    assert segments[-1].covered_from == gap.end  # what the queue kept after it is covered
    assert iso(gap.start) in blocker
    assert broker.ready(url_of("/"), dropped_queue) == 0  # accounted for


def test_an_older_recorders_queue_is_replaced_and_that_is_a_gap(
    connection: Any, store: SqlRegistry, recorders: Recorders, management: Any
) -> None:
    seed_coverage(store, datetime.now(UTC) - timedelta(hours=1), datetime.now(UTC) - timedelta(minutes=1))
    connection.channel().queue_declare(recorders.queue, durable=True, arguments={"x-expires": QUEUE_EXPIRES_MS})
    recorders.start()
    recorders.wait_for_coverage(store, "the recorder on the replaced queue")
    (gap,) = store.coverage(datetime.now(UTC) - timedelta(hours=2))[1]
    assert f"{recorders.queue} had other arguments (x-expires=604800000) and was replaced" in gap.reason
    arguments = management.queue(recorders.queue)["arguments"]
    assert arguments["x-max-length"] == 50_000 and arguments["x-single-active-consumer"] is True


def test_an_older_recorder_still_reading_its_queue_is_named_and_nothing_is_replaced(
    connection: Any, recorders: Recorders, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    connection.channel().queue_declare(recorders.queue, durable=True, arguments={"x-expires": QUEUE_EXPIRES_MS})
    older = named_connection("older-recorder")
    older.channel().basic_consume(recorders.queue, lambda *args: None, exclusive=True)
    untouched = tmp_path / "untouched.db"  # a store the refused start must not open: an upgrade would be a change
    try:
        code = main(["record-activity", "--registry", f"sqlite:///{untouched}", "--queue", recorders.queue])
    finally:
        older.close()
    assert code == 3
    error = capsys.readouterr().err
    assert recorders.queue in error and "another recorder reads it: stop that recorder" in error
    assert "(x-expires=604800000)" in error  # the old queue's arguments, named
    assert broker.depth(url_of("/"), recorders.queue)[1] == 0  # still there, as it was
    assert not untouched.exists()  # the store was not opened, so not created or upgraded
    assert not any(broker.queue_listed("/", name) for name in recorder_queues(recorders.queue)[1:])  # none declared


def test_a_broker_restart_in_the_span_is_unknown_naming_the_restart(tmp_path: Path, version: Contract) -> None:
    """A private node (the shared one is never restarted): its application restarted, then the whole node."""
    node = PrivateNode(tmp_path / "node")
    try:
        node.start(plugins=("rabbitmq_event_exchange",), management=True)
    except NodeUnavailable as exc:
        pytest.skip(str(exc))
    queue = VersionQueue("/", "some.queue", "some.queue")
    recorder_queue = "contract-platform.broker-activity"
    try:
        with (
            SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as registry,
            running_recorder(registry, node.url, recorder_queue, management_url=node.management_url),
        ):
            before = datetime.now(UTC)
            wait_until(lambda: registry.last_confirmation(), 30, 0.2, what="the recorder's first confirmation")
            registry.record_queue_counters(zero_counters(version, before - timedelta(seconds=10)))
            node.restart_app()  # rabbitmqctl stop_app / start_app: the node's uptime goes on
            (gap,) = wait_until(lambda: registry.coverage(before)[1], 90, 0.2, what="the gap of the app restart")
            assert "the broker restarted" in gap.reason and f"{recorder_queue}.alive is gone" in gap.reason
            now = wait_until(lambda: covered_after(registry, gap.end), 30, 0.2, what="coverage after the restart")
            registry.record_queue_counters(zero_counters(version, now))
            result = judge_readers(version, registry, [queue], now=now)
            assert result.verdict is Verdict.UNKNOWN
            assert any(gap.reason in obstacle["text"] for obstacle in result.figures["obstacles"])

            node.stop()  # the whole node, then the same node again: its data is kept, its uptime starts over
            node.start(plugins=("rabbitmq_event_exchange",), management=True)
            second = wait_until(lambda: registry.coverage(before)[1][1:], 120, 0.2, what="the gap of the node restart")
            assert f"broker node {node.name} restarted at" in second[0].reason
    finally:
        node.stop()


def covered_after(registry: SqlRegistry, moment: datetime) -> datetime | None:
    found = registry.last_confirmation()
    return found.covered_until if found is not None and found.covered_until and found.covered_until > moment else None


def zero_counters(version: Contract, at: datetime) -> list[QueueCounters]:
    return [QueueCounters(version.message_type, "/", "some.queue", at, True, 0, 0, 0, 0)]


def test_a_message_anyone_publishes_into_the_recorders_queue_neither_confirms_nor_is_stored(
    connection: Any, store: SqlRegistry, recorders: Recorders
) -> None:
    recorders.start()
    recorders.wait_for_coverage(store, "the recorder's coverage")
    channel = connection.channel()
    forged = {"x-contract-platform-marker": f"guessed:guessed:{(datetime.now(UTC) + timedelta(days=1)).isoformat()}"}
    channel.basic_publish("", recorders.queue, b"", pika.BasicProperties(headers=forged))
    channel.basic_publish("", recorders.queue, b"", pika.BasicProperties(headers={"queue": "q", "vhost": "/"}))
    recorders.wait_for_coverage(store, "coverage after the foreign messages")
    confirmed = store.last_confirmation()
    assert confirmed is not None and confirmed.covered_until is not None
    assert confirmed.covered_until < datetime.now(UTC)  # the forged marker's moment a day ahead was not taken
    assert (
        store.reader_sessions([("/", "q")], since=datetime.now(UTC) - timedelta(hours=1), until=datetime.now(UTC)) == []
    )


def test_events_dropped_while_the_recorder_fell_behind_are_a_gap_inside_its_coverage(
    store: SqlRegistry, prefix: str, recorders: Recorders
) -> None:
    recorders.environment["CONTRACT_RECORDER_MAX_EVENTS"] = "20"
    process = recorders.start()
    recorders.wait_for_coverage(store, "the recorder's coverage")
    process.send_signal(signal.SIGSTOP)  # it reads nothing: the broker hands it 2,000 (its prefetch), keeps 20 more
    stalled = datetime.now(UTC)
    try:
        attach_and_leave(f"{prefix}scratch", 1100)  # 2,200 events
    finally:
        process.send_signal(signal.SIGCONT)
    gaps = wait_until(lambda: store.coverage(stalled)[1], 60, 0.2, what="the dropped interval", diagnose=recorders.log)
    for gap in gaps:  # one, or more while it catches up (the shared broker's other clients make events too)
        assert "reached its limit (20 messages" in gap.reason and "while the recorder fell behind" in gap.reason
    assert stalled - timedelta(seconds=2) < gaps[0].start < gaps[0].end
    recorders.wait_for_coverage(store, "coverage after the stall")
    (segment,) = store.coverage(stalled)[0]  # one segment all along: the gaps lie inside its coverage
    assert segment.covered_from is not None and segment.covered_until is not None
    assert segment.covered_from <= gaps[0].start and gaps[-1].end < segment.covered_until
