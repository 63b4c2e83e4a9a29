"""The fast validator's verdicts and issues equal EnvelopeValidator's (the jsonschema library), record by record."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from contract_platform.catalog import Catalog
from contract_platform.catalog.schemas import validator_for
from contract_platform.envelope import EnvelopeValidator
from contract_platform.validation import FastValidator
from contract_platform.validation.schemas import DATE_TIME_SAMPLES, SchemaCheck, _format_function, format_locations

STRANGE = [
    None, True, 0, -1, 1.0, 1.5, 2**70, "", "x", "inv-1\n", "2026-06-30T23:59:60Z", "2026-07-01T10:15:30z",
    "0000-01-01", "0000-01-01T00:00:00Z", "2026-02-29", "2024-02-29", "2026-07-01T10:15:30Z\n", "a@b", "@",
    "\u0661\u0662", "\ud800", "EUR", "eur", [], {}, [1], {"a": 1}, "ACCEPTED", "9" * 40,
]  # fmt: skip


def mutations(document: Any, rng: random.Random, count: int) -> list[Any]:
    """Documents with one value replaced, removed or added somewhere, at random."""
    paths: list[list[Any]] = []

    def walk(node: Any, path: list[Any]) -> None:
        paths.append(path)
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, [*path, key])
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, [*path, index])

    walk(document, [])
    found = []
    for _ in range(count):
        doc = copy.deepcopy(document)
        path = rng.choice(paths[1:])
        parent = doc
        for token in path[:-1]:
            parent = parent[token]
        action = rng.random()
        if action < 0.15 and isinstance(parent, dict):
            del parent[path[-1]]
        elif action < 0.25 and isinstance(parent, dict):
            parent["extraField"] = rng.choice(STRANGE)
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(STRANGE))
        found.append(doc)
    return found


@pytest.fixture(scope="module")
def validators(catalog: Catalog) -> tuple[EnvelopeValidator, FastValidator]:
    fast = FastValidator(catalog)
    assert fast.accelerated, "jsonschema-rs is a declared dependency"
    return fast.reference, fast


def test_fast_and_reference_agree_on_every_fixture_and_thousands_of_mutations(catalog: Catalog, validators):
    reference, fast = validators
    rng = random.Random(20260701)
    checked = invalid = 0
    for contract in catalog:
        for fixture in contract.fixtures:
            for document in [fixture.document, *mutations(fixture.document, rng, 60)]:
                assert fast.envelope_issues(document) == reference.envelope_issues(document), document
                payload = document.get("payload")
                if isinstance(payload, dict):
                    expected = reference.payload_issues(contract, payload)
                    assert fast.payload_issues(contract, payload) == expected, document
                    invalid += bool(expected)
                checked += 1
    assert checked > 1000 and invalid > 300  # the mutations do reach the schemas


def test_formats_are_judged_by_the_jsonschema_library(catalog: Catalog, validators):
    reference, fast = validators
    document = copy.deepcopy(next(f.document for f in catalog.get("order.order-created.v1").fixtures if f.valid))
    for value in STRANGE:
        document["metadata"]["occurredAt"] = value
        assert fast.envelope_issues(document) == reference.envelope_issues(document), value


def test_format_locations_are_found_or_refused():
    schema = {
        "properties": {"a": {"format": "date"}, "b": {"items": {"$ref": "#/$defs/x"}}},
        "$defs": {"x": {"allOf": [{"properties": {"at": {"format": "date-time"}}}]}},
    }
    assert format_locations(schema) == [(("a",), "date"), (("b", "*", "at"), "date-time")]
    assert format_locations({"anyOf": [{"format": "date"}, {"type": "integer"}]}) is None
    assert format_locations({"additionalProperties": {"format": "email"}}) is None
    assert format_locations({"anyOf": [{"type": "string"}, {"type": "integer"}]}) == []


def test_the_fast_path_never_accepts_what_jsonschema_rejects_even_with_formats_in_combinators():
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "integer"}]},
    }
    check, reference = SchemaCheck(schema), validator_for(schema)
    assert check.formats == []  # formats here are called back from jsonschema-rs, not located
    for value in STRANGE:
        assert check.accepts({"x": value}) == reference.is_valid({"x": value}), value


def test_the_fast_date_time_check_equals_the_library_on_many_strings():
    fast = _format_function({}, "date-time")
    assert fast.__name__ == "is_date_time"  # the faster twin passed its self-test
    function, raises = Draft202012Validator.FORMAT_CHECKER.checkers["date-time"]
    rng = random.Random(3)
    alphabet = "0123456789-:T tZz+.\n\u0663"
    values = list(DATE_TIME_SAMPLES)
    for _ in range(20_000):
        chars = list(rng.choice(["2026-07-01T10:15:30Z", "2024-02-29T23:59:59.5+01:00", "2026-04-30t00:00:00z"]))
        for _ in range(rng.randrange(1, 3)):
            chars[rng.randrange(len(chars))] = rng.choice(alphabet)
        values.append("".join(chars))
    for value in values:
        assert fast(value) == bool(function(value)), value
