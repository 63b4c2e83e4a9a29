"""The fast path of THE validator: jsonschema-rs answers "valid?", ``EnvelopeValidator`` explains "why not".

Verdicts equal ``EnvelopeValidator``'s by construction where the two libraries can differ:

* ``format`` is never judged by jsonschema-rs (its formats disagree with the jsonschema library's:
  it accepts a leap second ``23:59:60Z`` that rfc3339-validator rejects). Where every ``format`` of
  a schema sits under ``properties``, ``items``, ``allOf`` and local ``$ref`` only, jsonschema-rs
  runs with formats off and the values at those places are then checked with the jsonschema
  library's own format functions; otherwise jsonschema-rs calls those functions back itself.
* regular expressions run on jsonschema-rs's linear ``regex`` engine (``RegexOptions``), and on it only
  where that engine reads them as ``contract_platform.patterns`` does (``reads_alike``: its ``.``
  matches U+2028, its ``\\b`` is Unicode-aware). A schema with any other ``pattern`` has jsonschema-rs's
  ``pattern`` keyword replaced by ``contract_platform.patterns``, the search the jsonschema library is
  given (``catalog.schemas``); one with ``patternProperties`` anywhere is left to ``EnvelopeValidator``.
* whatever jsonschema-rs rejects, or cannot take (a string with a lone surrogate), is validated
  again by ``EnvelopeValidator``, whose issues (pointers and messages) are returned.

So a valid record (the common case) costs one jsonschema-rs pass and a few format checks; an
invalid one costs both passes. Without jsonschema-rs installed everything goes to ``EnvelopeValidator``.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from contract_platform.catalog.documents import resolve_pointer
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.catalog.schemas import subschemas, validator_class
from contract_platform.envelope.validation import EnvelopeValidator, SchemaIssue
from contract_platform.patterns import compile_pattern, reads_alike

__all__ = ["FastValidator", "SchemaCheck", "format_locations"]

# Every format jsonschema-rs knows, for the schemas it must call back on.
_RS_FORMATS = (
    "date", "date-time", "duration", "email", "hostname", "idn-email", "idn-hostname", "ipv4", "ipv6",
    "iri", "iri-reference", "json-pointer", "regex", "relative-json-pointer", "time", "uri",
    "uri-reference", "uri-template", "uuid",
)  # fmt: skip
# Keywords under which a value's place cannot be told from the schema alone (or that apply conditionally).
_UNLOCATABLE = (
    "anyOf", "oneOf", "not", "if", "then", "else", "additionalProperties", "patternProperties",
    "prefixItems", "contains", "dependentSchemas", "propertyNames", "unevaluatedProperties",
    "unevaluatedItems", "additionalItems", "dependencies", "$dynamicRef", "$recursiveRef",
)  # fmt: skip
ANY_ITEM = "*"  # a path token that stands for every item of an array
Location = tuple[tuple[str, ...], str]  # (path from the instance root, format name)


class _Unlocatable(Exception):
    pass


def _has_format(root: Mapping[str, Any], node: Any, seen: set[str]) -> bool:
    """Conservatively: does ``node`` (following local $refs) hold a ``format`` keyword anywhere?"""
    if isinstance(node, list):
        return any(_has_format(root, item, seen) for item in node)
    if not isinstance(node, Mapping):
        return False
    if isinstance(node.get("format"), str):
        return True
    ref = node.get("$ref")
    if isinstance(ref, str) and ref not in seen:
        seen.add(ref)
        try:
            if _has_format(root, resolve_pointer(root, ref), seen):
                return True
        except KeyError:
            return True
    return any(_has_format(root, sub, seen) for _, _, sub, _ in subschemas(node))  # schema positions only


def format_locations(schema: Mapping[str, Any]) -> list[Location] | None:
    """Where ``format`` applies in instances of ``schema``, or None when that cannot be told statically."""
    found: list[Location] = []

    def walk(node: Any, path: tuple[str, ...], refs: tuple[str, ...]) -> None:
        if not isinstance(node, Mapping):
            return
        if isinstance(node.get("format"), str):
            found.append((path, node["format"]))
        if any(keyword in node and _has_format(schema, {keyword: node[keyword]}, set()) for keyword in _UNLOCATABLE):
            raise _Unlocatable
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                target = resolve_pointer(schema, ref)
            except KeyError as exc:
                raise _Unlocatable from exc
            if ref in refs:  # recursive schema: fine only if no format hides down there
                if _has_format(schema, target, set()):
                    raise _Unlocatable
            else:
                walk(target, path, (*refs, ref))
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            for name, sub in properties.items():
                walk(sub, (*path, name), refs)
        items = node.get("items")
        if isinstance(items, Mapping):
            walk(items, (*path, ANY_ITEM), refs)
        elif isinstance(items, list) and _has_format(schema, {"items": items}, set()):
            raise _Unlocatable
        for sub in node.get("allOf", []) or []:
            walk(sub, path, refs)

    try:
        walk(schema, (), ())
    except _Unlocatable:
        return None
    return found


def _value_at(instance: Any, path: tuple[str, ...]) -> Any:
    """The value at a path without array items, or ``_MISSING``."""
    for token in path:
        if not isinstance(instance, dict):
            return _MISSING
        instance = instance.get(token, _MISSING)
    return instance


_MISSING: Any = object()


def _values_at(instance: Any, path: tuple[str, ...]) -> Iterator[Any]:
    if not path:
        yield instance
        return
    token, rest = path[0], path[1:]
    if token == ANY_ITEM:
        if isinstance(instance, list):
            for item in instance:
                yield from _values_at(item, rest)
    elif isinstance(instance, dict) and token in instance:
        yield from _values_at(instance[token], rest)


def _format_function(schema: Mapping[str, Any], name: str) -> Callable[[Any], bool]:
    """The jsonschema library's check for format ``name``, as ``EnvelopeValidator`` applies it."""
    checkers = validator_class(schema).FORMAT_CHECKER.checkers
    if name not in checkers:
        return lambda value: True  # an unknown format asserts nothing, in jsonschema as here
    function, raises = checkers[name]

    def conforms(value: Any) -> bool:
        try:
            return bool(function(value))
        except raises:
            return False

    if name == "date-time":
        return _fast_date_time(conforms) or conforms
    return conforms


# Strings on which a faster date-time check must agree with the library's before it is used.
DATE_TIME_SAMPLES = (
    "2026-07-01T10:15:30Z", "2026-07-01t10:15:30z", "2026-07-01T10:15:30.123456+02:00", "2026-07-01T10:15:30-23:59",
    "2026-06-30T23:59:60Z", "2026-07-01T24:00:00Z", "2026-07-01T10:60:00Z", "2026-02-29T10:15:30Z",
    "2024-02-29T10:15:30Z", "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "0000-01-01T00:00:00Z",
    "2026-04-31T10:15:30Z", "2026-13-01T10:15:30Z", "2026-00-01T10:15:30Z", "2026-07-00T10:15:30Z",
    "2026-07-01 10:15:30Z", "2026-07-01T10:15:30", "2026-07-01T10:15:30Z\n", "2026-07-01T10:15:30.Z",
    "2026-07-01T10:15:30+0200", "\u0662026-07-01T10:15:30Z", "26-07-01T10:15:30Z", "", "x", "2026-07-01",
)  # fmt: skip


def _fast_date_time(library: Callable[[Any], bool]) -> Callable[[Any], bool] | None:
    """rfc3339-validator's check (its own pattern) with the calendar part cached per day, or None.

    Used only when it agrees with the library's function on ``DATE_TIME_SAMPLES``, so an upgrade
    of jsonschema or rfc3339-validator that changes the rule falls back to the library itself.
    """
    try:
        from rfc3339_validator import RFC3339_REGEX
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    days: dict[str, bool] = {}

    def is_date_time(value: Any) -> bool:
        if not isinstance(value, str):
            return True
        upper = value.upper()
        match = RFC3339_REGEX.match(upper)
        if match is None:
            return False
        day = upper[:10]  # YYYY-MM-DD: the pattern matched there
        valid = days.get(day)
        if valid is None:
            year, month, number = (int(part) for part in match.groups())
            valid = bool(year) and 1 <= number <= calendar.monthrange(year, month)[1]
            if len(days) > 100_000:
                days.clear()
            days[day] = valid
        return valid

    samples = (*DATE_TIME_SAMPLES, *(f"{d}T00:00:00Z" for d in ("2026-02-28", "2026-02-29", "2026-02-30")))
    if all(is_date_time(sample) == library(sample) for sample in samples):
        return is_date_time
    return None  # pragma: no cover - only if the library's rule changed


def _remembered(conforms: Callable[[Any], bool], size: int = 50_000) -> Callable[[Any], bool]:
    """``conforms`` with its verdicts on strings remembered (dates and many other values repeat)."""
    verdicts: dict[str, bool] = {}

    def remembered(value: Any) -> bool:
        if type(value) is not str:
            return conforms(value)
        verdict = verdicts.get(value)
        if verdict is None:
            verdict = conforms(value)
            if len(verdicts) < size:
                verdicts[value] = verdict
        return verdict

    return remembered


def _field_check(path: tuple[str, ...], conforms: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """True unless the value at ``path`` (no array items on it) is there and does not conform."""
    if len(path) == 1:
        (name,) = path

        def top(instance: Any) -> bool:
            if type(instance) is dict:
                value = instance.get(name, _MISSING)
                return value is _MISSING or conforms(value)
            return True

        return top

    def nested(instance: Any) -> bool:
        value = _value_at(instance, path)
        return value is _MISSING or conforms(value)

    return nested


class SchemaCheck:
    """One schema compiled for the fast path: ``accepts(instance)`` is True only if jsonschema agrees."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        locations = format_locations(schema)
        functions = [(path, _remembered(_format_function(schema, name))) for path, name in locations or ()]
        self.formats = [_field_check(path, check) for path, check in functions if ANY_ITEM not in path]
        self.item_formats = [(path, check) for path, check in functions if ANY_ITEM in path]
        if locations is None:
            callbacks = {name: _format_function(schema, name) for name in _RS_FORMATS}
            self.validator = _compile(schema, validate_formats=True, formats=callbacks)
        else:
            self.validator = _compile(schema, validate_formats=False)

    def accepts(self, instance: Any) -> bool:
        if self.validator is None:
            return False
        try:
            if not self.validator.is_valid(instance):
                return False
        except Exception:  # e.g. a lone surrogate cannot go to Rust: let jsonschema decide
            return False
        for conforms in self.formats:
            if not conforms(instance):
                return False
        for path, conforms in self.item_formats:
            for value in _values_at(instance, path):
                if not conforms(value):
                    return False
        return True


class _Pattern:
    """jsonschema-rs's ``pattern`` keyword, answered by ``contract_platform.patterns`` (linear time, ECMA-262)."""

    def __init__(self, parent_schema: Any, value: Any, schema_path: Any) -> None:
        self.compiled = compile_pattern(value) if isinstance(value, str) else None

    def validate(self, instance: Any) -> None:
        if self.compiled is not None and isinstance(instance, str) and not self.compiled.search(instance):
            raise ValueError("does not match the pattern")


def _values_of(schema: Any, keyword: str) -> Iterator[Any]:
    """The value of every ``keyword`` key anywhere in ``schema`` (conservatively: data positions too)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if keyword in node:
                yield node[keyword]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _compile(schema: Mapping[str, Any], **options: Any) -> Any:
    """A jsonschema-rs validator for ``schema``, or None when jsonschema-rs is missing or refuses it."""
    try:
        import jsonschema_rs
    except ImportError:  # pragma: no cover - the dependency is declared; this keeps the slow path working
        return None
    cls = getattr(jsonschema_rs, validator_class(schema).__name__, None)  # Draft4Validator ... Draft202012Validator
    if cls is None or next(_values_of(schema, "patternProperties"), None) is not None:  # names its engine matches
        return None
    alike = all(isinstance(pattern, str) and reads_alike(pattern) for pattern in _values_of(schema, "pattern"))
    try:
        return cls(
            dict(schema),
            retriever=_refuse,
            keywords={} if alike else {"pattern": _Pattern},
            pattern_options=jsonschema_rs.RegexOptions(),
            **options,
        )
    except Exception:  # any refusal (a pattern the platform will not evaluate...) means the slow path
        return None


def _refuse(uri: str) -> Any:
    """jsonschema-rs's retriever: nothing outside the schema is ever fetched (network or file)."""
    raise ValueError(f"{uri!r} is not a document of the catalogue; schemas are never fetched")


class FastValidator:
    """Same interface and verdicts as ``EnvelopeValidator`` (envelope_issues / payload_issues), faster."""

    def __init__(self, catalog: Catalog, reference: EnvelopeValidator | None = None) -> None:
        self.catalog = catalog
        self.reference = reference or EnvelopeValidator(catalog)
        self._envelope = SchemaCheck(catalog.envelope_schema)
        self._payload = {contract.message_type: SchemaCheck(contract.payload_schema) for contract in catalog}

    @property
    def accelerated(self) -> bool:
        """True when jsonschema-rs is in use."""
        return self._envelope.validator is not None

    def envelope_issues(self, document: Any) -> list[SchemaIssue]:
        if self._envelope.accepts(document):
            return []
        return self.reference.envelope_issues(document)

    def payload_issues(self, contract: Contract, payload: Any) -> list[SchemaIssue]:
        check = self._payload.get(contract.message_type)
        if check is not None and check.accepts(payload):
            return []
        return self.reference.payload_issues(contract, payload)
