"""The consumer test kit: a service's handlers fed what its contracts promise they will meet, no broker needed.

::

    report = run_consumer_kit(bundle, dispatcher, state=lambda: ledger.snapshot())
    report.assert_ok()              # AssertionError listing every case that failed

or, in pytest, with ``pytest_plugins = ["contract_platform.client.pytest_plugin"]``::

    def test_contracts(consumer_kit):
        consumer_kit(bundle, dispatcher, state=ledger.snapshot)

``dispatcher`` is the service's ``Dispatcher`` (the same object its ``GuardedConsumer`` runs: guard, handlers,
decoders). The kit builds each delivery as a publisher would (``envelope.amqp_properties``, real pika
``BasicProperties``, the encoded body) and dispatches it. The cases:

==========================  ===================================================================================
case                        passes when
==========================  ===================================================================================
``valid``                   every valid fixture of every version of the bundle the service can read (older and
                            newer majors through migration.yaml too) is handled: the handler returned
``unreadable``              a version the service may receive but cannot read (no migration goes that way) is
                            dead-lettered NOT_MIGRATABLE: listed in ``KitReport.unreadable``, never handled
``invalid``                 every invalid fixture is dead-lettered by the guard, twice with the same reason,
                            pointer and keyword, and never reaches the handler
``duplicate``               the first valid fixture of each version, delivered twice, is handled twice; with
                            ``state`` (a snapshot of the service's state), the state after the second equals
                            the state after the first: the handler is idempotent
``added-field``             a valid fixture with one more payload field (``kitAddedField``) is handled, or, where
                            the contract closes its model and its compatibility mode does not promise forward
                            reading (client.tolerance), dead-lettered PAYLOAD_INVALID by the guard
``unknown-enum``            for each enum the fixture fills, the value ``KIT_UNKNOWN_VALUE``: handled, the handler
                            seeing the value as sent (``passthrough``) or the fallback (``fallback:<VALUE>``);
                            dead-lettered PAYLOAD_INVALID with keyword ``enum`` under ``reject``
==========================  ===================================================================================

A handler that raises (other than ``Reject``) fails its case with the exception's type; a business ``Reject``
of a valid fixture fails it too (the fixtures are the contract's own examples of messages to take).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pika

from contract_platform.amqp.publisher import encode_compact
from contract_platform.catalog.documents import resolve_pointer
from contract_platform.client.bundle import Bundle
from contract_platform.client.consumer import DeadLetter, Dispatcher, Handled, Outcome, Requeue
from contract_platform.client.guard import Inspected, RejectReason
from contract_platform.client.tolerance import fallback_of
from contract_platform.envelope.properties import amqp_properties

__all__ = ["ADDED_FIELD", "UNKNOWN_VALUE", "KitCase", "KitReport", "delivery_of", "run_consumer_kit"]

ADDED_FIELD = "kitAddedField"
UNKNOWN_VALUE = "KIT_UNKNOWN_VALUE"


@dataclass(frozen=True)
class KitCase:
    case: str  # valid | unreadable | invalid | duplicate | added-field | unknown-enum
    message_type: str  # the version fed
    fixture: str
    ok: bool
    outcome: str  # what became of it: handled, dead-lettered <REASON> at <pointer>, requeued (why)
    detail: str = ""


@dataclass
class KitReport:
    cases: list[KitCase] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # versions the service may receive and cannot read

    @property
    def failures(self) -> list[KitCase]:
        return [case for case in self.cases if not case.ok]

    def assert_ok(self) -> None:
        failures = self.failures
        if failures:
            lines = [
                f"  {c.case} {c.message_type} {c.fixture}: {c.outcome}{' (' + c.detail + ')' if c.detail else ''}"
                for c in failures
            ]
            raise AssertionError(
                f"{len(failures)} of {len(self.cases)} consumer kit cases failed:\n" + "\n".join(lines)
            )


def delivery_of(envelope: Any) -> tuple[Any, bytes]:
    """(pika ``BasicProperties``, body) of an envelope, as the platform's publishers send it; an envelope those
    properties cannot be read from (an invalid fixture) gets what its metadata holds of them."""
    try:
        return pika.BasicProperties(**amqp_properties(envelope)), encode_compact(envelope)
    except (KeyError, TypeError, ValueError, AttributeError):
        metadata = envelope.get("metadata") if isinstance(envelope, dict) else None
        metadata = metadata if isinstance(metadata, dict) else {}
        message_id, message_type = metadata.get("messageId"), metadata.get("messageType")
        properties = pika.BasicProperties(
            content_type="application/json",
            headers={"schema-version": metadata.get("schemaVersion")},
            message_id=message_id if isinstance(message_id, str) else None,
            type=message_type if isinstance(message_type, str) else None,
        )
        return properties, encode_compact(envelope)


def run_consumer_kit(bundle: Bundle, dispatcher: Dispatcher, *, state: Callable[[], Any] | None = None) -> KitReport:
    """Every case of the module docstring against ``dispatcher``'s handlers."""
    report = KitReport()
    guard = dispatcher.guard
    for message_type in bundle.message_types:
        valid = list(bundle.fixtures(message_type, valid=True))
        probe = guard.inspect(*delivery_of(valid[0].document)) if valid else None
        if probe is not None and not isinstance(probe, Inspected):
            reason = getattr(probe, "reason", None)
            if reason is RejectReason.UNKNOWN_TYPE:
                continue  # neither read nor reachable: not this service's message
            report.unreadable.append(message_type)
            for fixture in valid:
                outcome = dispatcher.dispatch(*delivery_of(fixture.document))
                ok = isinstance(outcome, DeadLetter) and outcome.rejection.reason is RejectReason.NOT_MIGRATABLE
                report.cases.append(KitCase("unreadable", message_type, fixture.name, ok, _describe(outcome)))
            continue
        if not valid:
            continue
        for fixture in valid:
            outcome = dispatcher.dispatch(*delivery_of(fixture.document))
            report.cases.append(
                KitCase("valid", message_type, fixture.name, type(outcome) is Handled, _describe(outcome))
            )
        for fixture in bundle.fixtures(message_type, valid=False):
            report.cases.append(_invalid(dispatcher, message_type, fixture.name, fixture.document))
        first = valid[0]
        report.cases.append(_duplicate(dispatcher, message_type, first.name, first.document, state))
        report.cases.append(_added_field(bundle, dispatcher, message_type, first.name, first.document))
        report.cases.extend(_unknown_enums(bundle, dispatcher, message_type, first.name, first.document))
    return report


def _invalid(dispatcher: Dispatcher, message_type: str, name: str, document: Any) -> KitCase:
    outcomes = [dispatcher.dispatch(*delivery_of(copy.deepcopy(document))) for _ in range(2)]
    seen = [
        (o.rejection.reason, o.rejection.pointer, o.rejection.keyword)
        if isinstance(o, DeadLetter) and o.rejection.reason.origin == "contract"
        else None
        for o in outcomes
    ]
    ok = seen[0] is not None and seen[0] == seen[1]
    detail = "" if ok else ("judged differently the second time" if seen[0] is not None else "the guard let it through")
    return KitCase("invalid", message_type, name, ok, _describe(outcomes[0]), detail)


def _duplicate(
    dispatcher: Dispatcher, message_type: str, name: str, document: Any, state: Callable[[], Any] | None
) -> KitCase:
    properties, body = delivery_of(document)
    first = dispatcher.dispatch(properties, body)
    after_first = copy.deepcopy(state()) if state is not None else None
    second = dispatcher.dispatch(properties, body, redelivered=True)
    after_second = copy.deepcopy(state()) if state is not None else None
    handled = type(first) is Handled and type(second) is Handled
    same = state is None or after_first == after_second
    detail = "" if same else "the service's state changed when the same message came again"
    return KitCase(
        "duplicate", message_type, name, handled and same, f"{_describe(first)}, then {_describe(second)}", detail
    )


def _added_field(bundle: Bundle, dispatcher: Dispatcher, message_type: str, name: str, document: Any) -> KitCase:
    changed = copy.deepcopy(document)
    changed["payload"][ADDED_FIELD] = "a field of a later minor version"
    outcome = dispatcher.dispatch(*delivery_of(changed))
    closed = (
        isinstance(outcome, DeadLetter)
        and outcome.rejection.reason is RejectReason.PAYLOAD_INVALID
        and outcome.rejection.keyword in ("additionalProperties", "unevaluatedProperties")
    )
    ok = type(outcome) is Handled or closed
    detail = (
        "the contract closes its model (additionalProperties: false) under its compatibility mode" if closed else ""
    )
    return KitCase("added-field", message_type, name, ok, _describe(outcome), detail)


def _unknown_enums(
    bundle: Bundle, dispatcher: Dispatcher, message_type: str, name: str, document: Any
) -> Iterator[KitCase]:
    contract = bundle.contract(message_type)
    assert contract is not None
    schema = contract.payload_schema
    for path, node in _enum_places(schema, schema, document["payload"], ()):
        pointer = "/payload" + "".join(f"/{token}" for token in path)
        changed = copy.deepcopy(document)
        _set(changed["payload"], path, UNKNOWN_VALUE)
        properties, body = delivery_of(changed)
        view = dispatcher.guard.inspect(properties, body)  # what the handler is given (the guard is pure)
        outcome = dispatcher.dispatch(properties, body)
        policy = fallback_of(node)
        if policy is None:
            ok = (
                isinstance(outcome, DeadLetter)
                and outcome.rejection.reason is RejectReason.PAYLOAD_INVALID
                and outcome.rejection.keyword == "enum"
            )
            detail = f"{pointer}: policy reject, so the guard must refuse it"
        else:
            kind, fallback = policy
            expected = UNKNOWN_VALUE if kind == "passthrough" else fallback
            given = _value(view.envelope, pointer) if isinstance(view, Inspected) and not view.migrated else expected
            ok = type(outcome) is Handled and given == expected
            detail = f"{pointer}: policy {kind}, the handler sees {expected!r}" + (
                "" if given == expected else f", got {given!r}"
            )
        yield KitCase("unknown-enum", message_type, name, ok, _describe(outcome), detail)


def _enum_places(
    root: Mapping[str, Any], node: Any, instance: Any, path: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], Mapping[str, Any]]]:
    """(path in the payload, enum schema) of every enum the instance fills, through properties, items and local $ref."""
    seen = 0
    while (
        isinstance(node, Mapping) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#") and seen < 32
    ):
        try:
            node = resolve_pointer(root, node["$ref"][1:])
        except KeyError:
            return
        seen += 1
    if not isinstance(node, Mapping):
        return
    if "enum" in node and isinstance(instance, str) and path:
        yield path, node
        return
    properties = node.get("properties")
    if isinstance(properties, Mapping) and isinstance(instance, dict):
        for key, sub in properties.items():
            if key in instance:
                yield from _enum_places(root, sub, instance[key], (*path, key))
    items = node.get("items")
    if isinstance(items, Mapping) and isinstance(instance, list) and instance:
        yield from _enum_places(root, items, instance[0], (*path, 0))


def _set(document: Any, path: tuple[str | int, ...], value: Any) -> None:
    for token in path[:-1]:
        document = document[token]
    document[path[-1]] = value


def _value(envelope: Mapping[str, Any], pointer: str) -> Any:
    try:
        return resolve_pointer(envelope, pointer)
    except KeyError:
        return None


def _describe(outcome: Outcome) -> str:
    if isinstance(outcome, Handled):
        return "handled"
    if isinstance(outcome, DeadLetter):
        rejection = outcome.rejection
        where = f" at {rejection.pointer}" if rejection.pointer else ""
        keyword = f" ({rejection.keyword})" if rejection.keyword else ""
        return f"dead-lettered {rejection.reason}{where}{keyword}: {rejection.detail}"
    if isinstance(outcome, Requeue):
        return f"requeued: {outcome.why}"
    return repr(outcome)
