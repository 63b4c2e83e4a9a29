"""How many consumer attach/detach events per second the broker activity recorder stores, and how far behind.

    .venv/bin/python benchmarks/recorder_throughput.py [--events 20000] [--producers 2]
        [--registry URL | --postgres postgresql+psycopg2://postgres@127.0.0.1:5432/postgres]

On the broker of ``$CONTRACT_RABBITMQ_URL`` (default 127.0.0.1:5672, the event exchange plugin on), with a
queue and a recorder queue under a unique ``t-<uuid8>.`` prefix that are deleted afterwards (the recorder's
queue with its companions, ``recorder_queues``):

1. ``contractctl record-activity`` runs as its own process (heartbeat 1 s) into the registry (default: a
   fresh SQLite file; ``--postgres SERVER``: a scratch database on that PostgreSQL server, dropped at the
   end; ``--registry URL``: any store, whose tables it then holds);
2. **live**: ``--producers`` processes attach and detach consumers on one queue as fast as the broker lets
   them (``basic.consume`` then ``basic.cancel``: two events each), ``--events`` in all, while it records;
   the registry is polled until every session is stored with its detachment;
3. **backlog**: the recorder is stopped, the same number of events is generated into its bounded queue
   (the default limit, 50,000, holds them), what the broker spends on them is read from the management
   API, and a new recorder process drains them, continuing the coverage without a gap: its rate does not
   depend on how fast the producers are;
4. **takeover**: a second recorder waits beside the one that drained; the active one is killed (SIGKILL)
   and the time until the standby has confirmed coverage past the kill is measured.

Rates: ``generated`` = events / time the producers took; ``live_stored`` = events / time from the first
event to the last one stored (what the recorder sustains when the broker emits at that rate);
``live_lag`` = seconds between the last event the broker announced and its being stored;
``backlog_stored`` = events / time from the new recorder's start to the last one stored (its start-up
included); ``buffered_bytes_per_event`` = the recorder queue's memory over the events it held;
``gaps`` = gaps recorded in the whole run (0: every restart and the takeover continued).
Target: both stored rates >= 2,000 events/s. Prints one JSON line; exit 0 when the target is met, 1 when not.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pika

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # runs as a script: tests.support makes and drops the scratch database

from tests.support.databases import scratch_database  # noqa: E402

from contract_platform.activity.recorder import recorder_queues  # noqa: E402
from contract_platform.amqp import ManagementClient, open_connection  # noqa: E402
from contract_platform.amqp.connection import close_quietly  # noqa: E402
from contract_platform.retirement.readers import confirmed_until  # noqa: E402
from contract_platform.settings import rabbitmq_url  # noqa: E402
from contract_platform.store import SqlRegistry  # noqa: E402

TARGET = 2000.0


def produce(url: str, queue: str, pairs: int) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    for _ in range(pairs):
        tag = channel.basic_consume(queue, lambda *args: None)
        channel.basic_cancel(tag)
    connection.close()


def stored(registry: SqlRegistry, queue: str) -> tuple[int, datetime | None]:
    """Sessions of ``queue`` stored with their detachment, and the latest detachment."""
    with registry._database.transaction("counting sessions") as tx:  # a benchmark may read the table directly
        row = tx.first(
            "SELECT COUNT(*) AS count, MAX(detached_at) AS detached_at FROM cp_reader_sessions "
            "WHERE queue = ? AND detached_at IS NOT NULL",
            [queue],
        )
    assert row is not None
    latest = row["detached_at"]
    return int(row["count"]), latest


def generate(url: str, queue: str, pairs: int, producers: int) -> None:
    workers = [multiprocessing.Process(target=produce, args=(url, queue, pairs)) for _ in range(producers)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def wait_for_coverage(registry: SqlRegistry, recorder: subprocess.Popen[bytes], work: Path) -> None:
    deadline = time.monotonic() + 60
    while not registry.coverage(datetime.now(UTC) - timedelta(minutes=1))[0]:
        if recorder.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the recorder did not start: {(work / 'recorder.log').read_text()[-800:]}")
        time.sleep(0.2)


def wait_stored(
    registry: SqlRegistry, queue: str, sessions: int, since: float
) -> tuple[float, datetime | None, datetime]:
    """Seconds from ``since`` until ``sessions`` sessions of ``queue`` are stored, the latest detachment, now."""
    last, progressed = -1, time.monotonic()
    while True:
        count, latest = stored(registry, queue)
        if count >= sessions:
            return time.monotonic() - since, latest, datetime.now(UTC)
        if count != last:
            last, progressed = count, time.monotonic()
        elif time.monotonic() - progressed > 120:
            raise SystemExit(f"only {count} of {sessions} sessions stored, none for 120 s")
        time.sleep(0.05)


@contextlib.contextmanager
def registry_url(registry: str | None, postgres: str | None, work: Path) -> Iterator[str]:
    if postgres is not None:
        with scratch_database(postgres, "recorder_bench") as url:
            yield url
    else:
        yield registry or f"sqlite:///{work / 'registry.db'}"


def buffered_bytes(url: str, queue: str) -> float | None:
    """The recorder queue's memory per message it holds, once the management API's statistics show them."""
    client = ManagementClient.from_amqp_url(url)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = client.queue(queue) or {}
        messages, memory = found.get("messages"), found.get("memory")
        if isinstance(messages, int) and messages > 0 and isinstance(memory, int):
            return memory / messages
        time.sleep(1)
    return None


def confirmed_after(registry: SqlRegistry, moment: datetime, timeout: float) -> float:
    """Seconds until the store's coverage is confirmed past ``moment``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        reached = confirmed_until(registry.coverage(moment - timedelta(hours=1))[0])
        if reached is not None and reached > moment:
            return time.monotonic() - started
        time.sleep(0.05)
    raise SystemExit(f"coverage not confirmed past {moment.isoformat()} within {timeout:.0f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--registry", default=None, help="SQLAlchemy URL (default: a fresh SQLite file)")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server: the registry in a scratch database")
    args = parser.parse_args(argv)
    url = rabbitmq_url()
    prefix = f"t-{uuid.uuid4().hex[:8]}."
    queue, recorder_queue = f"{prefix}watched", f"{prefix}activity"
    work = Path(tempfile.mkdtemp(prefix="recorder-bench-"))
    with registry_url(args.registry, args.postgres, work) as store_url:
        return measure(args, url, queue, recorder_queue, work, store_url)


def measure(args: argparse.Namespace, url: str, queue: str, recorder_queue: str, work: Path, store_url: str) -> int:
    connection = open_connection(url)
    connection.channel().queue_declare(queue)
    close_quietly(connection)
    env = os.environ | {"CONTRACT_REGISTRY_URL": store_url}
    contractctl = str(Path(sys.executable).with_name("contractctl"))
    command = [contractctl, "record-activity", "--queue", recorder_queue, "--heartbeat", "1s"]

    def recorder() -> subprocess.Popen[bytes]:
        log = (work / "recorder.log").open("ab")
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)

    load_before = os.getloadavg()[0]
    running = [recorder()]
    registry = SqlRegistry.open(store_url)
    try:
        wait_for_coverage(registry, running[0], work)
        pairs = args.events // 2 // args.producers
        events = 2 * pairs * args.producers
        started_wall = datetime.now(UTC)
        started = time.monotonic()
        generate(url, queue, pairs, args.producers)
        generated_in = time.monotonic() - started
        live_in, latest, finished_wall = wait_stored(registry, queue, events // 2, started)
        live_lag = (finished_wall - latest).total_seconds() if latest else None

        running[0].send_signal(signal.SIGTERM)
        running[0].wait(timeout=30)
        generate(url, queue, pairs, args.producers)  # into the stopped recorder's queue
        per_event = buffered_bytes(url, recorder_queue)
        restarted = time.monotonic()
        running.append(recorder())
        backlog_in, _, _ = wait_stored(registry, queue, events, restarted)

        running.append(recorder())  # a standby beside it
        time.sleep(3)  # it attaches and waits: what is measured is the takeover, not its start
        running[1].send_signal(signal.SIGKILL)
        running[1].wait(timeout=30)
        killed = datetime.now(UTC)
        takeover = confirmed_after(registry, killed, 60)
        gaps = registry.coverage(started_wall - timedelta(minutes=1))[1]
        figures = {
            "when": started_wall.isoformat(timespec="seconds"),
            "registry": registry.url.split(":")[0],
            "events": events,
            "producers": args.producers,
            "generated_per_s": round(events / generated_in),
            "live_stored_per_s": round(events / live_in),
            "live_lag_s": round(live_lag, 2) if live_lag is not None else None,
            "backlog_stored_per_s": round(events / backlog_in),
            "buffered_bytes_per_event": round(per_event) if per_event is not None else None,
            "takeover_s": round(takeover, 2),
            "gaps": len(gaps),
            "load_before": round(load_before, 2),
            "target_per_s": TARGET,
        }
        print(json.dumps(figures))
        return 0 if min(events / live_in, events / backlog_in) >= TARGET else 1
    finally:
        for process in running:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=30)
        registry.close()
        connection = open_connection(url)  # a new one: an idle connection does not outlive a long run
        try:
            channel = connection.channel()
            for name in (queue, *recorder_queues(recorder_queue)):
                channel.queue_delete(name)
        finally:
            close_quietly(connection)


if __name__ == "__main__":
    raise SystemExit(main())
