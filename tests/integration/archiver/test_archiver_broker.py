"""The archiver against the real broker: records as docs/design.md#archive-record, rotation, crashes, stops, broker loss."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pika
import pytest
from tests.integration.archiver.archiver_support import (
    ROUTING_KEY,
    TcpProxy,
    Topic,
    archive_files,
    assert_whole_lines,
    lines_of,
    make_envelope,
    publish_raw,
    records_of,
    wait_ready,
)
from tests.support.broker import ready

from contract_platform.amqp import Publisher, open_connection
from contract_platform.archiver import Archiver, ArchiverConfig, ArchiveRunReport
from contract_platform.envelope import EnvelopeValidator
from contract_platform.errors import BrokerUnavailable, QueueMissing

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

REPO = Path(__file__).resolve().parents[3]


def config(topic: Topic, root: Path, **options: Any) -> ArchiverConfig:
    return ArchiverConfig(root=root, exchanges=(topic.exchange,), **({"idle_timeout": 0.5} | options))


def ids_of(records: list[dict[str, Any]]) -> list[str]:
    return [r["properties"]["messageId"] for r in records]


def test_drain_writes_one_record_per_message_as_design_section_5(
    topic: Topic, validator: EnvelopeValidator, tmp_path: Path
) -> None:
    envelopes = [make_envelope(n) for n in range(40)]
    connection = open_connection(topic.url)
    try:
        Publisher(connection, validator).publish_many(envelopes)
        before = datetime.now(UTC)
        report = Archiver(connection, config(topic, tmp_path)).run("drain")
        assert connection.is_open  # a connection that was handed over is left open
    finally:
        connection.close()

    files = archive_files(tmp_path, topic.exchange)
    assert files and set(report.files) == set(files)
    records = list(records_of(files))
    assert ids_of(records) == [e["metadata"]["messageId"] for e in envelopes]  # one each, in order
    assert (report.records, report.total, report.stopped_by) == ({topic.exchange: 40}, 40, "idle")
    assert report.bytes == sum(f.stat().st_size for f in files)
    assert ready(topic.url, topic.queue) == 0
    assert_whole_lines(tmp_path, topic.exchange)

    first, envelope = records[0], envelopes[0]
    received = datetime.strptime(first["receivedAt"], "%Y-%m-%dT%H:%M:%S.%f%z")
    assert first["receivedAt"].endswith("Z") and len(first["receivedAt"]) == len("2026-07-01T10:15:32.120Z")
    assert received >= before.replace(microsecond=before.microsecond // 1000 * 1000)
    assert files[0].parent.name == f"date={received.date().isoformat()}"
    assert {k: v for k, v in first.items() if k not in ("receivedAt", "properties")} == {
        "exchange": topic.exchange,
        "routingKey": ROUTING_KEY,
        "redelivered": False,
        "body": json.dumps(envelope, separators=(",", ":"), ensure_ascii=False),
        "bodyBase64": None,
    }
    properties = first["properties"]
    assert {k: properties[k] for k in ("messageId", "correlationId", "type", "contentType", "contentEncoding")} == {
        "messageId": envelope["metadata"]["messageId"],
        "correlationId": envelope["metadata"]["correlationId"],
        "type": "billing.invoice-issued.v1",
        "contentType": "application/json",
        "contentEncoding": "utf-8",
    }
    assert (properties["deliveryMode"], properties["timestamp"]) == (2, 1782900931)
    assert {k: v for k, v in properties["headers"].items() if not k.startswith("x-")} == {
        "schema-version": 1,
        "message-version": "1.0.0",
        "producer": "billing-service",
        "tenant-id": "tnt-northwind",
        "trace-id": "4bf92f3577b34da6a3ce929d0e0e4736",
    }


def test_body_that_is_not_utf8_is_archived_as_base64_with_headers_made_json_safe(topic: Topic, tmp_path: Path) -> None:
    body = b"\x89PNG\r\n\x1a\n\xff\x00"
    headers = {"raw": b"\xfe\xff", "when": datetime(2026, 7, 1, 10, 0, tzinfo=UTC), "nested": {"n": [1, "two"]}}
    connection = pika.BlockingConnection(pika.URLParameters(topic.url))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.basic_publish(
            topic.exchange, "any.key", body, pika.BasicProperties(message_id="bin-1", headers=headers), mandatory=True
        )
    finally:
        connection.close()

    report = Archiver(topic.url, config(topic, tmp_path)).run("drain")

    (record,) = records_of(report.files)
    assert record["body"] is None and base64.b64decode(record["bodyBase64"]) == body
    assert {k: v for k, v in record["properties"]["headers"].items() if not k.startswith("x-")} == {
        "raw": {"$base64": "/v8="},
        "when": "2026-07-01T10:00:00Z",
        "nested": {"n": [1, "two"]},
    }
    assert record["routingKey"] == "any.key"


def test_small_max_file_bytes_rotates_into_several_files_without_splitting_a_record(
    topic: Topic, tmp_path: Path
) -> None:
    ids = publish_raw(topic, 60)

    report = Archiver(topic.url, config(topic, tmp_path, max_file_bytes=4096, batch_size=16)).run("drain")

    files = archive_files(tmp_path, topic.exchange)
    assert len(files) >= 10 and set(report.files) == set(files)
    assert all(f.stat().st_size <= 4096 for f in files)
    assert_whole_lines(tmp_path, topic.exchange)
    assert sorted(ids_of(list(records_of(files)))) == sorted(ids)
    assert ready(topic.url, topic.queue) == 0


def test_a_missing_archive_queue_is_named(rabbitmq_url: str, tmp_path: Path) -> None:
    exchange = f"t-{uuid.uuid4().hex[:8]}.never-provisioned"

    with pytest.raises(QueueMissing, match=f"archive.{exchange} does not exist"):
        Archiver(rabbitmq_url, ArchiverConfig(root=tmp_path, exchanges=(exchange,))).run("drain")
    assert not (tmp_path / exchange).exists()


# --- processes: kill -9, SIGTERM ---------------------------------------------------------------


def start_archiver(topic: Topic, root: Path, *, mode: str, batch: int, prefetch: int, batch_ms: int) -> Any:
    """One archiver in its own process (``ARCHIVER_PROCESS``), its output (logs, then the JSON report) in ``<root>.out``."""
    env = os.environ | {"CONTRACT_RABBITMQ_URL": topic.url}
    command = [sys.executable, "-W", "ignore::RuntimeWarning", "-c", ARCHIVER_PROCESS, topic.exchange, str(root), mode]
    options = [str(batch), str(prefetch), str(batch_ms)]
    with open(root.with_suffix(".out"), "w") as out:
        return subprocess.Popen(command + options, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)


# The archiver's Python API in a child process that can be killed: batch sizes no CLI needs to offer.
ARCHIVER_PROCESS = """
import json, logging, sys
from pathlib import Path
from contract_platform.archiver import Archiver, ArchiverConfig
from contract_platform.settings import rabbitmq_url
exchange, root, mode, batch, prefetch, batch_ms = sys.argv[1:]
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
logging.getLogger("pika").setLevel(logging.CRITICAL)
config = ArchiverConfig(
    root=Path(root), exchanges=(exchange,), batch_size=int(batch), prefetch=int(prefetch),
    batch_ms=int(batch_ms), idle_timeout=0.5,
)
print(json.dumps(Archiver(rabbitmq_url(), config).run(mode).as_dict()), flush=True)
"""


def _stopped(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] == "T"


def freeze_mid_batch(process: Any, directory: Path, *, at_least: int, batch: int, total: int) -> int:
    """Stop (SIGSTOP) the archiver at a moment when its files hold ``at_least`` complete records, a number
    that is not a whole number of batches: some of the current batch is written, none of it acknowledged.
    Returns that number; the process is left stopped."""
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, "the archiver exited before it could be killed"
        assert time.monotonic() < deadline, "the archiver never was in the middle of a batch"
        if not list(directory.glob("date=*/*.jsonl")):
            time.sleep(0.002)
            continue
        os.kill(process.pid, signal.SIGSTOP)
        while not _stopped(process.pid):
            time.sleep(0.0002)
        written = sum(len(lines_of(f)) for f in directory.glob("date=*/*.jsonl"))
        if written >= at_least and written % batch and written < total:
            return written
        os.kill(process.pid, signal.SIGCONT)
        time.sleep(0.003)


def tear_last_line(path: Path) -> str:
    """Cut the last record in half, as a kill in the middle of ``write()`` would; returns its messageId."""
    data = path.read_bytes()
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    torn_id = json.loads(data[start:])["properties"]["messageId"]
    with open(path, "r+b") as file:
        file.truncate(start + (len(data) - start) // 2)
    return torn_id


@pytest.mark.parametrize(("at_least", "torn"), [(1, False), (2600, True)], ids=["early", "late-torn"])
def test_kill_9_in_the_middle_of_a_batch_loses_nothing_after_restart(
    topic: Topic, tmp_path: Path, at_least: int, torn: bool
) -> None:
    total, batch = 5000, 500
    root = tmp_path / "archive"
    published = publish_raw(topic, total)
    process = start_archiver(topic, root, mode="follow", batch=batch, prefetch=2 * batch, batch_ms=60_000)
    try:
        written = freeze_mid_batch(process, root / topic.exchange, at_least=at_least, batch=batch, total=total)
    finally:
        process.kill()  # SIGKILL, also to a stopped process
        process.wait(10)
    acknowledged = written // batch * batch  # only whole batches, each after its fsync
    wait_ready(topic.url, topic.queue, total - acknowledged)  # the rest went back to the queue
    (first_file,) = archive_files(root, topic.exchange)
    first_ids = ids_of(list(records_of([first_file])))
    assert first_ids == published[:written]
    torn_id = tear_last_line(first_file) if torn else None

    report = Archiver(topic.url, config(topic, root, prefetch=1000, batch_size=500, batch_ms=200)).run("drain")

    assert list(report.repaired) == ([first_file] if torn else [])
    assert_whole_lines(root, topic.exchange)  # no partial line anywhere
    assert ready(topic.url, topic.queue) == 0
    everything = ids_of(list(records_of(archive_files(root, topic.exchange))))
    assert set(everything) == set(published)  # every published messageId is archived
    again = list(records_of(report.files))
    assert sorted(ids_of(again)) == sorted(published[acknowledged:])  # exactly what was not acknowledged
    delivered_before = set(published[acknowledged:written])
    assert delivered_before and all(r["redelivered"] for r in again if r["properties"]["messageId"] in delivered_before)
    duplicates = {message_id for message_id, n in Counter(everything).items() if n > 1}
    assert duplicates == delivered_before - {torn_id}  # duplicates, never dropped; the torn one is whole once
    assert report.total == total - acknowledged and report.redelivered >= len(delivered_before)


def test_sigterm_finishes_and_acknowledges_the_current_batch(topic: Topic, tmp_path: Path) -> None:
    root = tmp_path / "archive"
    published = publish_raw(topic, 1234)
    process = start_archiver(topic, root, mode="follow", batch=500, prefetch=500, batch_ms=60_000)
    try:
        wait_ready(topic.url, topic.queue, 0)  # all delivered: 1000 acknowledged, 234 for the open batch
        # Time for pika to hand the open batch to the archiver, which holds it until the batch ends:
        # nothing outside the process shows that moment, and the assertions hold either way.
        time.sleep(0.3)
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0
    finally:
        process.kill()
    output = root.with_suffix(".out").read_text().splitlines()
    report = json.loads([line for line in output if line.startswith("{")][-1])

    assert (report["stoppedBy"], report["unacknowledged"]) == ("signal", 0)
    assert report["total"] > 1000  # the open batch was written and acknowledged although its 60 s were not up
    # Deliveries pika had received but not handed over yet would go back unwritten; nothing written comes back.
    assert ready(topic.url, topic.queue) == 1234 - report["total"]
    records = list(records_of(archive_files(root, topic.exchange)))
    assert ids_of(records) == published[: report["total"]]  # each exactly once, in order
    assert not any(r["redelivered"] for r in records)
    assert_whole_lines(root, topic.exchange)


# --- broker loss -------------------------------------------------------------------------------


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    forwarder = TcpProxy()
    yield forwarder
    forwarder.close()


def run_in_thread(archiver: Archiver, mode: str) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["report"] = archiver.run(mode)
        except Exception as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


def test_follow_reconnects_after_broker_loss_and_rewrites_what_was_not_acknowledged(
    topic: Topic, tmp_path: Path, proxy: TcpProxy
) -> None:
    published = publish_raw(topic, 300)
    archiver = Archiver(proxy.url(), config(topic, tmp_path, prefetch=200, batch_size=200, batch_ms=60_000))
    thread, outcome = run_in_thread(archiver, "follow")
    wait_ready(topic.url, topic.queue, 0)  # 200 acknowledged, 100 delivered for the open batch
    time.sleep(0.3)  # time for pika to hand them over (not visible outside the archiver, as above)

    assert proxy.cut() == 1
    wait_ready(topic.url, topic.queue, 100)  # the open batch went back...
    wait_ready(topic.url, topic.queue, 0)  # ...and came again on the new connection
    time.sleep(0.3)  # and was handed over again
    archiver.stop()
    thread.join(15)

    report: ArchiveRunReport = outcome["report"]
    lost = report.unacknowledged  # written on the first connection, never acknowledged
    assert (report.reconnects, report.stopped_by) == (1, "signal") and 0 < lost <= 100
    records = list(records_of(report.files))
    assert Counter(ids_of(records)) == Counter(published) + Counter(published[200 : 200 + lost])
    again = records[200 + lost :]
    assert sorted(ids_of(again)) == sorted(published[200:]) and all(r["redelivered"] for r in again)
    assert ready(topic.url, topic.queue) == 0


def test_drain_lets_broker_loss_propagate_and_leaves_the_batch_to_be_delivered_again(
    topic: Topic, tmp_path: Path, proxy: TcpProxy
) -> None:
    publish_raw(topic, 300)
    archiver = Archiver(proxy.url(), config(topic, tmp_path, prefetch=200, batch_size=200, batch_ms=60_000))
    thread, outcome = run_in_thread(archiver, "drain")
    wait_ready(topic.url, topic.queue, 0)  # 200 acknowledged, 100 delivered for the open batch

    assert proxy.cut() == 1
    thread.join(15)

    assert isinstance(outcome.get("error"), BrokerUnavailable)
    assert "guest:***@" in str(outcome["error"]) and "retry when the broker is back" in str(outcome["error"])
    wait_ready(topic.url, topic.queue, 100)
