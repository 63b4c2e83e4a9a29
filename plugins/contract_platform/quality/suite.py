"""Envelope quality expectations, built from the catalogue: one table, one suite per message type.

``suite_for(contract)`` turns the table below into typed ``ExpectationSpec`` values; nobody writes a
suite by hand. Each runs on the type's envelopes (``quality.columns``; redeliveries left out) as a
Great Expectations column-map expectation, so ``mostly`` means the same everywhere: the share of
judged rows that must meet it. It comes from the contract (``quality.mostly: {<id>: 0.9}``, read
through ``quality.threshold``), 1.0 unless the table gives another default. As in GX, value checks
skip rows where the value is missing; presence is checked by its own expectations.

==============================  ==========================  =========================================
id (stable)                     checks                      applies / notes
==============================  ==========================  =========================================
message-id-not-null             messageId present           always
message-id-unique               messageId unique            always; every copy of a reused id counts
message-type-registered         messageType is the type     always; catches deliveries on the type's
                                                            exchange and routing key whose messageType
                                                            is not in the catalogue
schema-version-equals-major     schemaVersion = MAJOR       always
message-version-semver-major    messageVersion MAJOR.x.y    always
occurred-not-after-published    occurredAt <= publishedAt   always; both times readable; tolerance
                                + clock skew                quality.clockSkew (default 5s)
published-not-after-received    publishedAt <= receivedAt   as above
                                + clock skew
occurred-at-utc-iso8601         ISO-8601, ends Z/+00:00     always
published-at-utc-iso8601        ISO-8601, ends Z/+00:00     always
received-at-utc-iso8601         ISO-8601, ends Z/+00:00     always (the archiver's receivedAt)
correlation-id-present          correlationId present       always
causation-id-present            causationId present         events only
trace-id-lowercase-hex          32 lowercase hex digits     when present
tenant-id-present               tenantId present            ``tenancy: {required: true}``
producer-is-owner-service       producer is one of the      events: owner.service; commands: the
                                contract's producers        declared ``callers`` (the owner handles a
                                                            command, it need not send it); skipped,
                                                            and the report says so, for a command
                                                            that declares no callers
content-type-json               AMQP content type           always
                                application/json
delivery-mode-persistent        AMQP delivery mode 2        always
body-within-budget              bodyBytes <= maxBodyBytes   always (``limits.maxBodyBytes``, 256 KiB)
routing-key-single-value        routing key = the           always: exactly one value per type; a
                                contract's routingKey       key that embeds entity ids fails it
partition-key-present           partitionKey present        ordering key ``/metadata/partitionKey``
partition-key-cardinality       the row's partitionKey is   as above; default mostly 0.5; judged only
                                shared by >= 2 envelopes    from 20 envelopes of the type on
                                of the type in the window
==============================  ==========================  =========================================

**Partition key cardinality.** A partition key exists to keep one entity's messages in order, so
realistic traffic carries several messages per key (created, updated, issued...). A key minted per
message (a messageId, a timestamp) orders nothing and grows without bound. The rule: at least
``mostly`` (default 0.5) of a type's envelopes in the window share their partition key with another
envelope of the type. With 1 message per key the share is 0; with 3 per key it is 1. Below 20
envelopes a window cannot tell, so the expectation is skipped (and the report says so). A type
whose entities really emit one message each sets ``quality: {mostly: {partition-key-cardinality: 0}}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from contract_platform.catalog.model import Contract, Kind
from contract_platform.durations import format_duration
from contract_platform.errors import CatalogError, Problem
from contract_platform.quality import columns as col

__all__ = [
    "CARDINALITY_MIN_ROWS",
    "RULES",
    "UTC_ISO8601",
    "ExpectationId",
    "ExpectationSpec",
    "suite_for",
]


class ExpectationId(StrEnum):
    """Stable expectation ids (the module docstring's table); contracts name them in ``quality.mostly``."""

    MESSAGE_ID_NOT_NULL = "message-id-not-null"
    MESSAGE_ID_UNIQUE = "message-id-unique"
    MESSAGE_TYPE_REGISTERED = "message-type-registered"
    SCHEMA_VERSION_EQUALS_MAJOR = "schema-version-equals-major"
    MESSAGE_VERSION_SEMVER_MAJOR = "message-version-semver-major"
    OCCURRED_NOT_AFTER_PUBLISHED = "occurred-not-after-published"
    PUBLISHED_NOT_AFTER_RECEIVED = "published-not-after-received"
    OCCURRED_AT_UTC = "occurred-at-utc-iso8601"
    PUBLISHED_AT_UTC = "published-at-utc-iso8601"
    RECEIVED_AT_UTC = "received-at-utc-iso8601"
    CORRELATION_ID_PRESENT = "correlation-id-present"
    CAUSATION_ID_PRESENT = "causation-id-present"
    TRACE_ID_LOWERCASE_HEX = "trace-id-lowercase-hex"
    TENANT_ID_PRESENT = "tenant-id-present"
    PRODUCER_IS_OWNER_SERVICE = "producer-is-owner-service"
    CONTENT_TYPE_JSON = "content-type-json"
    DELIVERY_MODE_PERSISTENT = "delivery-mode-persistent"
    BODY_WITHIN_BUDGET = "body-within-budget"
    ROUTING_KEY_SINGLE_VALUE = "routing-key-single-value"
    PARTITION_KEY_PRESENT = "partition-key-present"
    PARTITION_KEY_CARDINALITY = "partition-key-cardinality"


@dataclass(frozen=True)
class ExpectationSpec:
    """One expectation of one type's suite, ready for Great Expectations (``configuration()``)."""

    id: str
    gx_type: str
    kwargs: Mapping[str, Any]
    mostly: float
    description: str
    min_rows: int = 0  # judged only when the type has at least this many envelopes in the window
    skip: str | None = None  # why the contract leaves it unjudged (the report lists it as skipped)

    def configuration(self) -> dict[str, Any]:
        """What ``ExpectationConfiguration(**...)`` takes: the platform id travels in ``meta``."""
        return {
            "type": self.gx_type,
            "kwargs": {**self.kwargs, "mostly": self.mostly},
            "meta": {"id": self.id},
            "description": f"{self.id}: {self.description}",  # the id, as evidence names it, in the Data Docs
        }


# Groups are non-capturing: the same pattern on Spark (Java) and pandas (Python ``re``, whose ``str.contains`` warns
# of capturing groups it would not return).
UTC_ISO8601 = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|\+00:00)$"
TRACE_ID = r"^[0-9a-f]{32}$"
CONTENT_TYPE = "application/json"
PERSISTENT = 2
PARTITION_KEY_POINTER = "/metadata/partitionKey"
CARDINALITY_MIN_ROWS = 20

NOT_NULL = "expect_column_values_to_not_be_null"
UNIQUE = "expect_column_values_to_be_unique"
IN_SET = "expect_column_values_to_be_in_set"
REGEX = "expect_column_values_to_match_regex"
BETWEEN = "expect_column_values_to_be_between"
PAIR_GREATER = "expect_column_pair_values_a_to_be_greater_than_b"


@dataclass(frozen=True)
class _Rule:
    gx_type: str
    kwargs: Callable[[Contract], dict[str, Any]]
    describe: Callable[[Contract], str]
    applies: Callable[[Contract], bool] = lambda contract: True
    default_mostly: float = 1.0
    min_rows: int = 0
    # why the rule applies but cannot be judged for this contract (None: it can)
    skip: Callable[[Contract], str | None] = lambda contract: None


def _skew(contract: Contract) -> str:
    return format_duration(contract.quality.clock_skew)


def _orders_by_partition_key(contract: Contract) -> bool:
    return contract.ordering is not None and contract.ordering.key == PARTITION_KEY_POINTER


def _describe_producers(contract: Contract) -> str:
    if contract.kind is Kind.EVENT:
        return f"producer is the owner's service {contract.owner.service}"
    return f"producer is a declared caller of the command: {', '.join(contract.producers or ('(none declared)',))}"


def _no_callers(contract: Contract) -> str | None:
    if contract.producers is not None:
        return None
    return (
        f"{contract.message_type} is a command without callers in contract.yaml: nobody to check the producer "
        "against; declare callers: [<service>, ...] to turn the check on"
    )


def _not_null(column: str) -> Callable[[Contract], dict[str, Any]]:
    return lambda contract: {"column": column}


def _utc(column: str) -> _Rule:
    return _Rule(REGEX, lambda c: {"column": column, "regex": UTC_ISO8601}, lambda c: f"{column} is UTC ISO-8601")


def _not_after(earlier: str, later: str) -> _Rule:
    return _Rule(
        PAIR_GREATER,
        lambda c: {
            "column_A": col.parsed(later),
            "column_B": col.MINUS_SKEW[earlier],
            "or_equal": True,
            "ignore_row_if": "either_value_is_missing",
        },
        lambda c: f"{earlier} <= {later} + {_skew(c)} clock skew",
    )


RULES: Mapping[ExpectationId, _Rule] = {
    ExpectationId.MESSAGE_ID_NOT_NULL: _Rule(NOT_NULL, _not_null("messageId"), lambda c: "messageId is present"),
    ExpectationId.MESSAGE_ID_UNIQUE: _Rule(
        UNIQUE, _not_null("messageId"), lambda c: "messageId is unique among the type's envelopes (not redelivered)"
    ),
    ExpectationId.MESSAGE_TYPE_REGISTERED: _Rule(
        IN_SET,
        lambda c: {"column": "messageType", "value_set": [c.message_type]},
        lambda c: f"messageType is the registered {c.message_type} on its exchange and routing key",
    ),
    ExpectationId.SCHEMA_VERSION_EQUALS_MAJOR: _Rule(
        IN_SET,
        lambda c: {"column": "schemaVersion", "value_set": [c.major]},
        lambda c: f"schemaVersion is {c.major}, the type's major",
    ),
    ExpectationId.MESSAGE_VERSION_SEMVER_MAJOR: _Rule(
        REGEX,
        lambda c: {"column": "messageVersion", "regex": rf"^{c.major}\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)$"},
        lambda c: f"messageVersion is semver {c.major}.MINOR.PATCH",
    ),
    ExpectationId.OCCURRED_NOT_AFTER_PUBLISHED: _not_after("occurredAt", "publishedAt"),
    ExpectationId.PUBLISHED_NOT_AFTER_RECEIVED: _not_after("publishedAt", "receivedAt"),
    ExpectationId.OCCURRED_AT_UTC: _utc("occurredAt"),
    ExpectationId.PUBLISHED_AT_UTC: _utc("publishedAt"),
    ExpectationId.RECEIVED_AT_UTC: _utc("receivedAt"),
    ExpectationId.CORRELATION_ID_PRESENT: _Rule(
        NOT_NULL, _not_null("correlationId"), lambda c: "correlationId is present"
    ),
    ExpectationId.CAUSATION_ID_PRESENT: _Rule(
        NOT_NULL,
        _not_null("causationId"),
        lambda c: "causationId is present (events are caused by something)",
        applies=lambda c: c.kind is Kind.EVENT,
    ),
    ExpectationId.TRACE_ID_LOWERCASE_HEX: _Rule(
        REGEX,
        lambda c: {"column": "traceId", "regex": TRACE_ID},
        lambda c: "traceId, when present, is 32 lowercase hex digits",
    ),
    ExpectationId.TENANT_ID_PRESENT: _Rule(
        NOT_NULL,
        _not_null("tenantId"),
        lambda c: "tenantId is present (the contract requires tenancy)",
        applies=lambda c: c.tenancy_required,
    ),
    ExpectationId.PRODUCER_IS_OWNER_SERVICE: _Rule(
        IN_SET,
        lambda c: {"column": "producer", "value_set": list(c.producers or ())},
        _describe_producers,
        skip=_no_callers,
    ),
    ExpectationId.CONTENT_TYPE_JSON: _Rule(
        IN_SET,
        lambda c: {"column": col.CONTENT_TYPE, "value_set": [CONTENT_TYPE]},
        lambda c: f"AMQP content type is {CONTENT_TYPE}",
    ),
    ExpectationId.DELIVERY_MODE_PERSISTENT: _Rule(
        IN_SET,
        lambda c: {"column": col.DELIVERY_MODE, "value_set": [PERSISTENT]},
        lambda c: f"AMQP delivery mode is persistent ({PERSISTENT})",
    ),
    ExpectationId.BODY_WITHIN_BUDGET: _Rule(
        BETWEEN,
        lambda c: {"column": col.BODY_BYTES, "min_value": 0, "max_value": c.max_body_bytes},
        lambda c: f"body is at most {c.max_body_bytes} bytes (limits.maxBodyBytes)",
    ),
    ExpectationId.ROUTING_KEY_SINGLE_VALUE: _Rule(
        IN_SET,
        lambda c: {"column": "routingKey", "value_set": [c.transport.routing_key]},
        lambda c: f"one routing key per type: {c.transport.routing_key} (a key with entity ids in it grows with them)",
    ),
    ExpectationId.PARTITION_KEY_PRESENT: _Rule(
        NOT_NULL,
        _not_null("partitionKey"),
        lambda c: "partitionKey is present (the contract orders by it)",
        applies=_orders_by_partition_key,
    ),
    ExpectationId.PARTITION_KEY_CARDINALITY: _Rule(
        BETWEEN,
        lambda c: {"column": col.PARTITION_KEY_MESSAGES, "min_value": 2},
        lambda c: "partitionKey is shared by several envelopes of the type (a key unique per message orders nothing)",
        applies=_orders_by_partition_key,
        default_mostly=0.5,
        min_rows=CARDINALITY_MIN_ROWS,
    ),
}
_MISSING = set(ExpectationId) - set(RULES)
if _MISSING:  # a missing rule is a bug, not a default
    raise AssertionError(f"expectation ids without a rule: {sorted(_MISSING)}")


def _mostly(contract: Contract, expectation: ExpectationId, default: float) -> float:
    return contract.quality.threshold(expectation) if expectation in contract.quality.mostly else default


def _unknown_thresholds(contract: Contract) -> list[Problem]:
    known = {str(e) for e in ExpectationId}
    return [
        Problem(
            str(contract.contract_file),
            f"/quality/mostly/{name}",
            f"{name!r} is not an envelope quality expectation id; use one of {', '.join(sorted(known))}",
        )
        for name in sorted(contract.quality.mostly)
        if name not in known
    ]


def suite_for(contract: Contract) -> list[ExpectationSpec]:
    """The expectations that apply to ``contract``, in table order.

    Raises ``CatalogError`` when ``quality.mostly`` names an id the table does not have (a typo
    would otherwise silently leave the default threshold in place).
    """
    problems = _unknown_thresholds(contract)
    if problems:
        raise CatalogError(problems)
    return [
        ExpectationSpec(
            id=str(expectation),
            gx_type=rule.gx_type,
            kwargs=rule.kwargs(contract),
            mostly=_mostly(contract, expectation, rule.default_mostly),
            description=rule.describe(contract),
            min_rows=rule.min_rows,
            skip=rule.skip(contract),
        )
        for expectation, rule in RULES.items()
        if rule.applies(contract)
    ]
