"""Archive validation reason codes: stable strings, defined once, in order of precedence.

A record can have several reasons; the quarantine lists them all. The report counts each record
once, under its *first* reason in this order (``Reason.rank``). Two reasons are *counted, not
invalid* (``Reason.invalid`` is False): a record whose first reason is one of them is counted but
not quarantined. Paths are JSON pointers: those starting ``/metadata`` or ``/payload`` point into
the message envelope, every other one into the archive record (docs/design.md#archive-record).

=========================  ========  ==============================================================
code                       invalid   fires when (path)
=========================  ========  ==============================================================
MALFORMED                  yes       the record line is not a JSON object (truncated line; path
                                     ``""``), or its body is missing, not base64, not UTF-8, not
                                     JSON or not a JSON object (``/body``, ``/bodyBase64``); or
                                     either nests deeper than the depth limit (``limits``; the
                                     message names the pointer); or the archiver kept it as a
                                     fallback record (``/properties``, its ``archiveError``)
UNCHECKABLE                yes       a rule raised on the record (path ``""``; the message names the
                                     exception), or the record reaches a schema ``pattern`` the
                                     platform will not evaluate (lookaround, backreferences...; the
                                     message names the pattern and why): reported and quarantined
                                     instead of failing the run
ENVELOPE_INVALID           yes       the body fails the envelope schema (the failing pointer)
UNKNOWN_TYPE               yes       the record's type (``archive_record.record_type``: the body's
                                     ``metadata.messageType``, else ``properties.type``, else a type
                                     header) is not in the catalogue (``/metadata/messageType``)
PAYLOAD_INVALID            yes       the payload fails its contract's schema, format assertions on
                                     (the failing pointer under ``/payload``)
HEADER_MISMATCH            yes       ``properties.messageId`` != ``metadata.messageId``,
                                     ``properties.type`` != ``messageType``, header
                                     ``schema-version`` != ``schemaVersion``, or another mirrored
                                     header (``HEADER_FIELDS``), when present, differs from its field
ROUTING_MISMATCH           yes       ``exchange`` or ``routingKey`` differs from the contract's
                                     transport (``/exchange``, ``/routingKey``)
DUPLICATE                  no        the (messageType, messageId) was already received with the
                                     same payload, e.g. a redelivery (``/metadata/messageId``)
CONFLICTING_DUPLICATE      yes       ... already received with a different payload (``/payload``)
OUT_OF_ORDER               yes       for contracts with ``ordering``: the sequence is lower than the
                                     highest already received for its key; records are taken in
                                     ``receivedAt`` order, duplicates left out (the sequence pointer)
OVERSIZE                   yes       the body is over the size limit, 1 MiB by default (``/body``)
PII_IN_HEADERS             yes       a header value equals the value at one of the contract's PII
                                     pointers, or a header name names a PII field (the last token of
                                     a PII pointer, case-insensitively, ignoring ``-`` and ``_``)
                                     (``/properties/headers/<name>``)
RETIRED_TYPE               yes       the message's version is retired (``/metadata/messageType``); with
                                     the retirement's time known, only a message received after it
                                     (one received before counts as DEPRECATED_TYPE: it is history)
DEPRECATED_TYPE            no        the message's version is deprecated (``/metadata/messageType``)
=========================  ========  ==============================================================

"First seen" for duplicates is the earliest record by ``receivedAt`` (then by archive order).
A duplicate copy is counted under DUPLICATE even when later reasons (OVERSIZE...) apply to it:
its first copy already carries them. Version status is the effective status the caller passes
(from the registry), defaulting to the catalogue's declared status.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Reason"]


class Reason(StrEnum):
    """Archive validation reason codes, in order of precedence (see the module docstring)."""

    MALFORMED = "MALFORMED"
    UNCHECKABLE = "UNCHECKABLE"
    ENVELOPE_INVALID = "ENVELOPE_INVALID"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    PAYLOAD_INVALID = "PAYLOAD_INVALID"
    HEADER_MISMATCH = "HEADER_MISMATCH"
    ROUTING_MISMATCH = "ROUTING_MISMATCH"
    DUPLICATE = "DUPLICATE"
    CONFLICTING_DUPLICATE = "CONFLICTING_DUPLICATE"
    OUT_OF_ORDER = "OUT_OF_ORDER"
    OVERSIZE = "OVERSIZE"
    PII_IN_HEADERS = "PII_IN_HEADERS"
    RETIRED_TYPE = "RETIRED_TYPE"
    DEPRECATED_TYPE = "DEPRECATED_TYPE"

    @property
    def rank(self) -> int:
        """Precedence: 0 is first. A record is counted under the reason with the lowest rank."""
        return _RANKS[self]

    @property
    def invalid(self) -> bool:
        """False for the reasons that are counted, not invalid (DUPLICATE, DEPRECATED_TYPE)."""
        return self not in _COUNTED_ONLY

    @classmethod
    def by_rank(cls, rank: int) -> Reason:
        return _ORDER[rank]


_ORDER: tuple[Reason, ...] = tuple(Reason)
_RANKS: dict[Reason, int] = {reason: index for index, reason in enumerate(_ORDER)}
_COUNTED_ONLY = frozenset({Reason.DUPLICATE, Reason.DEPRECATED_TYPE})
