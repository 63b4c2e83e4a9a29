"""Helpers for the migration tests: the real invoice-issued v1 -> v2 pair, specs from YAML text, toy contracts."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import yaml

from contract_platform.catalog.model import Catalog, Contract
from contract_platform.envelope import EnvelopeValidator
from contract_platform.migration import MigrationSpec, parse_spec

V1 = "billing.invoice-issued.v1"
V2 = "billing.invoice-issued.v2"
SPEC_FILE = "contracts/billing/invoice-issued/v2/migration.yaml"


def _spec_of(text: str, file: str = SPEC_FILE) -> MigrationSpec:
    raw = yaml.safe_load(text)
    if isinstance(raw, list):
        raw = {"from": "toy.thing.v1", "to": "toy.thing.v2", "description": "test", "payload": raw}
    return parse_spec(raw, file)


@pytest.fixture()
def spec_of() -> Callable[..., MigrationSpec]:
    """A spec from YAML text: a list of ops (toy.thing.v1 -> v2), or a whole file."""
    return _spec_of


@pytest.fixture()
def v1(catalog: Catalog) -> Contract:
    return catalog.get(V1)


@pytest.fixture()
def v2(catalog: Catalog) -> Contract:
    return catalog.get(V2)


@pytest.fixture()
def validator(catalog: Catalog) -> EnvelopeValidator:
    return EnvelopeValidator(catalog)


@pytest.fixture()
def real_raw(v2: Contract) -> dict[str, Any]:
    """The real migration.yaml as a dict, safe to edit."""
    return copy.deepcopy(dict(v2.migration or {}))


@pytest.fixture()
def toy(catalog: Catalog) -> Callable[..., tuple[Contract, Contract, EnvelopeValidator]]:
    """Two contracts ``toy.thing.v1`` / ``.v2`` with the given payload properties (all required unless listed)."""

    def make(
        old: dict[str, Any], new: dict[str, Any], *, optional_old: tuple[str, ...] = ()
    ) -> tuple[Contract, Contract, EnvelopeValidator]:
        def schema(properties: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
            return {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "required": [name for name in properties if name not in optional],
                "properties": properties,
            }

        base = catalog.get(V1)
        source = replace(
            base, message_type="toy.thing.v1", version="1.0.0", payload_schema=schema(old, optional_old), fixtures=()
        )
        target = replace(base, message_type="toy.thing.v2", version="2.0.0", payload_schema=schema(new), fixtures=())
        contracts = {**catalog.contracts, source.message_type: source, target.message_type: target}
        return source, target, EnvelopeValidator(replace(catalog, contracts=contracts))

    return make
