"""The ``dead_letters`` check: no message of the type left in any DLQ or parking lot on the broker.

Which queues: every queue the broker dead-letters into, found by topology (bound to an exchange named
by a queue's ``x-dead-letter-exchange`` or a policy's ``dead-letter-exchange``), every queue named by a
dead-letter convention (``.dlq``, ``.dead``, ``_error``, ``.parking-lot``...; configurable), and the
version's own DLQs and parking lots, in every watched virtual host (``retirement.discovery``). Without
the management API only the version's own can be found, and the check says so (unknown).

A queue is read with the platform's non-destructive peek (``amqp.peek``: ``basic.get`` without ack up to
the depth, then one ``basic.nack(multiple, requeue)``); a queue that requeueing could harm (before
RabbitMQ 4.3 a quorum queue under a delivery limit, which 4.0 to 4.2 set by default; streams) is not
read, and says why.

A message's type is ``archive_record.message_type_of``: the body's ``metadata.messageType``, else its
AMQP ``type`` property, else a type header (the one precedence of every reader); its id is its AMQP
``message_id``, else the body's ``metadata.messageId``. Bodies come from any producer: one is parsed only
within the platform's bounds (``limits.depth_limit``, ``MAX_BODY_BYTES``, UTF-8); a body past them is
counted as unreadable with the reason, and typed by its properties and headers alone.
Messages of this type block; other versions of the family are counted.

One read per queue per run: a run that audits many versions shares a ``DeadLetterSweep``
(``retirement.audit.audit_versions`` makes one per run): each DLQ is peeked once, its messages tallied by type, and every version
judged from the tally. A version's result lists its own DLQs (``Discovery.attributed``: always read),
and any other DLQ that holds messages of its type or family or could not be read completely; the other
DLQs are counted (``sweptElsewhere``). Each DLQ's depth is asked first by a passive declare on one
channel kept open for the run; only a queue that holds messages is peeked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import pika

from contract_platform import settings
from contract_platform.amqp.connection import broker_errors, broker_version, describe_broker
from contract_platform.amqp.http import NOT_FOUND, ManagementClient
from contract_platform.amqp.inspection import RESOURCE_LOCKED, probing
from contract_platform.amqp.management import BrokerTopology, QueueInfo
from contract_platform.amqp.peek import PeekOutcome, peek, requeue_risk
from contract_platform.amqp.topology import Role, TopologyPlan
from contract_platform.amqp.types import BrokerConnection
from contract_platform.archive_record import TYPE_HEADERS, message_type_of
from contract_platform.catalog.model import Contract
from contract_platform.evidence import Verdict
from contract_platform.limits import depth_limit, may_nest_beyond, nesting_beyond_text
from contract_platform.retirement.discovery import DEFAULT_DEAD_LETTER_SUFFIXES, Discovery
from contract_platform.retirement.model import CheckName, CheckResult
from contract_platform.retirement.watch import vhost_connections

if TYPE_CHECKING:
    from contract_platform.retirement.snapshot import TopologySnapshot

__all__ = [
    "DEFAULT_MAX_MESSAGES",
    "TYPE_HEADERS",
    "DeadLetterScan",
    "DeadLetterSweep",
    "Probe",
    "QueueScan",
    "check_dead_letters",
    "message_id_of",
    "message_type_of",
    "read_envelope",
    "requeue_risk",
    "scan_dead_letters",
]

DEFAULT_MAX_MESSAGES = 10_000  # per queue: deeper queues are read this far and reported as incomplete
_SHOWN_IDS = 10
MAX_BODY_BYTES = 16 * 2**20  # RabbitMQ 4's default max_message_size: a larger body is not parsed


def read_envelope(body: bytes | None) -> tuple[Any, str | None]:
    """(the body's JSON document, None), or (None, why it cannot be read); an empty body is (None, None).

    Never raises for what a body holds: it is parsed only when it is UTF-8, at most ``MAX_BODY_BYTES`` and
    nested at most ``limits.depth_limit()`` deep (measured on the text first, so no parser recurses into it)."""
    raw = body or b""
    if not raw:
        return None, None
    if len(raw) > MAX_BODY_BYTES:
        return None, f"body larger than {MAX_BODY_BYTES // 2**20} MiB"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "body not UTF-8"
    limit = depth_limit()
    if may_nest_beyond(text, limit) and nesting_beyond_text(text, limit) is not None:
        return None, f"body nested deeper than {limit} levels"
    try:
        return json.loads(text), None
    except (ValueError, RecursionError):
        return None, "body not JSON"


def _metadata(envelope: Any) -> dict[str, Any]:
    metadata = envelope.get("metadata") if isinstance(envelope, dict) else None
    return metadata if isinstance(metadata, dict) else {}


def message_id_of(properties: Any, body: bytes | None, envelope: Any = None) -> str | None:
    """The AMQP ``message_id``, else the body's ``metadata.messageId`` (producers outside the platform omit the first).

    ``envelope``: the body as ``read_envelope`` gave it, when the caller has it; else the body is read here."""
    declared = getattr(properties, "message_id", None)
    if declared:
        return str(declared)
    if envelope is None:
        envelope, _why = read_envelope(body)
    found = _metadata(envelope).get("messageId")
    return str(found) if isinstance(found, str | int) and found != "" else None


@dataclass
class QueueScan(PeekOutcome):
    """What one dead-letter queue held when it was read (or why it was not): the peek's outcome, and what of
    this type and family it found."""

    vhost: str | None = None
    found: tuple[str, ...] = ()  # how the queue was found (platform topology, DLX topology, policy, name convention)
    why: tuple[str, ...] = ()
    matching: int = 0
    matching_ids: list[str] = field(default_factory=list)
    family: dict[str, int] = field(default_factory=dict)  # other versions of the family: messages
    untyped: int = 0
    unreadable: dict[str, int] = field(default_factory=dict)  # bodies that could not be parsed, by reason

    def to_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "queue": self.queue,
            "vhost": self.vhost,
            "foundBy": list(self.found),
            "why": list(self.why),
            "depth": self.depth,
            "inspected": self.inspected,
        }
        optional = {
            "matching": self.matching,
            "matchingIds": self.matching_ids,
            "family": self.family,
            "untyped": self.untyped,
            "unreadable": self.unreadable,
            "unacked": self.unacked,
            "skipped": self.skipped,
            "vanished": self.vanished,
            "deliveryCountRaised": self.delivery_count_raised,
        }
        return shown | {key: value for key, value in optional.items() if value}


@dataclass(frozen=True)
class DeadLetterScan:
    """Every dead-letter queue looked at; ``coverage`` is ``broker`` (all of them) or ``version`` (own only)."""

    coverage: str
    queues: tuple[QueueScan, ...]
    scope: str = ""
    broker_version: str | None = None
    swept_elsewhere: int = 0  # other DLQs read in the run, holding nothing of the version's type or family


@dataclass
class _Swept:
    """One DLQ as the run's one read of it found it: the peek's outcome and its messages tallied by type."""

    outcome: PeekOutcome
    types: dict[str, int] = field(default_factory=dict)
    ids: dict[str, list[str]] = field(default_factory=dict)  # the first few messageIds per type
    untyped: int = 0
    unreadable: dict[str, int] = field(default_factory=dict)

    def visit(self, _method: Any, properties: Any, body: bytes) -> None:
        envelope, unreadable = read_envelope(body)
        if unreadable is not None:
            self.unreadable[unreadable] = self.unreadable.get(unreadable, 0) + 1
        found, _where = message_type_of(properties, body, envelope)
        if found is None:
            self.untyped += 1
            return
        self.types[found] = self.types.get(found, 0) + 1
        shown = self.ids.setdefault(found, [])
        if len(shown) < _SHOWN_IDS:
            shown.append(message_id_of(properties, None, envelope) or "(no messageId)")

    def scan_for(self, contract: Contract) -> QueueScan:
        scan = QueueScan(self.outcome.queue)
        for item in fields(PeekOutcome):
            setattr(scan, item.name, getattr(self.outcome, item.name))
        scan.matching = self.types.get(contract.message_type, 0)
        scan.matching_ids = list(self.ids.get(contract.message_type, ()))
        scan.family = {
            t: n for t, n in self.types.items() if t != contract.message_type and t.rsplit(".", 1)[0] == contract.family
        }
        scan.untyped = self.untyped
        scan.unreadable = dict(self.unreadable)
        return scan


class DeadLetterSweep:
    """The DLQs read in one run, by (vhost, queue): shared by every version the run audits."""

    def __init__(self) -> None:
        self.queues: dict[tuple[str, str], _Swept] = {}
        self.notable: dict[tuple[str, str], Any] = {}  # DLQs holding typed messages or not fully read: their entry
        self.swept_scopes: set[str] = set()  # scopes whose every DLQ has been read in this run

    @property
    def peeked(self) -> int:
        """DLQs that held messages and were read."""
        return sum(1 for swept in self.queues.values() if swept.outcome.inspected or swept.outcome.skipped)


def scan_dead_letters(
    connection: BrokerConnection,
    contract: Contract,
    plan: TopologyPlan,
    *,
    snapshot: TopologySnapshot | None,
    discovery: Discovery | None = None,
    scope: str = "",
    max_messages: int = DEFAULT_MAX_MESSAGES,
    management: ManagementClient | None = None,
    sweep: DeadLetterSweep | None = None,
) -> DeadLetterScan:
    """Read every dead-letter queue in ``scope`` (a name prefix; empty: all) for messages of ``contract``.

    ``snapshot``: the run's read of the broker; the queues are the dead-letter queues ``discovery`` (made
    from it, here when not given) found in every watched virtual host, by its naming net
    (``$CONTRACT_DEAD_LETTER_SUFFIXES``); a queue in another virtual host is read over a connection of its
    own, and each queue once per ``sweep`` (one per run; None: this scan's own). Without a snapshot (no management API): the
    version's own dead-letter queues and parking lots only (coverage ``version``); with ``management`` alone,
    the queues its listing names by the same naming net (coverage ``broker``, the connection's virtual host).
    """
    version = broker_version(connection)
    if snapshot is not None:
        found = discovery if discovery is not None else snapshot.discover(contract, plan, scope=scope)
        return _scan_discovered(
            connection,
            contract,
            found,
            snapshot.topology,
            snapshot.home_vhost,
            version,
            max_messages,
            scope,
            sweep,
        )
    coverage, names, known = _dead_letter_queues(plan, management, scope)
    scans = []
    with broker_errors(describe_broker(connection)):
        for name in names:
            info = (management.queue(name) if management is not None else None) or known.get(name, {})
            scans.append(_scan_queue(connection, contract, name, info, version, max_messages))
    return DeadLetterScan(coverage, tuple(scans), scope, ".".join(map(str, version)) if version else None)


def _dead_letter_queues(
    plan: TopologyPlan, management: ManagementClient | None, scope: str
) -> tuple[str, list[str], dict[str, dict[str, Any]]]:
    """(coverage, queue names, known info by name): the API's listing by the naming net (the same one
    discovery uses: ``$CONTRACT_DEAD_LETTER_SUFFIXES``, else the defaults), else the version's own queues."""
    listed = management.queue_names(prefix=scope) if management is not None else None
    if listed is not None:
        net = tuple(s.lower() for s in (settings.dead_letter_suffixes() or DEFAULT_DEAD_LETTER_SUFFIXES))
        return "broker", [name for name in listed if name.lower().endswith(net)], {}
    own = plan.queues_of(Role.DLQ, Role.PARKING_LOT)
    known = {q.name: {"type": q.queue_type, "arguments": dict(q.arguments)} for q in own}
    return "version", [q.name for q in own if q.name.startswith(scope)], known


def _scan_discovered(
    connection: BrokerConnection,
    contract: Contract,
    discovery: Discovery,
    topology: BrokerTopology | None,
    home_vhost: str,
    version: Any,
    max_messages: int,
    scope: str,
    sweep: DeadLetterSweep | None = None,
) -> DeadLetterScan:
    sweep = sweep if sweep is not None else DeadLetterSweep()
    own = {(entry.vhost, entry.queue) for entry in discovery.attributed}
    scans = []
    elsewhere = 0
    entries: Iterable[Any] = discovery.dead_letter_queues
    if scope in sweep.swept_scopes:  # every DLQ was read earlier in the run: only the version's and the notable
        entries = [*discovery.attributed, *(e for k, e in sweep.notable.items() if k not in own)]
        elsewhere = len(discovery.dead_letter_queues) - len(entries)
    with vhost_connections(connection, home_vhost) as connect, broker_errors(describe_broker(connection)):
        probe = Probe(connect)
        try:
            for entry in entries:
                key = (entry.vhost, entry.queue)
                hosted = topology.vhosts.get(entry.vhost) if topology is not None else None
                queue = hosted.queues.get(entry.queue) if hosted is not None else None
                swept = sweep.queues.get(key)
                if swept is None:
                    swept = _Swept(PeekOutcome(entry.queue))
                    ready = (
                        None if queue is not None and queue.owner is not None else probe.ready(entry.vhost, entry.queue)
                    )
                    if ready == 0:
                        pass  # empty now: nothing to read (a passive declare on the run's one probing channel)
                    elif ready == GONE:
                        swept.outcome.vanished = True
                    else:
                        swept.outcome = peek(
                            connect(entry.vhost),
                            entry.queue,
                            limit=max_messages,
                            info=_info_of(queue),
                            version=version,
                            visit=swept.visit,
                        )
                    sweep.queues[key] = swept
                    if swept.types or swept.untyped or swept.unreadable or not swept.outcome.complete:
                        sweep.notable[key] = entry
                scan = swept.scan_for(contract)
                if key not in own and not scan.matching and not scan.family and scan.complete:
                    elsewhere += 1
                    continue
                scan.vhost = entry.vhost
                scan.found = tuple(str(f) for f in entry.found)
                scan.why = entry.reasons
                scans.append(scan)
        finally:
            probe.close()
    sweep.swept_scopes.add(scope)
    shown_version = ".".join(map(str, version)) if version else None
    return DeadLetterScan("broker", tuple(scans), scope, shown_version, elsewhere)


GONE = -1  # the queue is not on the broker (any more)


class Probe:
    """Ready counts by passive declare on one channel per virtual host, kept open between queues (a broker
    that has thousands of DLQs costs one round trip each, not a channel each); a refused declare (404 gone,
    405 exclusive) closes the channel, and the next probe opens another."""

    def __init__(self, connect: Callable[[str], Any]) -> None:
        self.connect = connect
        self.channels: dict[str, Any] = {}

    def ready(self, vhost: str, queue: str) -> int | None:
        """The ready count; ``GONE`` when the queue is not there; None when only a peek can tell (exclusive)."""
        counts = self.counts(vhost, queue)
        return counts if isinstance(counts, int | None) else counts[0]

    def counts(self, vhost: str, queue: str) -> tuple[int, int] | int | None:
        """(ready, consumers); ``GONE`` when the queue is not there; None when it is exclusive to another."""
        channel = self.channels.get(vhost)
        if channel is None or not channel.is_open:
            channel = self.channels[vhost] = self.connect(vhost).channel()
        try:
            with probing(channel):  # a refusal is the answer here: no warning of pika's
                ok = channel.queue_declare(queue, passive=True)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code == NOT_FOUND:
                return GONE
            if exc.reply_code == RESOURCE_LOCKED:
                return None
            raise
        return int(ok.method.message_count), int(ok.method.consumer_count)

    def close(self) -> None:
        for channel in self.channels.values():
            if channel.is_open:
                channel.close()


def _info_of(queue: QueueInfo | None) -> dict[str, Any]:
    """What the topology listing knew of a queue, as ``peek`` takes it."""
    if queue is None:
        return {}
    info: dict[str, Any] = {
        "type": queue.type,
        "arguments": dict(queue.arguments),
        "effective_policy_definition": dict(queue.policy),
        "messages_ready": queue.ready,
        "messages_unacknowledged": queue.unacked,
    }
    if queue.owner is not None:
        info["owner"] = queue.owner
    return info


def _scan_queue(
    connection: BrokerConnection,
    contract: Contract,
    name: str,
    info: Mapping[str, Any],
    version: Any,
    max_messages: int,
) -> QueueScan:
    scan = QueueScan(name)

    def visit(_method: Any, properties: Any, body: bytes) -> None:
        _tally(scan, contract, properties, body)

    outcome = peek(connection, name, limit=max_messages, info=info, version=version, visit=visit)
    for item in fields(PeekOutcome):
        setattr(scan, item.name, getattr(outcome, item.name))
    return scan


def _tally(scan: QueueScan, contract: Contract, properties: Any, body: bytes | None) -> None:
    envelope, unreadable = read_envelope(body)
    if unreadable is not None:
        scan.unreadable[unreadable] = scan.unreadable.get(unreadable, 0) + 1
    found, _where = message_type_of(properties, body, envelope)
    if found == contract.message_type:
        scan.matching += 1
        message_id = message_id_of(properties, None, envelope)
        if len(scan.matching_ids) < _SHOWN_IDS:
            scan.matching_ids.append(message_id or "(no messageId)")
    elif found is None:
        scan.untyped += 1
    elif found.rsplit(".", 1)[0] == contract.family:
        scan.family[found] = scan.family.get(found, 0) + 1


def check_dead_letters(contract: Contract, scan: DeadLetterScan) -> CheckResult:
    """Fail on any message of the type; unknown when some queue could not be read fully or was not listed."""
    figures: dict[str, Any] = {
        "coverage": scan.coverage,
        "scope": scan.scope or None,
        "brokerVersion": scan.broker_version,
        "scanned": len(scan.queues) + scan.swept_elsewhere,
        "sweptElsewhere": scan.swept_elsewhere,
        "empty": sum(1 for q in scan.queues if not q.depth and not q.vanished),
        "matching": sum(q.matching for q in scan.queues),
        "inspected": sum(q.inspected for q in scan.queues),
        "queues": [q.to_dict() for q in scan.queues],  # every queue considered, how it was found, what it held
    }
    if any(q.delivery_count_raised for q in scan.queues):
        figures["note"] = (
            "quorum queues were read: x-delivery-count (RabbitMQ 3.x) or x-acquired-count (4.3+) of their messages "
            "went up by one"
        )
    holding = [q for q in scan.queues if q.matching]
    if holding:
        it = "it" if figures["matching"] == 1 else "them"
        where = "; ".join(f"{q.matching} in {_named(q)} (messageIds {', '.join(q.matching_ids)})" for q in holding)
        return CheckResult(
            CheckName.DEAD_LETTERS,
            Verdict.FAIL,
            figures,
            f"{figures['matching']} dead-lettered message{'' if figures['matching'] == 1 else 's'} of "
            f"{contract.message_type}: {where}: replay {it} to the successor or discard {it}",
        )
    unread = [q for q in scan.queues if not q.complete]
    if unread:
        reasons = "; ".join(f"{_named(q)}: {_why_unread(q)}" for q in unread)
        return CheckResult(
            CheckName.DEAD_LETTERS,
            Verdict.UNKNOWN,
            figures,
            f"not every dead-lettered message could be inspected ({reasons}): check these queues by hand "
            "(for example with a shovel to a classic queue) or empty them",
        )
    if scan.coverage != "broker":
        figures["note"] = "the management API is not available: only this version's own DLQs and parking lots"
        return CheckResult(
            CheckName.DEAD_LETTERS,
            Verdict.UNKNOWN,
            figures,
            "only this version's own DLQs and parking lots were scanned (clean): without the management API the "
            "other DLQs and parking lots on the broker cannot be listed; enable it and audit again",
        )
    return CheckResult(CheckName.DEAD_LETTERS, Verdict.PASS, figures)


def _named(scan: QueueScan) -> str:
    """``svc.dead`` [found by DLX topology] (vhost v): the queue, how it was found, and where."""
    found = f" [found by {', '.join(scan.found)}]" if scan.found else ""
    vhost = f" (vhost {scan.vhost})" if scan.vhost and scan.vhost != "/" else ""
    return f"{scan.queue}{found}{vhost}"


def _why_unread(scan: QueueScan) -> str:
    if scan.skipped:
        return f"not read, {scan.skipped}"
    if scan.unacked:
        return f"{scan.unacked} messages held unacknowledged by a consumer"
    return f"{scan.inspected} of {scan.depth} messages read"
