"""Envelope and payload validation: the one validator used by the linter, the publisher and Spark.

Schemas are compiled once per process and content (``compiled``: contracts with the same schema share
one validator) and format assertions are on, so ``date-time`` and friends are really checked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from contract_platform.catalog.documents import pointer_from_path
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.catalog.schemas import validator_for
from contract_platform.errors import clipped

__all__ = ["EnvelopeValidator", "SchemaIssue", "compiled", "describe_errors"]


@dataclass(frozen=True, order=True)
class SchemaIssue:
    """One schema violation, located by a JSON pointer into the whole envelope."""

    pointer: str
    message: str


def _leaf_errors(error: ValidationError) -> Iterable[ValidationError]:
    """The most specific errors under ``error`` (anyOf/oneOf contexts), so messages name the field."""
    if error.context:
        for sub in error.context:
            yield from _leaf_errors(sub)
    else:
        yield error


def describe_errors(errors: Iterable[ValidationError], prefix: str = "", limit: int = 20) -> list[SchemaIssue]:
    issues: set[SchemaIssue] = set()
    for error in errors:
        for leaf in _leaf_errors(error):
            pointer = prefix + pointer_from_path(leaf.absolute_path)
            issues.add(SchemaIssue(pointer, f"{leaf.validator}: {clipped(leaf.message, 200)}"))
        if len(issues) >= limit:
            break
    return sorted(issues)[:limit]


_COMPILED: dict[str, Validator] = {}  # the schema's JSON text -> its validator, shared by every contract
_COMPILED_MAX = 4096


def compiled(schema: Mapping[str, Any]) -> Validator:
    """The validator of ``schema``, reused for every contract (and every ``EnvelopeValidator``) whose schema
    has the same content: a validator holds no state between validations, and its draft is the one the
    schema's own ``$schema`` names (the loader pins it), so the content is the whole key."""
    try:
        key = json.dumps(schema, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return validator_for(schema)
    validator = _COMPILED.get(key)
    if validator is None:
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.clear()
        validator = _COMPILED[key] = validator_for(schema)
    return validator


class EnvelopeValidator:
    """Validates whole envelopes: the envelope standard first, then the payload of its contract."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._envelope = compiled(catalog.envelope_schema)
        self._payload: dict[str, Validator] = {}

    def payload_validator(self, contract: Contract) -> Validator:
        validator = self._payload.get(contract.message_type)
        if validator is None:
            validator = compiled(contract.payload_schema)
            self._payload[contract.message_type] = validator
        return validator

    def envelope_issues(self, document: Any) -> list[SchemaIssue]:
        try:
            return describe_errors(self._envelope.iter_errors(document))
        except RecursionError:
            return [SchemaIssue("", "document is nested too deeply to validate")]

    def payload_issues(self, contract: Contract, payload: Any) -> list[SchemaIssue]:
        try:
            return describe_errors(self.payload_validator(contract).iter_errors(payload), prefix="/payload")
        except RecursionError:
            return [SchemaIssue("/payload", "payload is nested too deeply to validate")]

    def issues(self, document: Any) -> tuple[Contract | None, list[SchemaIssue]]:
        """The contract the envelope names (if known) and every issue; an empty list means valid."""
        envelope = self.envelope_issues(document)
        message_type = _message_type(document)
        contract = self.catalog.get(message_type) if message_type else None
        if contract is None:
            return None, envelope or [SchemaIssue("/metadata/messageType", f"unknown messageType {message_type!r}")]
        payload = document.get("payload") if isinstance(document, Mapping) else None
        return contract, envelope + (self.payload_issues(contract, payload) if isinstance(payload, Mapping) else [])


def _message_type(document: Any) -> str | None:
    if isinstance(document, Mapping):
        metadata = document.get("metadata")
        if isinstance(metadata, Mapping) and isinstance(metadata.get("messageType"), str):
            return str(metadata["messageType"])
    return None
