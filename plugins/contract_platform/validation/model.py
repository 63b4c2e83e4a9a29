"""What the record-level rules return: findings and one checked record, as plain Python values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contract_platform.validation.reasons import Reason

__all__ = ["CheckedRecord", "Finding"]


@dataclass(frozen=True)
class Finding:
    """One reason a record is flagged, located by a JSON pointer (see ``reasons`` for the two namespaces).

    Findings sort in precedence order (``Reason.rank``), then by path and message.
    """

    code: Reason
    path: str
    message: str

    @property
    def rank(self) -> int:
        return self.code.rank

    def __lt__(self, other: Finding) -> bool:
        return (self.code.rank, self.path, self.message) < (other.code.rank, other.path, other.message)

    @property
    def keyword(self) -> str | None:
        """The JSON Schema keyword that failed (``pattern``, ``maxLength``...) for a schema finding, else None.

        Schema findings are written ``<keyword>: <explanation>`` (``envelope.validation.describe_errors``).
        """
        if self.code not in (Reason.PAYLOAD_INVALID, Reason.ENVELOPE_INVALID):
            return None
        word, sep, _ = self.message.partition(":")
        return word if sep and word.isidentifier() else None

    def to_dict(self) -> dict[str, Any]:
        return {"code": str(self.code), "path": self.path, "message": self.message}


@dataclass(slots=True)
class CheckedRecord:
    """One archive record after the record-level rules; what the cross-record rules need, and its findings.

    ``received_us`` is ``receivedAt`` in microseconds since the epoch (None when it is missing or not
    a timestamp); ``payload_hash`` identifies the payload for duplicate detection; ``order_key`` and
    ``sequence`` are set only for contracts with ``ordering`` and usable values; ``retired_producer`` only
    for a message received on a retired version after its retirement (``RETIRED_TYPE``).
    """

    exchange: str | None = None
    routing_key: str | None = None
    received_at: str | None = None
    received_us: int | None = None
    redelivered: bool | None = None
    message_type: str | None = None
    message_id: str | None = None
    payload_hash: bytes | None = None
    order_key: str | None = None
    sequence: int | None = None
    body_bytes: int = 0
    findings: list[Finding] = field(default_factory=list)
    retired_producer: str | None = None  # set on a message of a retired version: who sent it ("" when unnamed)

    @property
    def rank(self) -> int | None:
        """The rank of the first reason, or None when the record-level rules found nothing."""
        return min((f.code.rank for f in self.findings), default=None)

    @property
    def invalid(self) -> bool:
        """True when a record-level rule found it invalid (not only counted)."""
        return any(f.code.invalid for f in self.findings)

    @property
    def reasons(self) -> list[Reason]:
        return sorted({f.code for f in self.findings}, key=lambda r: r.rank)
