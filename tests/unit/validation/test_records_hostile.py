"""No record can make the record checker raise: depth is MALFORMED, whatever else raises is UNCHECKABLE."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from contract_platform.limits import DEFAULT_DEPTH_LIMIT
from contract_platform.validation import Reason, RecordChecker
from contract_platform.validation.records import payload_hash


def deep_payload_body(envelope: dict[str, Any], depth: int) -> str:
    """The envelope's JSON with its payload holding ``deep`` nested ``depth`` arrays (as text: json cannot
    write it)."""
    envelope = {**envelope, "payload": {**envelope["payload"], "deep": "DEEP"}}
    return json.dumps(envelope).replace('"DEEP"', "[" * depth + "]" * depth)


def test_a_payload_nested_1000_deep_is_malformed_not_a_recursion_error(checker: RecordChecker, envelope, record):
    env = envelope()
    line = json.dumps(record(env, body=deep_payload_body(env, 1000)))

    checked = checker.check(line)

    assert [(f.code, f.path) for f in checked.findings] == [(Reason.MALFORMED, "/body")]
    assert f"nests deeper than {DEFAULT_DEPTH_LIMIT} levels (at '/payload/deep/0/0/" in checked.findings[0].message
    assert checked.invalid


def test_a_payload_within_the_limit_is_checked_as_usual(checker: RecordChecker, envelope, record):
    env = envelope()
    line = json.dumps(record(env, body=deep_payload_body(env, 50)))

    checked = checker.check(line)

    assert Reason.MALFORMED not in checked.reasons
    assert checked.message_id == env["metadata"]["messageId"]


def test_a_base64_body_nested_1000_deep_is_malformed(checker: RecordChecker, envelope, record):
    env = envelope()
    raw = deep_payload_body(env, 1000).encode()
    line = json.dumps(record(env, body=None, bodyBase64=base64.b64encode(raw).decode()))

    checked = checker.check(line)

    assert [(f.code, f.path) for f in checked.findings] == [(Reason.MALFORMED, "/body")]


def test_headers_nested_past_the_limit_make_the_record_malformed(checker: RecordChecker, envelope, record):
    env = envelope()
    text = json.dumps(record(env)).replace('"headers": {', '"headers": {"deep": ' + "[" * 400 + "]" * 400 + ", ", 1)

    checked = checker.check(text)

    assert [(f.code, f.path) for f in checked.findings] == [(Reason.MALFORMED, "")]
    assert "/properties/headers/deep/0/" in checked.findings[0].message


def test_a_rule_that_raises_is_reported_as_uncheckable_and_quarantined(
    checker: RecordChecker, envelope, record, monkeypatch
) -> None:
    env = envelope()

    def broken(payload: Any) -> bytes:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("contract_platform.validation.records.payload_hash", broken)
    checked = checker.check(json.dumps(record(env)))

    assert [f.code for f in checked.findings] == [Reason.UNCHECKABLE]
    assert checked.findings[0].message == (
        "a rule raised RecursionError on this record: 'maximum recursion depth exceeded'"
    )
    assert checked.invalid and Reason.UNCHECKABLE.invalid


def test_a_fallback_record_from_the_archiver_is_malformed_with_its_reason(checker: RecordChecker, envelope, record):
    env = envelope()
    fallback = record(env, archiveError="its headers nest deeper than 252 levels (at /x/x)", propertiesBase64="AA==")
    fallback["properties"]["headers"] = {}

    checked = checker.check(json.dumps(fallback))

    malformed = [f for f in checked.findings if f.code is Reason.MALFORMED]
    assert [f.path for f in malformed] == ["/properties"]
    assert "fallback record" in malformed[0].message and "252 levels" in malformed[0].message


@pytest.mark.parametrize(
    "line",
    ["", "\x00", "[" * 100_000, '{"body": ' + "[" * 5000 + "]" * 5000 + "}", '{"body": "' + "{" * 3000 + '"}'],
)
def test_odd_lines_never_raise(checker: RecordChecker, line: str) -> None:
    checked = checker.check(line)
    assert checked.invalid


def test_payload_hash_is_unchanged_for_ordinary_payloads() -> None:
    assert payload_hash({"b": 1, "a": [1, 2]}) == payload_hash({"a": [1, 2], "b": 1})


def test_lone_surrogates_never_fail_the_arrow_batch_of_a_split(checker: RecordChecker, tmp_path) -> None:
    from contract_platform.validation.arrow import check_split
    from contract_platform.validation.reading import Split

    body = '{"metadata": {"messageId": "\\ud800x", "messageType": "\\udfff", "partitionKey": "\\ud800"}, "payload": {}}'
    record = {
        "exchange": "billing.events\udc00",
        "routingKey": "k",
        "receivedAt": "\ud800",
        "redelivered": False,
        "properties": {"messageId": "\ud800", "headers": {"\ud800": "\udc00"}},
        "body": body,
        "bodyBase64": None,
    }
    path = tmp_path / "part.jsonl"
    path.write_text(json.dumps(record) + "\n")

    [batch] = list(check_split(checker, Split(0, path.as_uri(), 0, path.stat().st_size, False)))

    [row] = batch.to_pylist()
    assert row["message_id"] == "\\ud800x"
    assert row["rank"] == Reason.ENVELOPE_INVALID.rank
