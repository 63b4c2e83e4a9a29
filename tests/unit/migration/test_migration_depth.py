"""The migration engine never deep-copies what nests past the depth limit: the message is not migratable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract_platform.errors import MessageNotMigratable
from contract_platform.limits import DEFAULT_DEPTH_LIMIT
from contract_platform.migration import migrate_envelope, migrate_payload

FIXTURES = Path(__file__).resolve().parents[3] / "contracts" / "billing" / "invoice-issued" / "v1" / "fixtures"


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"d": value}
    return value


def test_metadata_nested_990_deep_is_not_migratable_instead_of_a_recursion_error(spec_of, v2) -> None:
    envelope = json.loads(sorted((FIXTURES / "valid").glob("*.json"))[0].read_text())
    envelope["metadata"]["extra"] = nested(990)
    spec = spec_of((v2.directory / "migration.yaml").read_text())

    with pytest.raises(MessageNotMigratable) as caught:
        migrate_envelope(spec, envelope, v2)

    assert caught.value.pointer == "/metadata"
    assert f"nests deeper than {DEFAULT_DEPTH_LIMIT} levels (at /metadata/extra/d/d/" in caught.value.reason


def test_a_payload_field_past_the_limit_is_not_migratable(spec_of) -> None:
    spec = spec_of("- {op: copy, from: /deep, to: /deep}")

    with pytest.raises(MessageNotMigratable) as caught:
        migrate_payload(spec, {"deep": nested(DEFAULT_DEPTH_LIMIT + 1)})

    assert caught.value.pointer == "/payload"


def test_a_payload_field_within_the_limit_is_copied(spec_of) -> None:
    spec = spec_of("- {op: copy, from: /deep, to: /deep}")
    source = {"deep": nested(DEFAULT_DEPTH_LIMIT)}

    assert migrate_payload(spec, source) == source
