"""What RabbitMQ's firehose tracer costs a busy broker, and how fast a recorder reads what it traces.

    .venv/bin/python benchmarks/firehose_cost.py [--seconds 20] [--rounds 3] [--rate 10000] [--json]

With tracing on, the broker builds a trace message for every publish (``publish.<exchange>``) and every
delivery (``deliver.<queue>``) in the virtual host, carrying its body, and drops those no binding of
``amq.rabbitmq.trace`` matches. So the cost is paid for all the traffic of a traced virtual host, not
only for the queues watched. This measures it on the local broker (``127.0.0.1:5672``, management on
15672, guest/guest), in a virtual host of its own (``tests.support.broker.private_vhost``, deleted at the
end, also on Ctrl-C or SIGTERM), holding:

- **unrelated traffic**: ``--publishers`` processes publish ``--size``-byte transient messages to a topic
  exchange, paced to ``--rate`` msg/s in all, **with publisher confirms**, at most ``--window`` unconfirmed
  per publisher (pika ``SelectConnection``; the broker confirms in batches, ``multiple``); a publisher more
  than a second behind drops the debt, never bursts;
  ``--consumers`` processes drain the one queue they land in (prefetch 1,000, manual acknowledgements,
  one ``basic.ack(multiple)`` per 100 messages; ``--auto-ack`` for automatic ones). The queue holds at
  most 100,000 messages (drop-head), so a backlog stays bounded;
- **a watched queue** (a version under retirement): ``--trickle`` msg/s published and consumed (one ack
  each) by one process;
- **the trace queue** as the platform would declare it: durable, x-max-length 10,000, x-max-length-bytes
  16 MiB, x-overflow drop-head, bound to ``amq.rabbitmq.trace`` with ``deliver.<watched queue>``, read all
  along by a **reader** process that does what the recorder must: a ``BlockingConnection`` consumer
  (prefetch 2,000, one ack per 500) that reads each trace's routing key and headers (queue, connection,
  user) into a tally and keeps no body.

Tracing is switched as the platform would: ``PUT /api/vhosts/<vhost>`` with ``tracing`` and the virtual
host's current description and tags (which the PUT otherwise resets; checked after every switch).

Each round measures ``--seconds`` per mode, after ``--settle`` seconds, the order reversed every other
round (ABC CBA ...) so drift cancels: ``off`` (tracing off), ``watched`` (tracing on, the trace queue bound
to ``deliver.<watched queue>`` only) and ``everything`` (tracing on, also bound to ``deliver.#``: why only
named queues are bound; ``--no-everything`` leaves it out). Each switch purges the unrelated queue, so no
window drains a backlog the previous mode left. Per window: msg/s confirmed, routed (what the queue took:
delivered plus its growth) and delivered, the backlog at the end; the broker's CPU (the ``beam.smp`` process of the
management API's ``os_pid``: utime+stime from ``/proc/<pid>/stat``) in core-seconds per second and per
1,000 messages (the mean of routed and delivered: a growing backlog was routed, not yet delivered); the
traces offered to
the trace queue (the watched queue's deliveries; with ``deliver.#`` every delivery), taken in (the reader's
count plus the queue's growth; drop-head losses are not counted by the broker) and the queue's depth at
the end; the CPU of the traffic processes, of the reader, and of the whole machine (``/proc/stat``).
Before the traffic starts, ``--idle`` seconds measure what the broker spends on other users' work.

**Reader ceiling**: two queues bounded at ``--reader-messages`` are bound to ``deliver.<unrelated queue>``
until full, then unbound; the header-only reader drains the first while the traffic runs (busy broker)
and, once the traffic is stopped, the second (quiet): messages/s and the reader's CPU per message.

Prints markdown tables (``--json``: one JSON line instead); progress goes to stderr. Exits 0 (130 when interrupted).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import signal
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pika

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: tests.support builds the private virtual host

from benchmarks.confirming import ConfirmingPublisher  # noqa: E402
from tests.support.broker import API, AUTH, private_vhost, url_of  # noqa: E402

from contract_platform.amqp import open_connection  # noqa: E402
from contract_platform.amqp.connection import close_quietly  # noqa: E402
from contract_platform.signals import stop_on_signals  # noqa: E402

EXCHANGE, TRACE_EXCHANGE = "bench.events", "amq.rabbitmq.trace"
UNRELATED, WATCHED, TRACE = "unrelated.v1", "retiring.v1", "firehose.retiring"
TRACE_ARGUMENTS = {"x-max-length": 10_000, "x-max-length-bytes": 16 * 1024 * 1024, "x-overflow": "drop-head"}
UNRELATED_LIMIT = 100_000
DESCRIPTION, TAGS = "firehose cost benchmark", ["benchmark", "firehose"]
MODES = ("off", "watched", "everything")
TICKS = os.sysconf("SC_CLK_TCK")
FORK = multiprocessing.get_context("fork")


# -- the processes -----------------------------------------------------------------------------------------


def _quiet() -> None:
    """A child leaves Ctrl-C to the parent, which stops it and deletes the virtual host."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _child(url: str, name: str) -> tuple[pika.BlockingConnection, Any]:
    _quiet()
    connection = open_connection(url, name=name)
    return connection, connection.channel()


class Publisher(ConfirmingPublisher):
    """pika's ``SelectConnection`` in confirm mode, paced to ``rate``, at most ``window`` publishes unconfirmed.

    Counts what the broker confirmed: without confirms, what a publisher wrote can wait in the sockets'
    buffers (tcp_rmem reaches 32 MB here) and be routed in a later window, under another mode. A publisher
    more than a second behind forgets the debt rather than bursting.
    """

    def __init__(self, url: str, rate: float, size: int, window: int, confirmed: Any, stop: Any) -> None:
        super().__init__(url, "bench-publisher")
        self.rate, self.window, self.confirmed, self.stop = rate, window, confirmed, stop
        self.body, self.properties = os.urandom(size), pika.BasicProperties(content_type="application/octet-stream")
        self.scheduled = 0
        self.started = 0.0

    def start(self) -> None:
        self.started = time.monotonic()
        self._tick()

    def _tick(self) -> None:
        if self.stop.is_set():
            self.connection.close()
            return
        due = int((time.monotonic() - self.started) * self.rate)
        self.scheduled = max(self.scheduled, due - int(self.rate))
        while self.scheduled < due and len(self.unconfirmed) < self.window:
            self.channel.basic_publish(EXCHANGE, UNRELATED, self.body, self.properties)
            self.scheduled += 1
            self.sent += 1
            self.unconfirmed.add(self.sent)
        self.connection.ioloop.call_later(0.005, self._tick)

    def on_confirms(self, count: int) -> None:
        self.confirmed.value += count


def publish(url: str, rate: float, size: int, window: int, confirmed: Any, stop: Any) -> None:
    _quiet()
    Publisher(url, rate, size, window, confirmed, stop).connection.ioloop.start()


def consume(url: str, queue: str, reader: bool, auto_ack: bool, taken: Any, stop: Any) -> None:
    """Count the deliveries of ``queue``; a ``reader`` also reads each trace's headers, as the recorder must."""
    connection, channel = _child(url, "bench-reader" if reader else "bench-consumer")
    prefetch, ack_every = (2000, 500) if reader else (1000, 100)
    channel.basic_qos(prefetch_count=prefetch)
    seen: Counter[tuple[str, str, str]] = Counter()

    def on_message(ch: Any, method: Any, properties: Any, body: bytes) -> None:
        if reader:
            read_trace(method, properties, seen)
        taken.value += 1
        if not auto_ack and method.delivery_tag % ack_every == 0:
            ch.basic_ack(method.delivery_tag, multiple=True)

    channel.basic_consume(queue, on_message, auto_ack=auto_ack)
    while not stop.is_set():
        connection.process_data_events(time_limit=0.1)
    close_quietly(connection)


def trickle(url: str, rate: float, size: int, taken: Any, stop: Any) -> None:
    connection, channel = _child(url, "bench-watched")
    body = os.urandom(size)

    def on_message(ch: Any, method: Any, properties: Any, body: bytes) -> None:
        ch.basic_ack(method.delivery_tag)
        taken.value += 1

    channel.basic_consume(WATCHED, on_message)
    next_at = time.monotonic()
    while not stop.is_set():
        channel.basic_publish(EXCHANGE, WATCHED, body)
        next_at += 1 / rate
        connection.sleep(max(0.0, next_at - time.monotonic()))  # its consumer's deliveries meanwhile
    close_quietly(connection)


def read_trace(method: Any, properties: Any, seen: Counter[tuple[str, str, str]]) -> None:
    """What the recorder needs from one trace: which queue, which connection, which user (no body kept)."""
    headers = properties.headers or {}
    queue = method.routing_key.partition(".")[2]
    seen[(queue, str(headers.get("connection")), str(headers.get("user")))] += 1


# -- the broker --------------------------------------------------------------------------------------------


def api(method: str, path: str, body: Any = None) -> Any:
    response = httpx.request(method, f"{API}/{path}", auth=AUTH, json=body, timeout=30)
    response.raise_for_status()
    return response.json() if response.content else None


def set_tracing(vhost: str, on: bool) -> None:
    """Tracing on or off, keeping the virtual host's description and tags (a PUT without them resets them)."""
    path = f"vhosts/{quote(vhost, safe='')}"
    current = api("GET", path)
    api("PUT", path, {"tracing": on, "description": current["description"], "tags": current["tags"]})
    after = api("GET", path)
    if (after["tracing"], after["description"], after["tags"]) != (on, current["description"], current["tags"]):
        raise SystemExit(f"switching tracing on {vhost} changed it: {after}")


def broker_pid() -> int:
    pid = int(api("GET", "nodes")[0]["os_pid"])
    comm = Path(f"/proc/{pid}/comm")
    if not comm.exists() or comm.read_text().strip() != "beam.smp":
        raise SystemExit(f"the broker's process {pid} is not a local beam.smp: run this on the broker's machine")
    return pid


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14 and 15 of stat)


def machine_busy() -> float:
    """Busy core-seconds of the whole machine so far (``/proc/stat``: all but idle and iowait)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / TICKS


def depth(channel: Any, queue: str) -> int:
    return int(channel.queue_declare(queue, passive=True).method.message_count)


# -- the run -----------------------------------------------------------------------------------------------


class Traffic:
    """The processes and their counters; ``snapshot`` reads everything a window compares."""

    def __init__(self, url: str, args: argparse.Namespace, pid: int) -> None:
        self.stop, self.pid = FORK.Event(), pid
        self.procs: dict[str, Any] = {}
        self.counts: dict[str, Any] = {}  # one counter per process: a shared one would lose concurrent updates
        specs: list[tuple[str, Callable[..., None], tuple[Any, ...]]] = [
            (f"confirmed{n}", publish, (url, args.rate / args.publishers, args.size, args.window))
            for n in range(args.publishers)
        ]
        specs += [(f"delivered{n}", consume, (url, UNRELATED, False, args.auto_ack)) for n in range(args.consumers)]
        specs += [("watched", trickle, (url, args.trickle, args.size)), ("traced", consume, (url, TRACE, True, False))]
        for name, target, arguments in specs:
            self.counts[name] = FORK.RawValue("q", 0)
            self.procs[name] = FORK.Process(target=target, args=(*arguments, self.counts[name], self.stop), daemon=True)
            self.procs[name].start()

    def count(self, kind: str) -> int:
        return sum(value.value for name, value in self.counts.items() if name.rstrip("0123456789") == kind)

    def snapshot(self, channel: Any) -> dict[str, float]:
        return {
            "t": time.monotonic(),
            "broker": cpu_seconds(self.pid),
            "machine": machine_busy(),
            "clients": sum(cpu_seconds(p.pid) for n, p in self.procs.items() if n != "traced"),
            "reader": cpu_seconds(self.procs["traced"].pid),
            **{kind: self.count(kind) for kind in ("confirmed", "delivered", "watched", "traced")},
            "depth": depth(channel, TRACE),
            "backlog": depth(channel, UNRELATED),
        }

    def end(self) -> None:
        self.stop.set()
        for process in self.procs.values():
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
                process.join(timeout=5)


def window(traffic: Traffic, channel: Any, mode: str, seconds: float) -> dict[str, Any]:
    before = traffic.snapshot(channel)
    time.sleep(seconds)
    after = traffic.snapshot(channel)
    d = {key: after[key] - before[key] for key in before}
    elapsed, routed = d["t"], d["delivered"] + d["backlog"]  # what the queue took: delivered, or still there
    moved = (routed + d["delivered"]) / 2  # a backlog growing: routed, not yet delivered
    offered = d["watched"] + (d["delivered"] if mode == "everything" else 0)
    return {
        "mode": mode,
        "confirmed_per_s": round(d["confirmed"] / elapsed),
        "routed_per_s": round(routed / elapsed),
        "delivered_per_s": round(d["delivered"] / elapsed),
        "backlog_end": int(after["backlog"]),
        "broker_cores": round(d["broker"] / elapsed, 3),
        "broker_core_s_per_1k": round(d["broker"] / max(moved, 1) * 1000, 4),
        "traced_offered_per_s": round(offered / elapsed, 1) if mode != "off" else 0,
        "traced_intake_per_s": round((d["traced"] + d["depth"]) / elapsed, 1),
        "trace_depth_end": int(after["depth"]),
        "clients_cores": round(d["clients"] / elapsed, 3),
        "reader_cores": round(d["reader"] / elapsed, 3),
        "machine_busy_cores": round(d["machine"] / elapsed, 2),
    }


def switch(vhost: str, channel: Any, mode: str, previous: str | None) -> None:
    """Into ``mode``, leaving nothing of the previous one: its traces, and the backlog it let grow."""
    if previous == "everything":
        channel.queue_unbind(TRACE, TRACE_EXCHANGE, "deliver.#")
        channel.queue_purge(TRACE)
    set_tracing(vhost, mode != "off")
    channel.queue_purge(UNRELATED)
    if mode == "everything":
        channel.queue_bind(TRACE, TRACE_EXCHANGE, "deliver.#")


def drain(url: str, queue: str, expected: int, timeout: float = 120.0) -> dict[str, Any]:
    """The header-only reader on ``queue`` until ``expected`` traces are read: its rate and CPU per trace."""
    connection = open_connection(url, name="bench-reader-ceiling")
    channel = connection.channel()
    channel.basic_qos(prefetch_count=2000)
    seen: Counter[tuple[str, str, str]] = Counter()
    got = [0]

    def on_message(ch: Any, method: Any, properties: Any, body: bytes) -> None:
        read_trace(method, properties, seen)
        got[0] += 1
        if got[0] % 500 == 0 or got[0] == expected:
            ch.basic_ack(method.delivery_tag, multiple=True)

    cpu, started = time.process_time(), time.perf_counter()
    channel.basic_consume(queue, on_message)
    while got[0] < expected and time.perf_counter() - started < timeout:
        connection.process_data_events(time_limit=0.05)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    close_quietly(connection)
    return {
        "messages": got[0],
        "seconds": round(elapsed, 2),
        "per_s": round(got[0] / elapsed),
        "reader_cpu_us_per_message": round(cpu / max(got[0], 1) * 1e6, 1),
    }


def reader_ceiling(url: str, channel: Any, traffic: Traffic, messages: int) -> dict[str, Any]:
    queues = ("reader.busy", "reader.quiet")
    for queue in queues:
        channel.queue_declare(queue, durable=True, arguments={"x-max-length": messages, "x-overflow": "drop-head"})
        channel.queue_bind(queue, TRACE_EXCHANGE, f"deliver.{UNRELATED}")
    deadline = time.monotonic() + 120
    while min(depth(channel, q) for q in queues) < messages:
        if time.monotonic() > deadline:
            raise SystemExit(f"the reader queues did not fill to {messages} traces within 120 s")
        time.sleep(0.2)
    for queue in queues:
        channel.queue_unbind(queue, TRACE_EXCHANGE, f"deliver.{UNRELATED}")
    busy = drain(url, queues[0], messages)
    traffic.end()
    return {"busy": busy, "quiet": drain(url, queues[1], messages)}


def declare(channel: Any) -> None:
    channel.exchange_declare(EXCHANGE, "topic", durable=True)
    channel.queue_declare(
        UNRELATED, durable=True, arguments={"x-max-length": UNRELATED_LIMIT, "x-overflow": "drop-head"}
    )
    channel.queue_declare(WATCHED, durable=True)
    channel.queue_declare(TRACE, durable=True, arguments=TRACE_ARGUMENTS)
    for queue in (UNRELATED, WATCHED):
        channel.queue_bind(queue, EXCHANGE, queue)
    channel.queue_bind(TRACE, TRACE_EXCHANGE, f"deliver.{WATCHED}")


def order(rounds: int, modes: Sequence[str]) -> Iterator[tuple[int, str]]:
    for number in range(rounds):
        for mode in modes if number % 2 == 0 else tuple(reversed(modes)):
            yield number + 1, mode


def run(args: argparse.Namespace, vhost: str, pid: int) -> dict[str, Any]:
    url = url_of(vhost)
    api("PUT", f"vhosts/{quote(vhost, safe='')}", {"description": DESCRIPTION, "tags": TAGS})
    connection = open_connection(url, name="bench-control")
    channel = connection.channel()
    declare(channel)
    broker_before, idle_started = cpu_seconds(pid), time.monotonic()
    time.sleep(args.idle)
    idle = (cpu_seconds(pid) - broker_before) / (time.monotonic() - idle_started)
    modes = MODES if args.everything else MODES[:2]
    traffic, windows, previous = Traffic(url, args, pid), [], None
    try:
        time.sleep(args.settle)  # connections up, queues at their steady depth
        for number, mode in order(args.rounds, modes):
            switch(vhost, channel, mode, previous)
            previous = mode
            time.sleep(args.settle)
            windows.append({"round": number, **window(traffic, channel, mode, args.seconds)})
            w = windows[-1]
            print(
                f"round {number} {mode}: {w['delivered_per_s']:,} msg/s, broker {w['broker_cores']} cores, "
                f"{w['traced_intake_per_s']} traces/s",
                file=sys.stderr,
                flush=True,
            )
        switch(vhost, channel, "watched", previous)
        ceiling = reader_ceiling(url, channel, traffic, args.reader_messages)
    finally:
        traffic.end()
        close_quietly(connection)
    return {"idle_broker_cores": round(idle, 3), "windows": windows, "reader": ceiling, "summary": summary(windows)}


def summary(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per mode the median of the rounds; ``added``: the median of each round's difference from ``off``."""
    result: dict[str, Any] = {}
    base = {w["round"]: w for w in windows if w["mode"] == "off"}
    for mode in dict.fromkeys(w["mode"] for w in windows):
        mine = [w for w in windows if w["mode"] == mode]
        medians = {
            key: round(statistics.median(w[key] for w in mine), digits)
            for key, digits in (
                ("delivered_per_s", None),
                ("broker_cores", 3),
                ("broker_core_s_per_1k", 4),
                ("traced_intake_per_s", 1),
            )
        }
        medians |= dict.fromkeys(("added_broker_cores", "added_broker_core_s_per_1k", "added_per_1k_percent"))
        if mode != "off":
            cores = [w["broker_cores"] - base[w["round"]]["broker_cores"] for w in mine]
            per_1k = [w["broker_core_s_per_1k"] - base[w["round"]]["broker_core_s_per_1k"] for w in mine]
            ratio = [w["broker_core_s_per_1k"] / base[w["round"]]["broker_core_s_per_1k"] - 1 for w in mine]
            medians |= {
                "added_broker_cores": round(statistics.median(cores), 3),
                "added_broker_core_s_per_1k": round(statistics.median(per_1k), 4),
                "added_per_1k_percent": round(100 * statistics.median(ratio), 1),
            }
        result[mode] = medians
    return result


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += [
        "| " + " | ".join("" if v is None else f"{v:,}" if isinstance(v, int) else str(v) for v in row) + " |"
        for row in rows
    ]
    return "\n".join(lines)


def render(result: dict[str, Any]) -> str:
    settings = result["settings"]
    return "\n".join(
        [
            f"{result['date']}  RabbitMQ {result['rabbitmq']} (Erlang {result['erlang']})  {result['cpus']} cores  "
            f"load average {result['load_before']} before, {result['load_after']} after",
            f"target {settings['rate']:,.0f} msg/s of {settings['size']} B, {settings['seconds']:g} s per window; "
            f"broker CPU before the traffic (others' work): {result['idle_broker_cores']} cores",
            "",
            table(list(result["windows"][0]), [list(w.values()) for w in result["windows"]]),
            "",
            "Median of the rounds (added: each round's difference from off):",
            "",
            table(
                ["mode", *result["summary"]["off"]],
                [[mode, *values.values()] for mode, values in result["summary"].items()],
            ),
            "",
            table(
                ("reader (header-only)", "messages", "seconds", "msg/s", "reader CPU us/msg"),
                [
                    (name, r["messages"], r["seconds"], r["per_s"], r["reader_cpu_us_per_message"])
                    for name, r in result["reader"].items()
                ],
            ),
        ]
    )


def _interrupt() -> None:
    raise KeyboardInterrupt  # unwinds through private_vhost, which deletes the virtual host


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds per mode and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=3.0, help="seconds after each switch before measuring")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of the broker's own idle before traffic")
    parser.add_argument("--rate", type=float, default=10_000, help="unrelated messages per second, all publishers")
    parser.add_argument("--size", type=int, default=1024, help="message body bytes")
    parser.add_argument("--publishers", type=int, default=2)
    parser.add_argument("--window", type=int, default=1000, help="unconfirmed publishes per publisher")
    parser.add_argument("--consumers", type=int, default=2)
    parser.add_argument("--auto-ack", action="store_true", help="consumers of the unrelated queue do not ack")
    parser.add_argument("--trickle", type=float, default=10.0, help="messages per second through the watched queue")
    parser.add_argument("--no-everything", dest="everything", action="store_false", help="skip the deliver.# mode")
    parser.add_argument("--reader-messages", type=int, default=30_000, help="traces per reader-ceiling drain")
    parser.add_argument("--json", action="store_true", help="one JSON line instead of tables")
    args = parser.parse_args(argv)
    bounded = 0 < args.seconds <= 600 and 0 < args.rounds <= 20 and 0 < args.rate <= 100_000
    bounded = bounded and 0 < args.reader_messages <= 100_000 and 0 < args.publishers <= 8 and 0 < args.consumers <= 8
    if not bounded:
        parser.error(
            "--seconds must be in (0, 600], --rounds in 1..20, --rate in (0, 100000], --reader-messages in "
            "1..100000, --publishers and --consumers in 1..8"
        )
    overview = api("GET", "overview")
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "rabbitmq": overview["rabbitmq_version"],
        "erlang": overview["erlang_version"],
        "cpus": os.cpu_count(),
        "load_before": [round(v, 2) for v in os.getloadavg()],
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
    }
    pid = broker_pid()
    try:
        with stop_on_signals(_interrupt), private_vhost() as vhost:
            try:
                result |= run(args, vhost, pid)
            finally:
                set_tracing_quietly(vhost)
    except KeyboardInterrupt:
        print("interrupted: the benchmark's virtual host and all it held are deleted", file=sys.stderr)
        return 130
    result["load_after"] = [round(v, 2) for v in os.getloadavg()]
    print(json.dumps(result) if args.json else render(result))
    return 0


def set_tracing_quietly(vhost: str) -> None:
    """Tracing off before the virtual host goes (best effort: the deletion follows either way)."""
    with contextlib.suppress(httpx.HTTPError, SystemExit):
        set_tracing(vhost, False)


if __name__ == "__main__":
    raise SystemExit(main())
