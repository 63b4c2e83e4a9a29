"""Generate a topic archive (docs/design.md#archive-record) from the catalogue's valid fixtures, with known defects.

Every message is a valid fixture of its contract with fresh ids (messageId, correlationId, ordering
key and sequence), archived with the AMQP properties the publisher would set. Defects are injected
one kind at a time, each with the one reason the validator must count it under, so the expected
report is known exactly (``GeneratedArchive.expected``)::

    python benchmarks/generate_archive.py OUT --messages 200000 [--defect-rate 0.02] [--plain]

Layout: ``OUT/<exchange>/date=YYYY-MM-DD/part-NNNN.jsonl[.gz]`` (gzipped, plain, or both mixed).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import random
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from contract_platform.catalog import Catalog, Contract, Status, load_catalog
from contract_platform.catalog.pointers import split_pointer
from contract_platform.envelope import EnvelopeValidator, amqp_properties
from contract_platform.validation.reasons import Reason
from contract_platform.validation.report import NO_TYPE

__all__ = ["DEFECTS", "ArchiveSpec", "GeneratedArchive", "archive_record", "generate_archive", "main"]

UNKNOWN_MESSAGE_TYPE = "billing.invoice-voided.v1"
DEEP = 10_000


@dataclass(frozen=True)
class ArchiveSpec:
    """What to generate. ``defects`` (kind -> count) wins over ``defect_rate`` (a mix of every kind)."""

    messages: int = 1000
    defect_rate: float = 0.02
    defects: Mapping[str, int] | None = None
    message_types: Sequence[str] | None = None  # default: every contract with valid fixtures
    dates: Sequence[str] = ("2026-07-01", "2026-07-02")
    files_per_partition: int = 2
    compression: str = "gzip"  # gzip | plain | mixed
    oversize_body_bytes: int = 1_048_577
    statuses: Mapping[str, str] = field(default_factory=dict)  # effective statuses the validator will get
    seed: int = 7


@dataclass
class GeneratedArchive:
    root: Path
    records: int = 0
    files: list[Path] = field(default_factory=list)
    bytes: int = 0
    # (messageType or NO_TYPE, first reason or None for valid) -> records
    expected: Counter[tuple[str, str | None]] = field(default_factory=Counter)
    defects: Counter[str] = field(default_factory=Counter)

    @property
    def expected_by_reason(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for (_, reason), n in self.expected.items():
            if reason is not None:
                counts[reason] += n
        return dict(counts)


@dataclass
class _Message:
    """One delivery being built: the envelope, the archive record, and what the validator must say."""

    contract: Contract
    envelope: dict[str, Any]
    record: dict[str, Any]
    expected_type: str
    reason: str | None = None  # the first reason; None: decided by the version status
    line: str | None = None  # set when the defect works on the raw line

    def render(self) -> str:
        if self.line is not None:
            return self.line
        return orjson.dumps(self.record).decode("utf-8")


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _set_pointer(document: Any, pointer: str, value: Any) -> None:
    *parents, last = split_pointer(pointer)
    for token in parents:
        document = document.setdefault(token, {}) if isinstance(document, dict) else document[int(token)]
    document[last] = value


def archive_record(contract: Contract, envelope: Mapping[str, Any], received_at: str) -> dict[str, Any]:
    """The archive record (docs/design.md#archive-record) of ``envelope`` as the publisher and archiver would write it."""
    props = amqp_properties(envelope)
    return {
        "exchange": contract.transport.exchange,
        "routingKey": contract.transport.routing_key,
        "receivedAt": received_at,
        "redelivered": False,
        "properties": {
            "messageId": props["message_id"],
            "correlationId": props["correlation_id"],
            "type": props["type"],
            "contentType": props["content_type"],
            "contentEncoding": props["content_encoding"],
            "deliveryMode": props["delivery_mode"],
            "timestamp": props["timestamp"],
            "appId": props["app_id"],
            "headers": props["headers"],
        },
        "body": orjson.dumps(envelope).decode("utf-8"),
        "bodyBase64": None,
    }


class _Traffic:
    """Valid messages with fresh ids, in receivedAt order, and the state defects need."""

    def __init__(self, catalog: Catalog, spec: ArchiveSpec) -> None:
        self.catalog = catalog
        self.spec = spec
        self.rng = random.Random(spec.seed)
        names = spec.message_types or [c.message_type for c in catalog if any(f.valid for f in c.fixtures)]
        self.contracts = [c for c in (catalog.get(n) for n in names) if c is not None]
        if not self.contracts:
            raise ValueError(f"no contract with valid fixtures among {names}")
        self.fixtures = {c.message_type: [f.document for f in c.fixtures if f.valid] for c in self.contracts}
        self.bad_payloads = self._payload_defects()
        self.sequences: dict[tuple[str, str], int] = {}  # last sequence handed out per (type, key)
        self.highest: dict[tuple[str, str], int] = {}  # highest sequence the validator has seen per (type, key)
        self.valid_sent: list[_Message] = []
        self.defects_done: Counter[str] = Counter()
        self.count = 0

    def _payload_defects(self) -> dict[str, list[dict[str, Any]]]:
        """Payloads of invalid fixtures that fail the payload schema only, even with a stream's sequence set."""
        validator = EnvelopeValidator(self.catalog)
        found: dict[str, list[dict[str, Any]]] = {}
        for contract in self.contracts:
            for fixture in contract.fixtures:
                if fixture.valid or validator.envelope_issues(fixture.document):
                    continue
                envelope = orjson.loads(orjson.dumps(fixture.document))
                if contract.ordering is not None:
                    _set_pointer(envelope, contract.ordering.sequence, 1)
                if validator.payload_issues(contract, envelope["payload"]):
                    found.setdefault(contract.message_type, []).append(envelope["payload"])
        return found

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def message(self, received_at: str, contract: Contract | None = None) -> _Message:
        contract = contract or self.contracts[self.count % len(self.contracts)]
        fixtures = self.fixtures[contract.message_type]
        envelope = orjson.loads(orjson.dumps(fixtures[(self.count // len(self.contracts)) % len(fixtures)]))
        self.count += 1
        metadata = envelope["metadata"]
        metadata["messageId"] = self._uuid()
        metadata["correlationId"] = self._uuid()
        received = datetime.fromisoformat(received_at)  # published a moment before, occurred before that
        metadata["publishedAt"] = _iso(received - timedelta(milliseconds=self.rng.randrange(5, 400)))
        metadata["occurredAt"] = _iso(received - timedelta(milliseconds=self.rng.randrange(400, 5000)))
        if contract.ordering is not None:
            key = f"{metadata.get('partitionKey', 'key')}-{self.rng.randrange(200)}"
            _set_pointer(envelope, contract.ordering.key, key)
            sequence = self.sequences.get((contract.message_type, key), 0) + 1
            self.sequences[(contract.message_type, key)] = sequence
            _set_pointer(envelope, contract.ordering.sequence, sequence)
        record = archive_record(contract, envelope, received_at)
        return _Message(contract, envelope, record, contract.message_type)

    def rebuild(self, message: _Message) -> None:
        """The record again after the envelope changed (body and mirrored properties)."""
        message.record = archive_record(message.contract, message.envelope, message.record["receivedAt"])


Defect = Callable[[_Traffic, _Message], _Message | None]


def _malformed(change: Callable[[_Traffic, _Message], None]) -> Defect:
    def apply(traffic: _Traffic, message: _Message) -> _Message:
        change(traffic, message)
        message.reason, message.expected_type = Reason.MALFORMED, NO_TYPE
        return message

    return apply


def _truncated_line(traffic: _Traffic, message: _Message) -> None:
    line = message.render()
    message.line = line[: len(line) // 2]


def _not_utf8(traffic: _Traffic, message: _Message) -> None:
    raw = b"\xff\xfe" + message.record["body"].encode("utf-8")
    message.record.update(body=None, bodyBase64=base64.b64encode(raw).decode("ascii"))


def _not_json(traffic: _Traffic, message: _Message) -> None:
    message.record["body"] = message.record["body"][:-7]


def _not_object(traffic: _Traffic, message: _Message) -> None:
    message.record["body"] = json.dumps([message.envelope])


def _no_body(traffic: _Traffic, message: _Message) -> None:
    message.record["body"] = None


def _nested(traffic: _Traffic, message: _Message) -> None:
    message.record["body"] = '{"metadata": ' + "[" * DEEP + "]" * DEEP + ', "payload": {}}'


def _envelope_invalid(traffic: _Traffic, message: _Message) -> _Message:
    del message.envelope["metadata"]["producer"]  # the properties keep theirs: as archived, from before
    message.record["body"] = orjson.dumps(message.envelope).decode("utf-8")
    message.reason = Reason.ENVELOPE_INVALID
    return message


def _leap_second(traffic: _Traffic, message: _Message) -> _Message:
    # jsonschema-rs alone accepts a leap second; the jsonschema library (the reference) rejects it.
    message.envelope["metadata"]["occurredAt"] = "2026-06-30T23:59:60Z"
    traffic.rebuild(message)
    message.reason = Reason.ENVELOPE_INVALID
    return message


def _unknown_type(traffic: _Traffic, message: _Message) -> _Message:
    message.envelope["metadata"]["messageType"] = UNKNOWN_MESSAGE_TYPE
    traffic.rebuild(message)
    message.reason, message.expected_type = Reason.UNKNOWN_TYPE, UNKNOWN_MESSAGE_TYPE
    return message


def _payload_invalid(traffic: _Traffic, message: _Message) -> _Message | None:
    payloads = traffic.bad_payloads.get(message.contract.message_type)
    if not payloads:
        return None
    payload = orjson.loads(orjson.dumps(payloads[traffic.rng.randrange(len(payloads))]))
    ordering = message.contract.ordering
    sequence = _get(message.envelope, ordering.sequence) if ordering is not None else None
    message.envelope["payload"] = payload
    if ordering is not None:  # keep the stream's sequence: the defect is elsewhere in the payload
        _set_pointer(message.envelope, ordering.sequence, sequence)
    traffic.rebuild(message)
    message.reason = Reason.PAYLOAD_INVALID
    return message


def _header_mismatch(traffic: _Traffic, message: _Message) -> _Message:
    message.record["properties"]["headers"]["schema-version"] = message.envelope["metadata"]["schemaVersion"] + 1
    message.reason = Reason.HEADER_MISMATCH
    return message


def _routing_mismatch(traffic: _Traffic, message: _Message) -> _Message:
    message.record["routingKey"] += ".misrouted"
    message.reason = Reason.ROUTING_MISMATCH
    return message


def _duplicate(traffic: _Traffic, message: _Message) -> _Message | None:
    if not traffic.valid_sent:
        return None
    original = traffic.valid_sent[traffic.rng.randrange(len(traffic.valid_sent))]
    record = dict(original.record, receivedAt=message.record["receivedAt"], redelivered=True)
    return _Message(original.contract, original.envelope, record, original.expected_type, Reason.DUPLICATE)


def _conflicting_duplicate(traffic: _Traffic, message: _Message) -> _Message | None:
    candidates = [m for m in traffic.valid_sent[-50:] if len(traffic.fixtures[m.contract.message_type]) > 1]
    if not candidates:
        return None
    original = candidates[-1]
    ordering = original.contract.ordering
    for fixture in traffic.fixtures[original.contract.message_type]:
        envelope = orjson.loads(orjson.dumps(original.envelope))
        envelope["payload"] = orjson.loads(orjson.dumps(fixture["payload"]))
        if ordering is not None:  # same sequence: only the business content differs
            _set_pointer(envelope, ordering.sequence, _get(original.envelope, ordering.sequence))
        if envelope["payload"] != original.envelope["payload"]:
            break
    copy = _Message(original.contract, envelope, {}, original.expected_type, Reason.CONFLICTING_DUPLICATE)
    copy.record = archive_record(original.contract, envelope, message.record["receivedAt"])
    return copy


def _get(document: Any, pointer: str) -> Any:
    for token in split_pointer(pointer):
        document = document[token] if isinstance(document, dict) else document[int(token)]
    return document


def _out_of_order(traffic: _Traffic, message: _Message) -> _Message | None:
    ordering = message.contract.ordering
    keys = [key for (name, key), high in traffic.highest.items() if name == message.contract.message_type and high > 1]
    if ordering is None or not keys:
        return None
    _set_pointer(message.envelope, ordering.key, keys[traffic.rng.randrange(len(keys))])
    _set_pointer(message.envelope, ordering.sequence, 1)
    traffic.rebuild(message)
    message.reason = Reason.OUT_OF_ORDER
    return message


def _oversize(traffic: _Traffic, message: _Message) -> _Message:
    body = message.record["body"]
    message.record["body"] = body + " " * max(0, traffic.spec.oversize_body_bytes - len(body))
    message.reason = Reason.OVERSIZE
    return message


def _pii_header(traffic: _Traffic, message: _Message) -> _Message | None:
    if not message.contract.pii.fields:
        return None
    pointer = message.contract.pii.fields[0]
    message.record["properties"]["headers"]["x-billing-contact"] = _get(message.envelope, pointer)
    message.reason = Reason.PII_IN_HEADERS
    return message


def _pii_header_name(traffic: _Traffic, message: _Message) -> _Message | None:
    if not message.contract.pii.fields:
        return None
    name = split_pointer(message.contract.pii.fields[0])[-1]
    message.record["properties"]["headers"][name.upper()] = "redacted"
    message.reason = Reason.PII_IN_HEADERS
    return message


# kind -> defect; the kind's first word is the reason the validator must count it under.
DEFECTS: dict[str, Defect] = {
    "MALFORMED:truncated-line": _malformed(_truncated_line),
    "MALFORMED:not-utf8": _malformed(_not_utf8),
    "MALFORMED:not-json": _malformed(_not_json),
    "MALFORMED:not-an-object": _malformed(_not_object),
    "MALFORMED:no-body": _malformed(_no_body),
    "MALFORMED:nested-10000-deep": _malformed(_nested),
    "ENVELOPE_INVALID:missing-producer": _envelope_invalid,
    "ENVELOPE_INVALID:leap-second": _leap_second,
    "UNKNOWN_TYPE": _unknown_type,
    "PAYLOAD_INVALID": _payload_invalid,
    "HEADER_MISMATCH": _header_mismatch,
    "ROUTING_MISMATCH": _routing_mismatch,
    "DUPLICATE": _duplicate,
    "CONFLICTING_DUPLICATE": _conflicting_duplicate,
    "OUT_OF_ORDER": _out_of_order,
    "OVERSIZE": _oversize,
    "PII_IN_HEADERS:value": _pii_header,
    "PII_IN_HEADERS:name": _pii_header_name,
}
_CAPPED = {"OVERSIZE": 2, "MALFORMED:nested-10000-deep": 2}  # big lines: a few are enough in a mix


def _plan(spec: ArchiveSpec) -> list[str | None]:
    """The kind of each delivery in order (None: a valid message), defects spread evenly."""
    defects: list[str] = []
    if spec.defects is not None:
        defects = [kind for kind, n in sorted(spec.defects.items()) for _ in range(n)]
    else:
        wanted = round(spec.messages * spec.defect_rate)
        kinds = sorted(DEFECTS)
        counts: Counter[str] = Counter()
        index = 0
        while len(defects) < wanted and index < wanted * 4:
            kind = kinds[index % len(kinds)]
            index += 1
            if counts[kind] < _CAPPED.get(kind, wanted):
                defects.append(kind)
                counts[kind] += 1
    unknown = set(defects) - set(DEFECTS)
    if unknown:
        raise ValueError(f"unknown defect kind(s) {sorted(unknown)}; known: {sorted(DEFECTS)}")
    total = max(spec.messages, len(defects) * 4)
    plan: list[str | None] = [None] * total
    rng = random.Random(spec.seed + 1)
    # no defect in the first tenth: duplicates and out-of-order need some history first
    slots = rng.sample(range(total // 10, total), len(defects))
    for slot, kind in zip(sorted(slots), rng.sample(defects, len(defects)), strict=True):
        plan[slot] = kind
    return plan


def _status(traffic: _Traffic, contract: Contract) -> Status:
    given = traffic.spec.statuses.get(contract.message_type)
    return Status(given) if given else contract.status


def _first_reason(traffic: _Traffic, message: _Message) -> str | None:
    if message.reason is not None:
        return str(message.reason)
    status = _status(traffic, message.contract)
    if status is Status.RETIRED:
        return str(Reason.RETIRED_TYPE)
    if status is Status.DEPRECATED:
        return str(Reason.DEPRECATED_TYPE)
    return None


def _received_at(spec: ArchiveSpec, index: int, total: int) -> tuple[str, str]:
    per_date = -(-total // len(spec.dates))
    day = spec.dates[min(index // per_date, len(spec.dates) - 1)]
    step = timedelta(seconds=80_000) / per_date
    moment = datetime.combine(date.fromisoformat(day), datetime.min.time(), UTC) + step * (index % per_date)
    return day, _iso(moment)


def _messages(traffic: _Traffic, plan: Sequence[str | None]) -> Iterable[tuple[str, _Message]]:
    spec = traffic.spec
    for index, kind in enumerate(plan):
        day, received_at = _received_at(spec, index, len(plan))
        message = traffic.message(received_at)
        if kind is not None:
            defective = DEFECTS[kind](traffic, message)
            if defective is None:  # the defect does not apply to this contract: try the others
                for contract in traffic.contracts:
                    defective = DEFECTS[kind](traffic, traffic.message(received_at, contract))
                    if defective is not None:
                        break
            if defective is None:
                raise ValueError(f"defect {kind} applies to none of {[c.message_type for c in traffic.contracts]}")
            traffic.defects_done[kind] += 1
            message = defective
        else:
            traffic.valid_sent.append(message)
        _seen_by_validator(traffic, message)
        yield day, message


_UNORDERED = {Reason.MALFORMED, Reason.UNKNOWN_TYPE, Reason.DUPLICATE, Reason.CONFLICTING_DUPLICATE}


def _seen_by_validator(traffic: _Traffic, message: _Message) -> None:
    """Track the highest sequence per key as the validator will (duplicates and unreadable left out)."""
    ordering = message.contract.ordering
    if ordering is None or message.reason in _UNORDERED:
        return
    key = (message.contract.message_type, str(_get(message.envelope, ordering.key)))
    traffic.highest[key] = max(traffic.highest.get(key, 0), int(_get(message.envelope, ordering.sequence)))


def _open(path: Path, gzipped: bool) -> Any:
    return gzip.open(path, "wt", encoding="utf-8", compresslevel=1) if gzipped else path.open("w", encoding="utf-8")


def generate_archive(root: str | Path, catalog: Catalog | str | Path, spec: ArchiveSpec) -> GeneratedArchive:
    """Write the archive under ``root`` and return what the validator must report on it."""
    root = Path(root)
    catalog = catalog if isinstance(catalog, Catalog) else load_catalog(catalog)
    traffic = _Traffic(catalog, spec)
    result = GeneratedArchive(root=root)
    partitions: dict[tuple[str, str], list[str]] = {}
    for day, message in _messages(traffic, _plan(spec)):
        exchange = message.record.get("exchange") or message.contract.transport.exchange
        partitions.setdefault((exchange, day), []).append(message.render())
        result.expected[(message.expected_type, _first_reason(traffic, message))] += 1
        result.records += 1
    for (exchange, day), lines in sorted(partitions.items()):
        folder = root / exchange / f"date={day}"
        folder.mkdir(parents=True, exist_ok=True)
        files = max(1, min(spec.files_per_partition, len(lines)))
        chunk = -(-len(lines) // files)
        for number in range(files):
            gzipped = spec.compression == "gzip" or (spec.compression == "mixed" and number % 2 == 0)
            path = folder / f"part-{number:04d}.jsonl{'.gz' if gzipped else ''}"
            with _open(path, gzipped) as out:
                for line in lines[number * chunk : (number + 1) * chunk]:
                    out.write(line + "\n")
            result.files.append(path)
            result.bytes += path.stat().st_size
    result.defects = traffic.defects_done
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--catalog", type=Path, default=Path(__file__).resolve().parents[1] / "contracts")
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--defect-rate", type=float, default=0.02)
    parser.add_argument("--files-per-partition", type=int, default=4)
    parser.add_argument("--compression", choices=("gzip", "plain", "mixed"), default="gzip")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    spec = ArchiveSpec(
        messages=args.messages,
        defect_rate=args.defect_rate,
        files_per_partition=args.files_per_partition,
        compression=args.compression,
        seed=args.seed,
    )
    result = generate_archive(args.out, args.catalog, spec)
    figures = {"records": result.records, "files": len(result.files), "bytes": result.bytes}
    print(json.dumps({**figures, "expected_by_reason": result.expected_by_reason}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
