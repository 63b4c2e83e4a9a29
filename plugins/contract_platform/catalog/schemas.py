"""JSON Schema handling shared by the loader, the validators and the linter.

Which draft a schema is written in, checking that a schema is itself valid, and resolving its
local ``$ref`` s. jsonschema's errors are mapped to ``Problem`` here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema import Draft7Validator, Draft202012Validator
from jsonschema.exceptions import SchemaError as JsonSchemaSchemaError
from jsonschema.protocols import Validator

from contract_platform.catalog.documents import pointer_from_path, resolve_pointer
from contract_platform.errors import Problem

__all__ = ["check_schema", "iter_refs", "validator_for", "schema_problems"]

_DRAFTS: dict[str, type[Validator]] = {
    "https://json-schema.org/draft/2020-12/schema": Draft202012Validator,
    "http://json-schema.org/draft-07/schema": Draft7Validator,
}


def validator_class(schema: Mapping[str, Any] | bool) -> type[Validator]:
    """Draft 2020-12 unless the schema says draft-07; other drafts are refused by ``schema_problems``."""
    if isinstance(schema, Mapping):
        declared = str(schema.get("$schema", "")).rstrip("#")
        return _DRAFTS.get(declared, Draft202012Validator)
    return Draft202012Validator


def validator_for(schema: Mapping[str, Any], *, formats: bool = True) -> Validator:
    """A compiled validator with format assertions on (``date-time`` and friends are checked)."""
    cls = validator_class(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER if formats else None)


def iter_refs(node: Any, pointer: str = "") -> Iterator[tuple[str, str]]:
    """(pointer of the ``$ref`` keyword, target) for every ``$ref`` in a schema, depth first."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = pointer + pointer_from_path([key])
            if key == "$ref" and isinstance(value, str):
                yield here, value
            elif key not in ("const", "enum", "default", "examples"):
                yield from iter_refs(value, here)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from iter_refs(value, pointer + f"/{index}")


def schema_problems(file: str, schema: Any) -> list[Problem]:
    """Every reason ``schema`` is not a usable schema: wrong draft, invalid keywords, unresolvable refs."""
    if not isinstance(schema, dict):
        return [Problem(file, "", "a schema must be a JSON object")]
    declared = schema.get("$schema")
    if declared is not None and str(declared).rstrip("#") not in _DRAFTS:
        return [Problem(file, "/$schema", f"unsupported draft {declared!r}; use draft 2020-12 or draft-07")]
    problems: list[Problem] = []
    try:
        validator_class(schema).check_schema(schema)
    except JsonSchemaSchemaError as exc:
        problems.append(Problem(file, pointer_from_path(exc.absolute_path), f"not a valid JSON Schema: {exc.message}"))
    except RecursionError:
        problems.append(Problem(file, "", "not a usable JSON Schema: nested too deeply"))
    for where, target in iter_refs(schema):
        if not target.startswith("#"):
            problems.append(Problem(file, where, f"$ref {target!r} is not local; keep definitions in $defs"))
            continue
        try:
            resolve_pointer(schema, target[1:])
        except KeyError:
            problems.append(Problem(file, where, f"$ref {target!r} does not resolve to anything in this schema"))
    return problems


def check_schema(file: str, schema: Any) -> None:
    """Raise ``SchemaError`` for the first problem (for callers that hold one schema, like ``diff``)."""
    from contract_platform.errors import SchemaError

    problems = schema_problems(file, schema)
    if problems:
        first = problems[0]
        raise SchemaError(first.file, first.pointer, first.message)
