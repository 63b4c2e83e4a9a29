"""The columns of the envelopes frame: what ``spark_jobs/envelope_quality.py`` produces and the suites read.

One row per archived delivery (redeliveries left out), read from the archive record
(docs/design.md#archive-record) and its body's ``metadata``. A body that is not a JSON envelope gives nulls, never an
error: whether it is valid is the archive validation's business. Empty strings read as absent
(null) in the identifier columns, so "present" means present and non-empty.

=======================  =========  ================================================================
column                   type       from
=======================  =========  ================================================================
messageId ... partitionKey  string  ``body.metadata.<name>`` (schemaVersion: int; not an integer
                                     there -> null)
contentType              string     ``properties.contentType``; absent -> ``""`` (so the set check
                                     counts it)
deliveryMode             int        ``properties.deliveryMode``; absent -> 1 (AMQP: non-persistent)
bodyBytes                long       UTF-8 bytes of ``body``, else decoded bytes of ``bodyBase64``
routingKey, exchange     string     the record
receivedAt               string     the record (as written, for the format check)
redelivered              boolean    the record (absent -> false)
contractType             string     whose suite judges the row: ``messageType`` when catalogued,
                                     else the contract whose exchange and routing key the delivery
                                     came by, else null (counted as unassigned)
occurredAt_ts ...        timestamp  the three times parsed (null when unreadable)
occurredAt_minus_skew    timestamp  occurredAt - the contract's quality.clockSkew
publishedAt_minus_skew   timestamp  publishedAt - the contract's quality.clockSkew
partitionKeyMessages     long       envelopes of the same contractType sharing this partitionKey
=======================  =========  ================================================================
"""

from __future__ import annotations

__all__ = [
    "BODY_BYTES",
    "CONTENT_TYPE",
    "CONTRACT_TYPE",
    "DELIVERY_MODE",
    "DERIVED",
    "ENVELOPE",
    "METADATA",
    "MINUS_SKEW",
    "PARTITION_KEY_MESSAGES",
    "RECORD",
    "REQUIRED",
    "TIMES",
    "parsed",
]

METADATA = (
    "messageId",
    "messageType",
    "schemaVersion",
    "messageVersion",
    "producer",
    "occurredAt",
    "publishedAt",
    "correlationId",
    "causationId",
    "traceId",
    "tenantId",
    "partitionKey",
)
CONTENT_TYPE = "contentType"
DELIVERY_MODE = "deliveryMode"
BODY_BYTES = "bodyBytes"
RECORD = ("receivedAt", CONTENT_TYPE, DELIVERY_MODE, BODY_BYTES, "routingKey", "exchange", "redelivered")
ENVELOPE = (*METADATA, *RECORD)  # what ``envelopes(records)`` returns, in this order

TIMES = ("occurredAt", "publishedAt", "receivedAt")
CONTRACT_TYPE = "contractType"
PARTITION_KEY_MESSAGES = "partitionKeyMessages"


def parsed(time_column: str) -> str:
    """``occurredAt`` -> ``occurredAt_ts``: the time as a timestamp."""
    return f"{time_column}_ts"


MINUS_SKEW = {name: f"{name}_minus_skew" for name in ("occurredAt", "publishedAt")}
DERIVED = (CONTRACT_TYPE, *(parsed(t) for t in TIMES), *MINUS_SKEW.values(), PARTITION_KEY_MESSAGES)
REQUIRED = (*ENVELOPE, *DERIVED)  # what ``run_suite`` needs
