"""Catalogue -> the contract bundle of one service (``contractctl export bundle``); the format is
``contract_platform.client.bundle``'s, which reads it.

A service is selected by name, from the catalogue's own words (docs/design.md#commands-and-their-callers):

============================  =====================================================================
role                          the versions
============================  =====================================================================
``publishes``                 events whose ``owner.service`` it is; commands that list it in ``callers``
``consumes``                  versions that list it in ``consumers[].service``; commands it owns (it
                              carries them out)
``migrated-on-read``          the other majors of a family it consumes: it may receive them, and its
                              guard reads them through ``migration.yaml`` where the migration goes
============================  =====================================================================

or by message types (``--type``, each version both published and consumed). Retired versions are left out.
Every schema in a bundle resolves its ``$ref`` s inside itself (the catalogue refuses any other), so a
bundle is complete: the service never fetches anything.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from contract_platform.catalog.model import Catalog, Contract, Kind, Status
from contract_platform.catalog.schemas import schema_problems
from contract_platform.client.bundle import CONSUMES, FORMAT, FORMAT_VERSION, MIGRATED_ON_READ, PUBLISHES, checksum_of
from contract_platform.errors import SchemaError, UsageError

__all__ = ["export_bundle", "select_versions", "service_roles", "services_of"]


def services_of(catalog: Catalog) -> list[str]:
    """Every service the catalogue names: owners, callers and consumers."""
    names = set()
    for contract in catalog:
        names.add(contract.owner.service)
        names.update(contract.callers)
        names.update(consumer.service for consumer in contract.consumers)
    return sorted(names)


def service_roles(catalog: Catalog, service: str) -> dict[str, set[str]]:
    """messageType -> the roles ``service`` has for it (module docstring), retired versions left out."""
    roles: dict[str, set[str]] = {}
    live = [c for c in catalog if c.status is not Status.RETIRED]
    for contract in live:
        found = set()
        if contract.kind is Kind.EVENT and contract.owner.service == service:
            found.add(PUBLISHES)
        if contract.kind is Kind.COMMAND and service in contract.callers:
            found.add(PUBLISHES)
        if contract.kind is Kind.COMMAND and contract.owner.service == service:
            found.add(CONSUMES)
        if any(consumer.service == service for consumer in contract.consumers):
            found.add(CONSUMES)
        if found:
            roles[contract.message_type] = found
    for message_type in [t for t, found in roles.items() if CONSUMES in found]:
        for other in catalog.family(catalog.contracts[message_type].family):
            if other.status is not Status.RETIRED and other.message_type not in roles:
                roles[other.message_type] = {MIGRATED_ON_READ}
    return roles


def select_versions(
    catalog: Catalog, *, service: str | None = None, message_types: Iterable[str] = ()
) -> dict[str, set[str]]:
    """messageType -> roles of what ``--service`` and ``--type`` choose (module docstring): the one selection of
    ``export bundle`` and ``export models``. ``UsageError`` when it names nothing the catalogue has."""
    roles: dict[str, set[str]] = {}
    if service is not None:
        roles = service_roles(catalog, service)
        if not roles:
            known = ", ".join(services_of(catalog)) or "none"
            raise UsageError(
                f"--service {service!r}: no live contract version of {catalog.root} names it as owner, caller or "
                f"consumer (services named: {known})"
            )
    for message_type in sorted(set(message_types)):
        contract = catalog.require(message_type, "pass a messageType of the catalogue (contractctl status lists them)")
        if contract.status is Status.RETIRED:
            raise UsageError(f"--type {message_type}: the version is retired; no service sends or reads it any more")
        roles.setdefault(message_type, set()).update({PUBLISHES, CONSUMES})
    if not roles:
        raise UsageError("choose what goes in: --service NAME and/or --type MESSAGE_TYPE")
    return roles


def export_bundle(catalog: Catalog, *, service: str | None = None, message_types: Iterable[str] = ()) -> dict[str, Any]:
    """The bundle of ``service`` (by the catalogue's owners, callers and consumers) and/or of ``message_types``.

    ``UsageError`` when the selection names nothing the catalogue has; ``SchemaError`` when a schema refers
    outside itself (never the case for a catalogue that loads)."""
    chosen = sorted(set(message_types))
    roles = select_versions(catalog, service=service, message_types=chosen)
    contracts = {t: _entry(catalog.contracts[t], roles[t], catalog.default_dialect) for t in sorted(roles)}
    _refuse_remote_refs(catalog.envelope_schema, str(catalog.root / "envelope"), catalog.default_dialect)
    contents: dict[str, Any] = {
        "service": service,
        "selection": {"service": service, "messageTypes": chosen},
        "defaultDialect": catalog.default_dialect,
        "envelope": dict(catalog.envelope_schema),
        "contracts": contracts,
    }
    contents = copy.deepcopy(contents)  # the document is the caller's: changing it never reaches the catalogue
    return {"format": FORMAT, "formatVersion": FORMAT_VERSION, "checksum": checksum_of(contents), "contents": contents}


def _entry(contract: Contract, roles: set[str], dialect: str) -> dict[str, Any]:
    _refuse_remote_refs(contract.payload_schema, str(contract.schema_file), dialect)
    fixtures: dict[str, dict[str, Any]] = {"valid": {}, "invalid": {}}
    for fixture in contract.fixtures:
        fixtures["valid" if fixture.valid else "invalid"][fixture.name] = fixture.document
    return {
        "roles": sorted(roles),
        "contract": dict(contract.raw),
        "payloadSchema": dict(contract.payload_schema),
        "migration": dict(contract.migration) if contract.migration is not None else None,
        "fixtures": fixtures,
    }


def _refuse_remote_refs(schema: Any, file: str, dialect: str) -> None:
    """The catalogue's own rule (``catalog.schemas.schema_problems``): a reference outside the schema would have
    to be fetched by the service, so a schema with one never goes into a bundle."""
    problems = schema_problems(file, schema, default=dialect)
    if problems:
        first = problems[0]
        raise SchemaError(
            first.file, first.pointer, f"{first.message} (not exported: a bundle is never completed over a network)"
        )
