"""Which migration a version has: its successor in the catalogue, and the successor's ``migration.yaml``.

``parity_route(catalog, "billing.invoice-issued.v1")`` -> (v1, v2, spec), or ``UsageError`` saying what is
missing. Parity, the bridge's preflight and ``contractctl migration status`` all ask here; it loads neither
the migration engine nor the parity analysis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contract_platform.errors import UsageError
from contract_platform.migration.spec import MigrationSpec, parse_spec

if TYPE_CHECKING:
    from contract_platform.catalog.model import Catalog, Contract

__all__ = ["parity_route"]


def parity_route(catalog: Catalog, source_type: str) -> tuple[Contract, Contract, MigrationSpec]:
    """(v1 contract, its successor, the successor's migration spec); ``UsageError`` when there is none."""
    source = catalog.require(source_type)
    target = catalog.successor(source)
    if target is None:
        raise UsageError(f"{source_type} has no successor in {catalog.root}: there is no migration to check")
    if target.migration is None:
        raise UsageError(
            f"{target.message_type} has no migration.yaml: parity of {source_type} cannot be checked without one"
        )
    spec = parse_spec(target.migration, str(target.migration_file))
    if spec.source != source_type:
        raise UsageError(
            f"{target.migration_file} migrates {spec.source}, not {source_type}: check supersededBy in contract.yaml"
        )
    return source, target, spec
