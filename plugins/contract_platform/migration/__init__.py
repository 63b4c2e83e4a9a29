"""The migration language: ``migration.yaml`` (data, not code) says how a v<N-1> message becomes v<N>.

::

    spec = parse_spec(contract.migration, str(contract.migration_file))   # MigrationSpecError: every problem
    problems = check_spec(spec, source, target, EnvelopeValidator(catalog))  # before anything runs
    new = migrate_envelope(spec, old_envelope, target)                     # MessageNotMigratable: park it
    migrate = compile_spec(spec).for_target(target)                        # the same, for many messages

``check_migration(catalog, contract)`` does all three for a contract and returns the evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contract_platform.errors import MessageNotMigratable, MigrationSpecError
from contract_platform.lazy import lazy_names

if TYPE_CHECKING:
    from contract_platform.migration.checking import MigrationCheck, check_migration, check_spec
    from contract_platform.migration.engine import (
        CompiledMigration,
        compile_spec,
        decimal_to_minor_units,
        migrate_envelope,
        migrate_payload,
        minor_units_to_decimal,
        number_to_text,
    )
    from contract_platform.migration.parity import (
        ParityMode,
        ParityReport,
        TwinComparison,
        TwinStatus,
        compare_twins,
        record_parity,
    )
    from contract_platform.migration.route import parity_route
    from contract_platform.migration.spec import (
        OPS,
        Constant,
        Copy,
        DecimalToMinorUnits,
        Default,
        Drop,
        MapEnum,
        MigrationSpec,
        Op,
        ToString,
        parse_spec,
    )

# Loaded on first use (PEP 562, contract_platform.lazy): ``migration status`` needs the parity series, the
# bridge the spec, its check and its engine; neither needs all of them.
_MODULES = {
    "checking": ("MigrationCheck", "check_migration", "check_spec"),
    "engine": (
        "CompiledMigration",
        "compile_spec",
        "decimal_to_minor_units",
        "migrate_envelope",
        "migrate_payload",
        "minor_units_to_decimal",
        "number_to_text",
    ),
    "parity": (
        "ParityMode",
        "ParityReport",
        "TwinComparison",
        "TwinStatus",
        "compare_twins",
        "record_parity",
    ),
    "route": ("parity_route",),
    "spec": (
        "OPS",
        "Constant",
        "Copy",
        "DecimalToMinorUnits",
        "Default",
        "Drop",
        "MapEnum",
        "MigrationSpec",
        "Op",
        "ToString",
        "parse_spec",
    ),
}

__all__ = [
    "OPS",
    "CompiledMigration",
    "Constant",
    "Copy",
    "DecimalToMinorUnits",
    "Default",
    "Drop",
    "MapEnum",
    "MessageNotMigratable",
    "MigrationCheck",
    "MigrationSpec",
    "MigrationSpecError",
    "Op",
    "ParityMode",
    "ParityReport",
    "ToString",
    "TwinComparison",
    "TwinStatus",
    "check_migration",
    "check_spec",
    "compare_twins",
    "compile_spec",
    "decimal_to_minor_units",
    "migrate_envelope",
    "migrate_payload",
    "minor_units_to_decimal",
    "number_to_text",
    "parity_route",
    "parse_spec",
    "record_parity",
]

__getattr__, __dir__ = lazy_names(__name__, globals(), _MODULES)
