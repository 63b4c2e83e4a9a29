"""Cross-record rules: DUPLICATE, CONFLICTING_DUPLICATE and OUT_OF_ORDER, defined once, in words and in code.

* Records are taken in ``receivedAt`` order (records without a readable one last), ties in archive order.
* Records with the same (messageType, messageId) are copies: the first is the original; each later
  one is DUPLICATE when its payload equals the original's (a redelivery, a republish) and
  CONFLICTING_DUPLICATE when it does not.
* For contracts with ``ordering``, leaving duplicates out, a record is OUT_OF_ORDER when its
  sequence is lower than the highest sequence already received for its (messageType, key).

The Spark job computes the same with window functions (``spark_jobs/validate_archive.py``), with
the message templates below; ``sequence_findings`` is the plain-Python reference its tests use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from contract_platform.validation.model import Finding
from contract_platform.validation.reasons import Reason

__all__ = [
    "CONFLICTING_MESSAGE",
    "DUPLICATE_MESSAGE",
    "DUPLICATE_PATHS",
    "OUT_OF_ORDER_MESSAGE",
    "UNKNOWN_TIME",
    "Keyed",
    "sequence_findings",
]

# printf-style templates: Python's % and Spark's format_string read them alike.
DUPLICATE_MESSAGE = "messageId %s was already received at %s with the same payload"
CONFLICTING_MESSAGE = "messageId %s was already received at %s with a different payload"
OUT_OF_ORDER_MESSAGE = "sequence %s is lower than %s, already received for key %s"
UNKNOWN_TIME = "an unknown time"
DUPLICATE_PATHS: Mapping[Reason, str] = {
    Reason.DUPLICATE: "/metadata/messageId",
    Reason.CONFLICTING_DUPLICATE: "/payload",
}


@dataclass(frozen=True)
class Keyed:
    """What the cross-record rules read of one record (``CheckedRecord`` fields plus an archive position)."""

    record_id: int
    message_type: str | None = None
    message_id: str | None = None
    payload_hash: bytes | None = None
    received_at: str | None = None
    received_us: int | None = None
    order_key: str | None = None
    sequence: int | None = None

    @property
    def position(self) -> tuple[bool, int, int]:
        return (self.received_us is None, self.received_us or 0, self.record_id)


def sequence_findings(records: Iterable[Keyed], sequence_paths: Mapping[str, str]) -> dict[int, Finding]:
    """record_id -> its DUPLICATE, CONFLICTING_DUPLICATE or OUT_OF_ORDER finding (at most one each).

    ``sequence_paths`` maps the messageTypes that have ``ordering`` to their sequence pointer.
    """
    found: dict[int, Finding] = {}
    originals: dict[tuple[str, str], Keyed] = {}
    highest: dict[tuple[str, str], int] = {}
    for record in sorted(records, key=lambda r: r.position):
        if record.message_type is not None and record.message_id is not None:
            copy_of = originals.setdefault((record.message_type, record.message_id), record)
            if copy_of is not record:
                same = copy_of.payload_hash == record.payload_hash
                code = Reason.DUPLICATE if same else Reason.CONFLICTING_DUPLICATE
                template = DUPLICATE_MESSAGE if same else CONFLICTING_MESSAGE
                message = template % (record.message_id, copy_of.received_at or UNKNOWN_TIME)
                found[record.record_id] = Finding(code, DUPLICATE_PATHS[code], message)
                continue
        path = sequence_paths.get(record.message_type or "")
        if path is None or record.order_key is None or record.sequence is None:
            continue
        key = (record.message_type or "", record.order_key)
        before = highest.get(key)
        if before is not None and record.sequence < before:
            message = OUT_OF_ORDER_MESSAGE % (record.sequence, before, record.order_key)
            found[record.record_id] = Finding(Reason.OUT_OF_ORDER, path, message)
        else:
            highest[key] = record.sequence
    return found
