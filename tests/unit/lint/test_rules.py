"""Each lint rule fires on the defect it names, at the right place, and not on the clean catalogue."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from contract_platform.catalog import load_catalog
from contract_platform.lint import SEVERITY, RuleId, Severity, lint_catalog

INV = "billing/invoice-issued/v1"
QA = "quote/quote-approved/v1"
CO = "order/create-order/v1"


def test_clean_catalogue_has_no_findings(catalog):
    assert lint_catalog(catalog) == []


def test_every_rule_has_a_severity():
    assert set(SEVERITY) == set(RuleId)


def yaml_edit(root: Path, folder: str, old: str, new: str) -> None:
    path = root / folder / "contract.yaml"
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def schema_edit(root: Path, folder: str, change) -> None:
    path = root / folder / "payload.schema.json"
    schema = json.loads(path.read_text())
    change(schema)
    path.write_text(json.dumps(schema))


def findings(root: Path, rule: RuleId) -> list:
    return [f for f in lint_catalog(load_catalog(root)) if f.rule is rule]


def test_routing_key_must_align_with_the_message_type(catalog_copy):
    yaml_edit(catalog_copy, QA, "routingKey: quote.quote.approved.v1", "routingKey: quotes.approved")
    [finding] = findings(catalog_copy, RuleId.ROUTING_KEY_ALIGNED)
    assert finding.pointer == "/transport/routingKey" and "quote.quote.approved.v1" in finding.message


def test_version_major_must_equal_the_folder_major(catalog_copy):
    yaml_edit(catalog_copy, QA, "version: 1.", "version: 2.")
    [finding] = findings(catalog_copy, RuleId.VERSION_MAJOR)
    assert finding.pointer == "/version"


def test_events_past_tense_commands_imperative(catalog_copy):
    yaml_edit(catalog_copy, QA, "kind: event", "kind: command")
    [finding] = findings(catalog_copy, RuleId.KIND_TENSE)
    assert "imperative" in finding.message and "'approved'" in finding.message


def test_owner_contact_required(catalog_copy):
    path = catalog_copy / QA / "contract.yaml"
    path.write_text(re.sub(r"contact: [^,}\n]+", "contact: call us", path.read_text()))
    [finding] = findings(catalog_copy, RuleId.OWNER_CONTACT)
    assert finding.pointer == "/owner/contact"


def test_money_as_json_number_is_an_error(catalog_copy):
    schema_edit(
        catalog_copy,
        INV,
        lambda s: (
            s["properties"]["amount"].update(type="number", pattern=None) or s["properties"]["amount"].pop("pattern")
        ),
    )
    [finding] = findings(catalog_copy, RuleId.MONEY_NOT_NUMBER)
    assert finding.file.endswith("payload.schema.json") and finding.pointer == "/properties/amount"


def test_timestamps_need_date_time_format(catalog_copy):
    schema_edit(catalog_copy, INV, lambda s: s["properties"]["issuedAt"].pop("format"))
    [finding] = findings(catalog_copy, RuleId.TIMESTAMP_FORMAT)
    assert finding.pointer == "/properties/issuedAt"


def test_enum_without_unknown_value_policy_is_flagged(catalog_copy):
    schema_edit(catalog_copy, INV, lambda s: s["properties"]["status"].pop("x-unknownValuePolicy"))
    [finding] = findings(catalog_copy, RuleId.ENUM_UNKNOWN_POLICY)
    assert finding.pointer == "/properties/status" and finding.severity == "warning"


def test_pii_pointer_must_exist_and_stay_out_of_headers(catalog_copy):
    yaml_edit(catalog_copy, INV, "/payload/billingEmail", "/payload/billingMail")
    assert [f.pointer for f in findings(catalog_copy, RuleId.POINTER_EXISTS)] == ["/pii/fields/0"]
    yaml_edit(catalog_copy, INV, "/payload/billingMail", "/metadata/traceId")
    [finding] = findings(catalog_copy, RuleId.PII_NOT_IN_TRANSPORT)
    assert "trace-id" in finding.message


def test_fixtures_must_behave(catalog_copy):
    valid = sorted((catalog_copy / INV / "fixtures/valid").glob("*.json"))[0]
    doc = json.loads(valid.read_text())
    doc["payload"]["amount"] = 12.5
    valid.write_text(json.dumps(doc))
    [rejected] = findings(catalog_copy, RuleId.FIXTURE_VALID_REJECTED)
    assert rejected.file == str(valid) and rejected.pointer == "/payload/amount"
    invalid = sorted((catalog_copy / INV / "fixtures/invalid").glob("*.json"))[0]
    invalid.write_text(valid.read_text().replace("12.5", '"12.50"'))
    [accepted] = findings(catalog_copy, RuleId.FIXTURE_INVALID_ACCEPTED)
    assert accepted.file == str(invalid)


def test_fixture_count(catalog_copy):
    for path in (catalog_copy / CO / "fixtures/invalid").glob("*.json"):
        path.unlink()
    [finding] = findings(catalog_copy, RuleId.FIXTURES_PRESENT)
    assert "has 2" in finding.message or "and 0" in finding.message


@pytest.mark.parametrize(
    ("old", "new", "rule"),
    [
        ("supersededBy: billing.invoice-issued.v2", "supersededBy: billing.invoice-issued.v9", RuleId.SUPERSEDED_BY),
        ("sunset:", "sunsetx:", None),
    ],
)
def test_superseded_by_and_sunset(catalog_copy, old, new, rule):
    if rule is None:
        path = catalog_copy / INV / "contract.yaml"
        path.write_text("\n".join(line for line in path.read_text().splitlines() if not line.startswith("sunset:")))
        [finding] = findings(catalog_copy, RuleId.SUNSET)
        assert finding.pointer == "/sunset"
        return
    yaml_edit(catalog_copy, INV, old, new)
    [finding] = findings(catalog_copy, rule)
    assert "not in the catalogue" in finding.message


GI = "billing/generate-invoice/v1"


def test_a_command_without_callers_is_told_the_producer_check_is_off(catalog_copy):
    yaml_edit(catalog_copy, CO, "callers: [quote-service]\n", "")
    [finding] = findings(catalog_copy, RuleId.COMMAND_CALLERS)
    assert (finding.pointer, str(finding.severity)) == ("/callers", "warning")
    assert finding.file.endswith(f"{CO}/contract.yaml")
    assert "producer-is-owner-service" in finding.message and "is off" in finding.message
    # Without callers there is nobody to check the fixtures' producer against: no fixture finding.
    assert findings(catalog_copy, RuleId.FIXTURE_METADATA) == []


def test_a_command_fixture_must_be_sent_by_a_declared_caller_not_by_the_owner(catalog_copy):
    fixture = catalog_copy / GI / "fixtures" / "valid" / "eur-net30-invoice-for-ord-10001.json"
    document = json.loads(fixture.read_text())
    document["metadata"]["producer"] = "billing-service"  # the owner: it handles the command, it does not send it
    fixture.write_text(json.dumps(document))
    [finding] = findings(catalog_copy, RuleId.FIXTURE_METADATA)
    assert (finding.file, finding.pointer) == (str(fixture), "/metadata/producer")
    assert "'billing-service'" in finding.message and "['order-service']" in finding.message

    yaml_edit(catalog_copy, GI, "callers: [order-service]", "callers: [order-service, billing-service]")
    assert findings(catalog_copy, RuleId.FIXTURE_METADATA) == []  # declared: it may send it after all


def test_an_event_fixture_is_sent_by_the_owner_service(catalog_copy):
    fixture = catalog_copy / QA / "fixtures" / "valid" / "eur-manager-approved-two-lines.json"
    document = json.loads(fixture.read_text())
    document["metadata"]["producer"] = "order-service"
    fixture.write_text(json.dumps(document))
    [finding] = findings(catalog_copy, RuleId.FIXTURE_METADATA)
    assert finding.pointer == "/metadata/producer" and "'quote-service'" in finding.message
    assert findings(catalog_copy, RuleId.COMMAND_CALLERS) == []  # events have no callers to declare


def test_schema_rules_look_into_every_drafts_schema_positions(catalog_copy):
    """A draft-07 tuple item (array-form items) is a schema position like any other."""

    def tuple_of_money(schema):
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
        schema["properties"]["refunds"] = {
            "type": "array",
            "items": [{"type": "object", "properties": {"refundAmount": {"type": "number"}}}],
        }

    schema_edit(catalog_copy, INV, tuple_of_money)
    [finding] = findings(catalog_copy, RuleId.MONEY_NOT_NUMBER)
    assert finding.pointer == "/properties/refunds/items/0/properties/refundAmount"


@pytest.mark.parametrize(
    ("pattern", "why"),
    [("^(?!x)[a-z]+$", "lookahead"), ("^(a)\\1$", "backreference"), ("^a{99999999999}$", "at most 1000")],
)
def test_a_pattern_the_platform_cannot_evaluate_is_an_error_at_its_pointer(catalog_copy, pattern, why):
    def change(schema):
        schema["properties"]["customerId"]["pattern"] = pattern
        schema["patternProperties"] = {pattern: {"type": "string"}}

    schema_edit(catalog_copy, INV, change)
    found = findings(catalog_copy, RuleId.PATTERN_EVALUABLE)
    escaped = pattern.replace("~", "~0").replace("/", "~1")
    assert [(Path(f.file).name, f.pointer) for f in found] == [
        ("payload.schema.json", f"/patternProperties/{escaped}"),
        ("payload.schema.json", "/properties/customerId/pattern"),
    ]
    assert all(why in f.message and INV in f.file for f in found)
    assert SEVERITY[RuleId.PATTERN_EVALUABLE] is Severity.ERROR


def test_the_envelope_schemas_patterns_are_checked_once(catalog_copy):
    path = catalog_copy / "envelope" / "envelope.v1.schema.json"
    envelope = json.loads(path.read_text())
    envelope["properties"]["metadata"]["properties"]["traceId"]["pattern"] = "^(?=[0-9a-f]{32}$)"
    path.write_text(json.dumps(envelope))
    [finding] = findings(catalog_copy, RuleId.PATTERN_EVALUABLE)
    assert finding.file.endswith("envelope.v1.schema.json")
    assert finding.pointer == "/properties/metadata/properties/traceId/pattern"


def test_whether_a_finding_fails_a_run_is_its_severity_and_strict() -> None:
    """One rule for lint, check and the CI formats: errors fail, warnings only with --strict, info never."""
    from contract_platform.lint.model import SEVERITY, Finding, Severity

    for severity, (plain, strict) in {
        Severity.ERROR: (True, True),
        Severity.WARNING: (False, True),
        Severity.INFO: (False, False),
    }.items():
        rule = next(rule for rule, level in SEVERITY.items() if level is severity)
        finding = Finding("contract.yaml", "/x", rule, "m")
        assert (finding.fails(), finding.fails(strict=True)) == (plain, strict), severity
