"""One function per lint rule. Each takes the contract and its catalogue and yields findings.

Rules judge whether a contract that *loads* is a *good* contract; shape problems (unknown keys,
wrong types, missing files) are the loader's and never reach here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from typing import Any

from contract_platform.catalog.loading import ENVELOPE_SCHEMA_PATH
from contract_platform.catalog.model import Catalog, Contract, Kind, Status
from contract_platform.catalog.pointers import schema_for_pointer, split_pointer
from contract_platform.catalog.schemas import dialect_markers, pattern_problems, subschemas
from contract_platform.envelope.properties import HEADER_FIELDS
from contract_platform.envelope.validation import EnvelopeValidator
from contract_platform.errors import PatternNotEvaluable
from contract_platform.lint.model import Finding, RuleId

__all__ = ["RULES", "Rule"]

Rule = Callable[[Contract, Catalog, EnvelopeValidator], Iterator[Finding]]

_IRREGULAR_PAST = frozenset(
    [
        "sent",
        "paid",
        "built",
        "made",
        "held",
        "sold",
        "bought",
        "won",
        "lost",
        "begun",
        "done",
        "drawn",
        "given",
        "taken",
        "written",
        "spent",
        "split",
        "set",
        "put",
        "cut",
        "shut",
        "read",
        "run",
        "rerun",
        "undone",
        "withdrawn",
        "chosen",
        "frozen",
        "broken",
        "bound",
        "found",
        "kept",
        "left",
        "met",
        "overridden",
        "overwritten",
        "shown",
        "known",
        "grown",
        "thrown",
        "torn",
        "worn",
    ]
)
_NOT_PAST = frozenset({"need", "feed", "seed", "speed", "bed", "embed", "shed", "red", "bleed", "breed"})
_MONEY_WORDS = frozenset({"amount", "price", "total", "subtotal", "cost", "fee", "balance", "money", "tax", "discount"})
_EMAIL_OR_URL = re.compile(r"^([^@\s]+@[^@\s]+\.[a-z]{2,}|https?://\S+)$", re.IGNORECASE)
_UNKNOWN_POLICY = re.compile(r"^(reject|passthrough|fallback:.+)$")


def _finding(contract: Contract, rule: RuleId, pointer: str, message: str, file: str | None = None) -> Finding:
    return Finding(file=file or str(contract.contract_file), pointer=pointer, rule=rule, message=message)


def _is_past_tense(word: str) -> bool:
    return word in _IRREGULAR_PAST or (word.endswith("ed") and len(word) > 3 and word not in _NOT_PAST)


def check_naming(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    words = contract.name.split("-")
    if len(words) < 2 or not all(words):
        yield _finding(
            contract,
            RuleId.NAMING,
            "/messageType",
            f"name {contract.name!r} should say entity and action, kebab-case (e.g. invoice-issued, create-order)",
        )


def check_routing_key(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    key = contract.transport.routing_key
    segments = key.split(".")
    expected_words = set(contract.name.split("-"))
    problems = []
    if len(segments) < 4:
        problems.append("it needs at least four segments")
    if segments[0] != contract.domain:
        problems.append(f"it must start with the domain {contract.domain!r}")
    if segments[-1] != f"v{contract.major}":
        problems.append(f"it must end with v{contract.major}")
    if set(segments[1:-1]) != expected_words:
        problems.append(f"its middle segments {segments[1:-1]} must be the words of the name {sorted(expected_words)}")
    if problems:
        example = f"{contract.domain}.{'.'.join(reversed(contract.name.split('-'))) if contract.kind is Kind.COMMAND else '.'.join(contract.name.split('-'))}.v{contract.major}"
        yield _finding(
            contract,
            RuleId.ROUTING_KEY_ALIGNED,
            "/transport/routingKey",
            f"routing key {key!r} is not aligned with {contract.message_type}: {'; '.join(problems)} (e.g. {example})",
        )


def check_version_major(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    major = int(contract.version.split(".")[0])
    if major != contract.major:
        yield _finding(
            contract,
            RuleId.VERSION_MAJOR,
            "/version",
            f"version {contract.version} has MAJOR {major} but the messageType is v{contract.major}; "
            f"a breaking change needs a new folder v{major}",
        )


def check_kind_tense(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    words = contract.name.split("-")
    past = [w for w in words if _is_past_tense(w)]
    if contract.kind is Kind.EVENT and not past:
        yield _finding(
            contract,
            RuleId.KIND_TENSE,
            "/messageType",
            f"event {contract.name!r} should be named in the past tense (e.g. {words[0]}-created): it reports a fact",
        )
    if contract.kind is Kind.COMMAND and past:
        yield _finding(
            contract,
            RuleId.KIND_TENSE,
            "/messageType",
            f"command {contract.name!r} should be imperative, verb first (e.g. create-{words[0]}), not {past[0]!r}",
        )


def check_owner_contact(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    contact = contract.owner.contact
    if not contact or not _EMAIL_OR_URL.match(contact):
        yield _finding(
            contract,
            RuleId.OWNER_CONTACT,
            "/owner/contact",
            "owner.contact must be an e-mail address or a URL where the owning team can be reached",
        )


def check_retention(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    r = contract.retention
    for key, value in (("queue", r.queue), ("dlq", r.dlq), ("archive", r.archive)):
        if value <= timedelta(0):
            yield _finding(
                contract, RuleId.RETENTION_WINDOWS, f"/retention/{key}", f"retention.{key} must be longer than 0"
            )
    if r.archive < max(r.queue, r.dlq):
        yield _finding(
            contract,
            RuleId.RETENTION_WINDOWS,
            "/retention/archive",
            "retention.archive must be at least as long as queue and dlq retention, or retirement cannot be proven",
        )


def _walk(node: Any, pointer: str = "", name: str | None = None) -> Iterator[tuple[str, str | None, Mapping[str, Any]]]:
    """(pointer, property name or None, subschema) for every subschema of a payload schema, at the
    schema positions of every draft (draft-07 tuple ``items``, ``additionalItems``, ``then``...)."""
    if not isinstance(node, Mapping):
        return
    yield pointer, name, node
    for keyword, key, child, here in subschemas(node, pointer):
        yield from _walk(child, here, str(key) if keyword == "properties" else None)


def _words(name: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)]


def _types(schema: Mapping[str, Any]) -> set[str]:
    declared = schema.get("type")
    return {declared} if isinstance(declared, str) else set(declared or [])


def check_money(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    for pointer, name, schema in _walk(contract.payload_schema):
        if name is None:
            continue
        is_money = schema.get("x-money") is True or bool(_MONEY_WORDS & set(_words(name)))
        if is_money and "number" in _types(schema):
            yield _finding(
                contract,
                RuleId.MONEY_NOT_NUMBER,
                pointer,
                f"money field {name!r} is a JSON number, which loses precision; use a decimal string "
                "(pattern ^-?[0-9]+(\\.[0-9]+)?$) or integer minor units",
                file=str(contract.schema_file),
            )


def check_timestamps(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    for pointer, name, schema in _walk(contract.payload_schema):
        if name is None:
            continue
        if name.endswith("At") or name.endswith("Timestamp"):
            wanted = {"date-time"}
        elif name.endswith("Date"):
            wanted = {"date", "date-time"}
        else:
            continue
        if schema.get("format") not in wanted or not _types(schema) <= {"string", "null"}:
            yield _finding(
                contract,
                RuleId.TIMESTAMP_FORMAT,
                pointer,
                f"{name!r} looks like a time; declare it as a string with format {sorted(wanted)[-1]!r} (UTC ISO-8601)",
                file=str(contract.schema_file),
            )


def check_enums(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    for pointer, _name, schema in _walk(contract.payload_schema):
        if "enum" not in schema:
            continue
        policy = schema.get("x-unknownValuePolicy")
        if not isinstance(policy, str) or not _UNKNOWN_POLICY.match(policy):
            yield _finding(
                contract,
                RuleId.ENUM_UNKNOWN_POLICY,
                pointer,
                "enum without an unknown-value policy: add x-unknownValuePolicy "
                "(reject | passthrough | fallback:<VALUE>) so consumers know what to do with a new value",
                file=str(contract.schema_file),
            )
        elif policy.startswith("fallback:") and policy.split(":", 1)[1] not in schema["enum"]:
            yield _finding(
                contract,
                RuleId.ENUM_UNKNOWN_POLICY,
                pointer,
                f"x-unknownValuePolicy falls back to {policy.split(':', 1)[1]!r}, which is not one of the enum's values",
                file=str(contract.schema_file),
            )


def _pointer_resolves(contract: Contract, catalog: Catalog, pointer: str) -> bool:
    try:
        tokens = split_pointer(pointer)
    except ValueError:
        return False
    if tokens[0] == "payload":
        return schema_for_pointer(contract.payload_schema, tokens[1:]) is not None
    return schema_for_pointer(catalog.envelope_schema, tokens) is not None


def check_pointers(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    named = [("/idempotencyKey", contract.idempotency_key)]
    if contract.ordering:
        named += [("/ordering/key", contract.ordering.key), ("/ordering/sequence", contract.ordering.sequence)]
    named += [(f"/pii/fields/{i}", field) for i, field in enumerate(contract.pii.fields)]
    for where, pointer in named:
        if not _pointer_resolves(contract, catalog, pointer):
            yield _finding(
                contract,
                RuleId.POINTER_EXISTS,
                where,
                f"{pointer!r} does not name a field of the envelope or payload schema (write /metadata/... or /payload/...)",
            )
    if contract.pii.fields and not contract.pii.contains_pii:
        yield _finding(
            contract, RuleId.POINTER_EXISTS, "/pii/containsPii", "pii.fields are listed but containsPii is false"
        )


def check_pii_transport(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    header_pointers = {f"/metadata/{field}": header for header, field in HEADER_FIELDS.items()}
    property_pointers = {"/metadata/messageId": "message_id", "/metadata/correlationId": "correlation_id"}
    routing_words = set(contract.transport.routing_key.lower().split("."))
    for index, pointer in enumerate(contract.pii.fields):
        where = f"/pii/fields/{index}"
        if pointer in header_pointers:
            yield _finding(
                contract,
                RuleId.PII_NOT_IN_TRANSPORT,
                where,
                f"PII field {pointer} is copied into the AMQP header {header_pointers[pointer]!r}; keep PII in the payload",
            )
        if pointer in property_pointers or pointer == contract.idempotency_key:
            yield _finding(
                contract,
                RuleId.PII_NOT_IN_TRANSPORT,
                where,
                f"PII field {pointer} feeds an AMQP property; use an opaque id instead",
            )
        if contract.ordering and pointer == contract.ordering.key:
            yield _finding(
                contract,
                RuleId.PII_NOT_IN_TRANSPORT,
                where,
                f"PII field {pointer} is the ordering key, visible to the broker",
            )
        last = pointer.rsplit("/", 1)[-1].lower()
        if last and last in routing_words:
            yield _finding(
                contract,
                RuleId.PII_NOT_IN_TRANSPORT,
                "/transport/routingKey",
                f"routing key names the PII field {last!r}; routing keys are visible to every broker user",
            )


def check_fixtures_present(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    valid = sum(1 for f in contract.fixtures if f.valid)
    invalid = sum(1 for f in contract.fixtures if not f.valid)
    if valid < 2 or invalid < 1:
        yield _finding(
            contract,
            RuleId.FIXTURES_PRESENT,
            "",
            f"needs at least 2 fixtures/valid/*.json and 1 fixtures/invalid/*.json (has {valid} and {invalid})",
        )


def check_patterns(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    """Every regular expression of the payload schema, and of the envelope schema every message passes (reported
    once: findings are a set), is one the platform evaluates in linear time."""
    schemas = [
        (str(contract.directory / "payload.schema.json"), contract.payload_schema),
        (str(catalog.root / ENVELOPE_SCHEMA_PATH), catalog.envelope_schema),
    ]
    for file, schema in schemas:
        for problem in pattern_problems(file, schema):
            yield Finding(problem.file, problem.pointer, RuleId.PATTERN_EVALUABLE, problem.message)


def check_fixture_behaviour(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    for fixture in contract.fixtures:
        try:
            found, issues = validator.issues(fixture.document)
        except PatternNotEvaluable:
            continue  # no verdict on this fixture: check_patterns reports the pattern with its pointer
        if found is not None and found.message_type != contract.message_type:
            issues = [*issues]  # a fixture of another type is a metadata problem, reported below
        if fixture.valid and issues:
            first = issues[0]
            yield Finding(
                str(fixture.path),
                first.pointer,
                RuleId.FIXTURE_VALID_REJECTED,
                f"valid fixture is rejected: {first.message}"
                + (f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""),
            )
        if not fixture.valid and not issues:
            yield Finding(
                str(fixture.path),
                "",
                RuleId.FIXTURE_INVALID_ACCEPTED,
                "invalid fixture is accepted by the envelope and payload schemas; the schema is looser than intended",
            )


def check_fixture_metadata(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    for fixture in contract.fixtures:
        if not fixture.valid or not isinstance(fixture.document, Mapping):
            continue
        metadata = fixture.document.get("metadata")
        if not isinstance(metadata, Mapping):
            continue
        expected = {"messageType": contract.message_type, "schemaVersion": contract.major}
        for field, value in expected.items():
            if metadata.get(field) != value:
                yield Finding(
                    str(fixture.path),
                    f"/metadata/{field}",
                    RuleId.FIXTURE_METADATA,
                    f"{field} is {metadata.get(field)!r}, the contract says {value!r}",
                )
        producers = contract.producers
        if producers is not None and metadata.get("producer") not in producers:
            says = repr(producers[0]) if contract.kind is Kind.EVENT else f"one of its callers {list(producers)}"
            yield Finding(
                str(fixture.path),
                "/metadata/producer",
                RuleId.FIXTURE_METADATA,
                f"producer is {metadata.get('producer')!r}, the contract says {says}",
            )
        version = str(metadata.get("messageVersion", ""))
        if version.split(".")[0] != str(contract.major):
            yield Finding(
                str(fixture.path),
                "/metadata/messageVersion",
                RuleId.FIXTURE_METADATA,
                f"messageVersion {version!r} must have MAJOR {contract.major}",
            )
        # partitionKey only where the ordering key is that field (it may point into the payload instead)
        keyed = contract.ordering is not None and contract.ordering.key == "/metadata/partitionKey"
        required = {"tenantId": contract.tenancy_required, "partitionKey": keyed}
        for field, needed in required.items():
            if needed and not metadata.get(field):
                yield Finding(
                    str(fixture.path),
                    f"/metadata/{field}",
                    RuleId.FIXTURE_METADATA,
                    f"{field} is required by this contract ({'tenancy' if field == 'tenantId' else 'ordering'})",
                )


def check_schema_dialect(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    """A payload schema that uses keywords of both draft families: in the draft it is read in, one family's
    keywords assert nothing (catalog.schemas.read_dialect)."""
    markers = dialect_markers(contract.payload_schema)
    if len({m.family for m in markers}) < 2:
        return
    read_as = contract.dialect or "its default draft"
    file = str(contract.schema_file)
    by_family: dict[str, list[str]] = {}
    for marker in markers:
        by_family.setdefault(marker.family, []).append(str(marker))
    marker = markers[0]  # one finding per schema, at its first draft-specific keyword
    others = next(", ".join(found[:3]) for family, found in by_family.items() if family != marker.family)
    yield Finding(
        file,
        marker.pointer,
        RuleId.SCHEMA_DIALECT_MIXED,
        f"{marker.keyword} is a {marker.family} keyword, but the schema also uses {others}; it is read as "
        f"{read_as}, where keywords of the other family assert nothing. Spell the schema in one family, "
        "and declare it with $schema",
    )


def check_superseded_by(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    needs = contract.status.rank >= Status.SUPERSEDED.rank
    target = contract.superseded_by
    if needs and not target:
        yield _finding(
            contract,
            RuleId.SUPERSEDED_BY,
            "/supersededBy",
            f"status {contract.status} needs supersededBy: the contract that replaces it",
        )
    if target and target == contract.message_type:
        yield _finding(contract, RuleId.SUPERSEDED_BY, "/supersededBy", "supersededBy names the contract itself")
    elif target and target not in catalog:
        yield _finding(
            contract, RuleId.SUPERSEDED_BY, "/supersededBy", f"supersededBy {target!r} is not in the catalogue"
        )


def check_sunset(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    if contract.status.rank >= Status.DEPRECATED.rank and contract.sunset is None:
        yield _finding(
            contract,
            RuleId.SUNSET,
            "/sunset",
            f"status {contract.status} needs sunset: the date consumers must move by",
        )


def check_migration_present(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    predecessor = catalog.predecessor(contract)
    if predecessor is None:
        return
    if contract.migration is None:
        yield Finding(
            str(contract.migration_file),
            "",
            RuleId.MIGRATION_PRESENT,
            f"{predecessor.message_type} precedes this major but there is no migration.yaml saying how its messages become this version",
        )
        return
    for key, value in (("from", predecessor.message_type), ("to", contract.message_type)):
        if contract.migration.get(key) != value:
            yield Finding(
                str(contract.migration_file),
                f"/{key}",
                RuleId.MIGRATION_PRESENT,
                f"{key} is {contract.migration.get(key)!r}, expected {value!r}",
            )


def check_command_callers(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    if contract.kind is Kind.COMMAND and not contract.callers:
        yield _finding(
            contract,
            RuleId.COMMAND_CALLERS,
            "/callers",
            "command without callers: the envelope quality check of metadata.producer "
            "(producer-is-owner-service) is off for it; declare callers: [<service>, ...], "
            "the services allowed to send it",
        )


def check_consumer_queues(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    for index, consumer in enumerate(contract.consumers):
        expected = f"{consumer.service}.{contract.message_type}"
        if consumer.queue != expected:
            yield _finding(
                contract,
                RuleId.CONSUMER_QUEUE_NAMING,
                f"/consumers/{index}/queue",
                f"queue {consumer.queue!r} should be named {expected!r} (<service>.<messageType>)",
            )


def check_consumer_reads(contract: Contract, catalog: Catalog, validator: EnvelopeValidator) -> Iterator[Finding]:
    """What each consumer reads (docs/consumer-impact.md): every ``reads`` pointer names a place of the envelope
    or payload schema (``*`` over array items); a ``readerSchema`` is a file of the contract folder that compiles
    offline; a consumer with neither reads everything."""
    from contract_platform.catalog.schemas import schema_problems
    from contract_platform.impact.pointers import PositionIndex, parse_read

    indexes: dict[str, PositionIndex] = {}
    for index, consumer in enumerate(contract.consumers):
        where = f"/consumers/{index}"
        for number, pointer in enumerate(consumer.reads or ()):
            try:
                tokens = parse_read(pointer)
            except ValueError:
                tokens = ()
            side = "payload" if tokens[:1] == ("payload",) else "envelope"
            if side not in indexes:
                indexes[side] = PositionIndex(contract.payload_schema if side == "payload" else catalog.envelope_schema)
            if not tokens or not indexes[side].resolves(tokens[1:] if side == "payload" else tokens):
                yield _finding(
                    contract,
                    RuleId.CONSUMER_READS,
                    f"{where}/reads/{number}",
                    f"{consumer.service} reads {pointer!r}, which names no field of the envelope or payload schema "
                    "(write /payload/... or /metadata/..., with * for array items, e.g. /payload/lines/*/sku)",
                )
        if consumer.reader_schema is not None:
            if consumer.reader_schema_problem:
                yield _finding(
                    contract, RuleId.CONSUMER_READER_SCHEMA, f"{where}/readerSchema", consumer.reader_schema_problem
                )
            elif consumer.reader_schema_document is not None:
                file = str(contract.directory / consumer.reader_schema)
                for problem in schema_problems(file, consumer.reader_schema_document, default=catalog.default_dialect):
                    yield Finding(problem.file, problem.pointer, RuleId.CONSUMER_READER_SCHEMA, problem.message)
        if not consumer.declares_reads:
            yield _finding(
                contract,
                RuleId.CONSUMER_READS_EVERYTHING,
                where,
                f"{consumer.service} declares neither reads nor readerSchema: it is taken to read everything, so every "
                "breaking change breaks it"
                + (
                    " and the readers perspective cannot accept any"
                    if contract.compatibility_perspective == "readers"
                    else ""
                ),
            )


RULES: tuple[Rule, ...] = (
    check_naming,
    check_routing_key,
    check_version_major,
    check_kind_tense,
    check_owner_contact,
    check_retention,
    check_money,
    check_timestamps,
    check_enums,
    check_pointers,
    check_pii_transport,
    check_fixtures_present,
    check_patterns,
    check_fixture_behaviour,
    check_fixture_metadata,
    check_schema_dialect,
    check_superseded_by,
    check_sunset,
    check_migration_present,
    check_consumer_queues,
    check_command_callers,
    check_consumer_reads,
)
