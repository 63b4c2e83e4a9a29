"""Runtime evidence: what a service's guards counted, handed to the registry by a path that cannot slow the service.

::

    counters = RuntimeCounters(bundle, service="accounting-service", side="consume")  # the guard bumps these
    reporter = EvidenceReporter([counters], registry_sink(registry, bundle), interval=60.0)
    reporter.start()      # a daemon thread: every interval, take the counts and record them
    ...
    reporter.stop()       # one last flush

Counting is a few dictionary increments under an uncontended lock, keyed by message type (the bundle's types,
plus one key for everything else) and reason code: bounded whatever arrives. The reporter's thread takes the
counts (``take()`` swaps them for empty ones) and calls the sink; a sink that fails (the registry is down) does
not reach the service: the period waits in a bounded queue (``max_pending``) for the next attempt, and a
period pushed out of it is dropped and counted (``dropped``, reported with the next period that gets through).

``registry_sink`` records one ``runtime_validation`` evidence row per message type and period through
``evidence.record`` (docs/design.md#evidence), under the type on the wire at the bundle's version of it; its
verdict is ``fail`` when the rejection rate is over the contract's ``validation.invalidRateTarget``, and the
lifecycle guard ``runtime_validation`` then refuses the step to ``active`` (lifecycle.guards).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from contract_platform.client.bundle import Bundle
from contract_platform.evidence import Registry, Verdict, record
from contract_platform.evidence.figures import RuntimeValidationFigures

__all__ = [
    "UNKNOWN",
    "EvidenceReporter",
    "RuntimeCounters",
    "RuntimeReport",
    "Tally",
    "describe",
    "registry_sink",
    "runtime_figures",
]

log = logging.getLogger(__name__)

UNKNOWN = "(not in the bundle)"  # the one key every other claimed type is counted under


@dataclass
class Tally:
    """One message type's counts over one period."""

    valid: int = 0
    tolerated: int = 0
    rejected: int = 0
    by_reason: Counter[str] = field(default_factory=Counter)
    migrated: int = 0
    migrated_to: Counter[str] = field(default_factory=Counter)
    business_rejected: int = 0

    @property
    def checked(self) -> int:
        return self.valid + self.tolerated + self.rejected


@dataclass(frozen=True)
class RuntimeReport:
    """One period of one side of one service: per message type, its tally."""

    service: str | None
    side: str
    bundle: str
    since: datetime
    until: datetime
    tallies: Mapping[str, Tally]
    dropped: int = 0  # periods' messages lost before this one could be sent


class RuntimeCounters:
    """The counts of one guard (publish or consume side); every method is safe from any thread."""

    def __init__(self, bundle: Bundle, *, service: str | None, side: str) -> None:
        self.bundle = bundle
        self.service = service
        self.side = side
        self._known = frozenset(bundle.message_types)
        self._lock = threading.Lock()
        self._tallies: dict[str, Tally] = {}
        self._since = datetime.now(UTC)

    def _tally(self, message_type: str | None) -> Tally:
        key = message_type if message_type is not None and message_type in self._known else UNKNOWN
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = Tally()
        return tally

    def valid(self, message_type: str, *, tolerated: bool = False) -> None:
        with self._lock:
            tally = self._tally(message_type)
            if tolerated:
                tally.tolerated += 1
            else:
                tally.valid += 1

    def rejected(self, message_type: str | None, reason: str) -> None:
        with self._lock:
            tally = self._tally(message_type)
            tally.rejected += 1
            tally.by_reason[str(reason)] += 1

    def migrated(self, source: str, target: str) -> None:
        with self._lock:
            tally = self._tally(source)
            tally.migrated += 1
            tally.migrated_to[target] += 1

    def business_rejected(self, message_type: str) -> None:
        with self._lock:
            self._tally(message_type).business_rejected += 1

    def take(self) -> RuntimeReport:
        """The counts since the last ``take`` (or the start), and a fresh period."""
        now = datetime.now(UTC)
        with self._lock:
            tallies, self._tallies = self._tallies, {}
            since, self._since = self._since, now
        return RuntimeReport(self.service, self.side, self.bundle.checksum, since, now, tallies)

    def peek(self) -> dict[str, Tally]:
        """A copy of the current period's counts (for a service's own metrics or health page)."""
        with self._lock:
            return {
                key: Tally(
                    t.valid, t.tolerated, t.rejected, Counter(t.by_reason), t.migrated, Counter(t.migrated_to),
                    t.business_rejected,
                )
                for key, t in self._tallies.items()
            }  # fmt: skip


Sink = Callable[[RuntimeReport], None]


class EvidenceReporter:
    """A background thread that hands the counters' periods to ``sink``; the service never waits for it."""

    def __init__(
        self,
        counters: Iterable[RuntimeCounters],
        sink: Sink,
        *,
        interval: float = 60.0,
        max_pending: int = 60,
    ) -> None:
        self.counters = list(counters)
        self.sink = sink
        self.interval = interval
        self._pending: deque[RuntimeReport] = deque()
        self._max_pending = max_pending
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lost_messages = 0  # messages counted in periods dropped, not yet reported
        self.dropped_periods = 0
        self.dropped_messages = 0
        self.sent = 0
        self.failures = 0

    def start(self) -> EvidenceReporter:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="contract-evidence-reporter", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop, after one last attempt to send every pending period (waiting at most ``timeout`` seconds)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def flush(self) -> int:
        """Take every counter's period now and try to send what is pending; returns how many periods were sent.
        The reporter's thread does this every ``interval``; a caller may too (tests, a graceful shutdown).

        The periods already waiting go first: queued before them, a new period would push the oldest out of a
        full queue even when the registry has just come back and would have taken it. When they cannot go (the
        registry is still down), the new periods are queued, pushing out the oldest, and not tried again now."""
        sent = self._send()
        blocked = bool(self._pending)
        for counters in self.counters:
            report = counters.take()
            if report.tallies:
                self._queue(report)
        return sent if blocked else sent + self._send()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._safely()
        self._safely()

    def _safely(self) -> None:
        try:
            self.flush()
        except Exception as exc:  # never let the reporter thread die: the next period tries again
            log.warning("runtime evidence: flushing failed (%s)", type(exc).__name__)

    def _queue(self, report: RuntimeReport) -> None:
        if len(self._pending) >= self._max_pending:
            lost = self._pending.popleft()
            self.dropped_periods += 1
            count = sum(t.checked + t.business_rejected for t in lost.tallies.values())
            self.dropped_messages += count
            self._lost_messages += count
        self._pending.append(report)

    def _send(self) -> int:
        sent = 0
        while self._pending:
            report = self._pending[0]
            if self._lost_messages:
                report = RuntimeReport(
                    report.service, report.side, report.bundle, report.since, report.until, report.tallies,
                    report.dropped + self._lost_messages,
                )  # fmt: skip
            try:
                self.sink(report)
            except Exception as exc:  # the registry is down or refuses: keep the period for the next attempt
                self.failures += 1
                log.warning(
                    "runtime evidence: the registry did not take %d pending periods (%s); retrying in %.0f s",
                    len(self._pending),
                    type(exc).__name__,
                    self.interval,
                )
                break
            self._pending.popleft()
            self._lost_messages = 0
            self.sent += 1
            sent += 1
        return sent


def registry_sink(registry: Registry, bundle: Bundle, *, run_id: str | None = None) -> Sink:
    """Record each message type's tally of a period as ``runtime_validation`` evidence in ``registry``."""

    def sink(report: RuntimeReport) -> None:
        for message_type, tally in sorted(report.tallies.items()):
            contract = bundle.contract(message_type)
            if contract is None:
                continue  # types outside the bundle belong to no contract: they stay in the service's own view
            figures = runtime_figures(report, message_type, tally, contract.validation.invalid_rate_target)
            if figures.checked == 0 and figures.business_rejected == 0:
                continue
            verdict = Verdict.UNKNOWN
            if figures.invalid_rate is not None:
                verdict = (
                    Verdict.FAIL if figures.invalid_rate > contract.validation.invalid_rate_target else Verdict.PASS
                )
            record(registry, message_type, contract.version, figures, verdict=verdict, run_id=run_id)

    return sink


def runtime_figures(report: RuntimeReport, message_type: str, tally: Tally, target: float) -> RuntimeValidationFigures:
    checked = tally.checked
    return RuntimeValidationFigures(
        service=report.service,
        side=report.side,
        since=_iso(report.since),
        until=_iso(report.until),
        checked=checked,
        valid=tally.valid,
        tolerated=tally.tolerated,
        rejected=tally.rejected,
        by_reason=dict(sorted(tally.by_reason.items())),
        migrated=tally.migrated,
        migrated_to=dict(sorted(tally.migrated_to.items())),
        business_rejected=tally.business_rejected,
        dropped=report.dropped,
        bundle=report.bundle,
        invalid_rate=tally.rejected / checked if checked else None,
        invalid_rate_target=target,
    )


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def describe(tallies: Mapping[str, Tally]) -> dict[str, Any]:
    """A plain-data view of tallies (a service's health endpoint, logs): counts only, never a message."""
    return {
        key: {
            "checked": t.checked, "valid": t.valid, "tolerated": t.tolerated, "rejected": t.rejected,
            "by_reason": dict(t.by_reason), "migrated": t.migrated, "business_rejected": t.business_rejected,
        }
        for key, t in sorted(tallies.items())
    }  # fmt: skip
