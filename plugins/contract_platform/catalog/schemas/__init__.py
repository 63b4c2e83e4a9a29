"""JSON Schema handling shared by the loader, the validators, the linter and the diff.

Which draft a schema is written in (draft-04, -06, -07, 2019-09, 2020-12: ``$schema``, else the
keywords only one family of drafts defines, else the catalogue default; :func:`read_dialect`),
checking a schema against its own draft's metaschema, walking its references, and building
validators that never leave the catalogue.

References: ``$ref``, ``$dynamicRef`` and ``$recursiveRef`` are looked for at *schema positions*
only (the value of ``not``, each value under ``properties``, each item of ``allOf``...), never inside
data (``const``, ``enum``, ``default``, ``examples``), so a property that happens to be called
``const`` is a property. A reference may name the schema's own resources (its root, an embedded
``$id``, an anchor); anything else (``http://...``, ``file:///...``, another file) is a forbidden
reference. Validators get a ``referencing`` registry whose retrieval refuses every URI, so nothing
is ever fetched from the network or the file system, whatever a schema says.

Regular expressions (``pattern``, ``patternProperties`` and the names ``additionalProperties`` and
``unevaluatedProperties`` weigh against them, ``format: regex``) are evaluated by ``contract_platform.patterns``
in linear time, never by Python's backtracking ``re``: every validator class here is the library's
draft class with those keywords and that format replaced. A pattern the platform will not evaluate
raises ``PatternNotEvaluable`` from validation; ``pattern_problems`` finds such patterns up front.

jsonschema's errors are mapped to ``Problem`` here.

The package, by concern: ``positions`` (where schemas sit inside a schema), ``drafts`` (dialects, validator
classes, metaschemas), ``regex`` (patterns in linear time), ``references`` (references and retrieval) and
``problems`` (a schema's problems).
"""

from __future__ import annotations

from contract_platform.catalog.schemas.drafts import (
    DEFAULT_DIALECT,
    DRAFTS,
    Draft,
    Marker,
    Reading,
    dialect_markers,
    dialect_of,
    pin_dialect,
    read_dialect,
    validator_class,
)
from contract_platform.catalog.schemas.positions import REF_KEYWORDS, subschemas
from contract_platform.catalog.schemas.problems import check_schema, pattern_problems, schema_problems
from contract_platform.catalog.schemas.references import (
    Reference,
    catalogue_registry,
    iter_refs,
    refuse_retrieval,
    validator_for,
)

__all__ = [
    "DEFAULT_DIALECT",
    "DRAFTS",
    "Draft",
    "Marker",
    "REF_KEYWORDS",
    "Reading",
    "Reference",
    "catalogue_registry",
    "check_schema",
    "dialect_markers",
    "dialect_of",
    "iter_refs",
    "pattern_problems",
    "pin_dialect",
    "read_dialect",
    "refuse_retrieval",
    "schema_problems",
    "subschemas",
    "validator_class",
    "validator_for",
]
