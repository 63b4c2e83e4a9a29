"""``contractctl record-activity``: the broker activity recorder, a long-running service (docs/retirement-audit.md).

Stores every reader session, queue and binding change of the broker in the registry store, from RabbitMQ's
event exchange, with its own coverage: the retirement audit's ``readers`` check reads them. Runs until
SIGTERM/SIGINT (or ``--max-seconds``). Any number may run for one registry: one records, the others wait
and take over; a recorder that starts continues from the last confirmed moment when it can prove nothing
was lost meanwhile, else records the gap (docs/retirement-audit.md#restarts-standby-and-the-buffer).
``--status`` says which recorder is active, how far coverage is confirmed and what waits in the queue.
``--log-file PATH`` writes the log there, rotated at ``LOG_FILE_BYTES`` with ``LOG_FILES_KEPT`` older files: a
recorder runs for months and its log must not grow with it.

Exit codes: 0 stopped as asked; 2 bad input; 3 the event exchange plugin is off (the message gives the
command that enables it), or the broker or the store cannot be reached when it starts.
"""

from __future__ import annotations

import argparse
import logging
import time
from datetime import UTC, datetime, timedelta
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

from contract_platform import settings
from contract_platform.cli.common import add_format_argument
from contract_platform.cli.output import emit_json, out
from contract_platform.errors import UsageError, printable

HELP = "record who reads which queue on the broker, continuously (the retirement audit's reader evidence)"
LOG_FILE_BYTES = 10 * 1024 * 1024  # --log-file: rotated at this size ...
LOG_FILES_KEPT = 3  # ... keeping this many older files (PATH.1 to PATH.3): at most 40 MiB in all


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--registry", default=None, help="registry store URL (default $CONTRACT_REGISTRY_URL or SQLite)"
    )
    parser.add_argument(
        "--queue",
        default=None,
        help="the recorder's durable queue (default contract-platform.broker-activity.<digest of the registry URL>)",
    )
    parser.add_argument(
        "--heartbeat",
        default=None,
        metavar="DURATION",
        help="how often coverage is confirmed (default $CONTRACT_RECORDER_HEARTBEAT or 5s)",
    )
    parser.add_argument(
        "--max-seconds", type=float, default=None, help="stop after S seconds (default: run until SIGTERM)"
    )
    parser.add_argument(
        "--retention", default="90d", metavar="DURATION", help="forget activity older than this (default 90d)"
    )
    parser.add_argument(
        "--log-file",
        default=None,
        metavar="PATH",
        help=f"write the log to PATH, rotated at {LOG_FILE_BYTES // 2**20} MiB with {LOG_FILES_KEPT} older files kept "
        "(default: warnings to stderr)",
    )
    parser.add_argument(
        "--status",
        action="store_true",
        help="do not record: which recorder is active, until when coverage is confirmed, what waits in the queue "
        "and in its parked queue, the delivery traces per vhost, the gaps of the last day; exit 1 when coverage "
        "is older than 3 heartbeats",
    )
    add_format_argument(parser)


def run(args: argparse.Namespace) -> int:
    from contract_platform.activity.queues import queue_for
    from contract_platform.durations import parse_duration
    from contract_platform.store import SqlRegistry

    try:
        heartbeat = parse_duration(args.heartbeat) if args.heartbeat else settings.recorder_heartbeat()
        retention = parse_duration(args.retention)
        max_events, max_bytes = settings.recorder_buffer()
    except ValueError as exc:
        raise UsageError(f"contractctl record-activity: {exc}") from exc
    if heartbeat < timedelta(seconds=1):
        raise UsageError("contractctl record-activity: --heartbeat must be at least 1s")
    if args.max_seconds is not None and args.max_seconds <= 0:
        raise UsageError("contractctl record-activity: --max-seconds must be positive")
    registry_url = args.registry or settings.registry_url()
    queue = args.queue or queue_for(registry_url)
    if args.status:  # the store and the management API only: not the recorder, its broker client or its events
        registry = SqlRegistry.open(registry_url)
        try:
            return _status(registry, queue, heartbeat, args.format)
        finally:
            registry.close()
    from contract_platform.activity.recorder import ActivityRecorder, RecorderConfig, refuse_if_in_use

    logging.getLogger("contract_platform.activity").setLevel(logging.INFO)
    if args.log_file:
        log_to(Path(args.log_file))
    config = RecorderConfig(
        queue=queue,
        heartbeat=heartbeat.total_seconds(),
        event_vhost=settings.event_vhost(),
        retention=retention,
        max_events=max_events,
        max_bytes=max_bytes,
    )
    refuse_if_in_use(settings.rabbitmq_url(), config)  # before the store: a refused start upgrades nothing
    registry = SqlRegistry.open(registry_url)
    try:
        recorder = ActivityRecorder(settings.rabbitmq_url(), registry, config)
        deadline = time.monotonic() + args.max_seconds if args.max_seconds is not None else None
        report = recorder.run(until=(lambda: time.monotonic() >= deadline) if deadline is not None else None)
    finally:
        registry.close()
    if args.format == "json":
        emit_json(report.as_dict())
        return 0
    covered = report.covered_until.isoformat(timespec="seconds") if report.covered_until else "nothing"
    out(
        f"recorded {report.events} broker events ({report.duplicates} already stored, {report.ignored} ignored, "
        f"{report.parked} refused by the store and parked) "
        f"in {report.segments} segment(s); covered until {covered}"
    )
    for gap in report.gaps:
        out(f"gap: {printable(gap)}")  # a reason may quote what a client chose
    return 0


def log_to(path: Path, max_bytes: int = LOG_FILE_BYTES, kept: int = LOG_FILES_KEPT) -> None:
    """Every log record of this process (the recorder's, pika's) into ``path``, rotated at ``max_bytes`` with
    ``kept`` older files. Raises ``UsageError`` when ``path`` cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(path, maxBytes=max_bytes, backupCount=kept, encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"contractctl record-activity: cannot write the log file {path}: {exc.strerror or exc}; "
            "give a --log-file in a writable folder"
        ) from exc
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)


def _status(registry: Any, queue: str, heartbeat: timedelta, form: str) -> int:
    """Which recorder is active and since when, until when coverage is confirmed (fresh within three heartbeats),
    what the store holds and what waits in the queue, and the gaps of the last day."""
    from contract_platform.activity.queues import management_for, parked_queue, queue_state
    from contract_platform.retirement.readers import recorder_health

    health = recorder_health(registry, heartbeat=heartbeat, now=datetime.now(UTC))
    covered, fresh, gaps, events = health.covered_until, health.fresh, health.gaps, health.events_last_day
    management = management_for(settings.rabbitmq_url(), None, settings.event_vhost())
    state = queue_state(management, queue)
    parked = management.queue(parked_queue(queue))  # declared only once an event was parked
    watches = _watches_by_vhost(registry.delivery_watches())
    document = {
        "queue": queue,
        "coveredUntil": covered.isoformat() if covered else None,
        "fresh": fresh,
        "lagSeconds": health.lag_seconds,
        "active": {
            "recorder": health.active_host,
            "since": health.active_since.isoformat(),
            "coveredFrom": health.active_covered_from.isoformat() if health.active_covered_from else None,
        }
        if health.active_since is not None
        else None,
        "eventsStoredLastDay": events,
        "newestEventStored": health.newest_event.isoformat() if health.newest_event else None,
        "broker": state,
        "parkedWaiting": parked.get("messages") if isinstance(parked, dict) else None,
        "deliveryWatches": watches,
        "gapsToday": [{"start": g.start.isoformat(), "end": g.end.isoformat(), "reason": g.reason} for g in gaps],
    }
    if form == "json":
        emit_json(document)
        return 0 if fresh else 1
    when = covered.isoformat(timespec="seconds") if covered else "never (in the last day)"
    lag = f", {document['lagSeconds']} s ago" if covered else ""
    out(f"coverage confirmed until {when}{lag}: {'recording' if fresh else 'NOT recording'}")
    if health.active_since is not None:
        since = health.active_since.isoformat(timespec="seconds")
        out(f"active recorder: {printable(health.active_host or '?')} since {since}")
    out(f"events stored in the last day: {events:,}")
    if state is None:
        out(f"queue {printable(queue)}: not listed by the management API")
    else:
        waiting = [c for c in state["consumers"] if not c["active"]]
        out(
            f"queue {printable(queue)}: {state['ready']} ready, {state['unacknowledged']} unacknowledged "
            f"(limit {state['limits']['messages']} messages, {state['limits']['bytes']} bytes); "
            f"{len(state['consumers']) - len(waiting)} active and {len(waiting)} waiting recorder(s)"
        )
    if parked is not None:
        out(f"queue {printable(parked_queue(queue))}: {document['parkedWaiting']} event(s) the store refused, parked")
    for watch in watches:
        until = watch["confirmedUntil"] or "not yet"
        problem = f"; {printable(watch['problem'])}" if watch["problem"] else ""
        out(
            f"delivery trace of vhost {printable(watch['vhost'])}: {watch['queues']} queue(s) watched, "
            f"confirmed until {until}{problem}"
        )
    for gap in gaps:
        start, end = gap.start.isoformat(timespec="seconds"), gap.end.isoformat(timespec="seconds")
        out(f"gap: {start} to {end}: {printable(gap.reason)}")
    return 0 if fresh else 1


def _watches_by_vhost(watches: list[Any]) -> list[dict[str, Any]]:
    """The delivery watches per virtual host: how many queues, confirmed until the earliest of their moments
    (None while one of them has none yet) and the problems the recorder noted."""
    by_vhost: dict[str, list[Any]] = {}
    for watch in watches:
        by_vhost.setdefault(watch.vhost, []).append(watch)
    summary = []
    for vhost, found in sorted(by_vhost.items()):
        moments = [w.confirmed_until for w in found]
        problems = sorted({w.problem for w in found if w.problem})
        summary.append(
            {
                "vhost": vhost,
                "queues": len(found),
                "confirmedUntil": None if None in moments else min(moments).isoformat(),
                "problem": "; ".join(problems) or None,
            }
        )
    return summary
