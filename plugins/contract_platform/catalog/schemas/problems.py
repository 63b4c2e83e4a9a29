"""A schema's problems, each a ``Problem``: its own draft's metaschema, references that leave the schema, and
patterns the platform will not evaluate (jsonschema's errors are mapped here).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jsonschema.exceptions import SchemaError as JsonSchemaSchemaError

from contract_platform.catalog.documents import pointer_from_path
from contract_platform.catalog.schemas.drafts import DEFAULT_DIALECT, DRAFTS, dialect_of
from contract_platform.catalog.schemas.positions import child_schemas
from contract_platform.catalog.schemas.references import iter_refs, reference_problem, schema_resources
from contract_platform.errors import Problem
from contract_platform.patterns import pattern_problem

__all__ = ["check_schema", "pattern_problems", "schema_problems"]


def pattern_problems(file: str, schema: Any, *, default: str = DEFAULT_DIALECT) -> list[Problem]:
    """Every ``pattern`` and ``patternProperties`` name of ``schema`` (at schema positions) the platform will
    not evaluate, each with its pointer and the reason (``contract_platform.patterns``)."""
    problems: list[Problem] = []
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, pointer = stack.pop()
        if not isinstance(node, Mapping):
            continue
        pattern = node.get("pattern")
        if isinstance(pattern, str) and (reason := pattern_problem(pattern)) is not None:
            problems.append(Problem(file, pointer + "/pattern", _pattern_message(pattern, reason)))
        named = node.get("patternProperties")
        if isinstance(named, Mapping):
            for name in named:
                if isinstance(name, str) and (reason := pattern_problem(name)) is not None:
                    at = pointer + pointer_from_path(["patternProperties", name])
                    problems.append(Problem(file, at, _pattern_message(name, reason)))
        stack.extend(reversed(list(child_schemas(node, pointer))))
    return sorted(problems)


def _pattern_message(pattern: str, reason: str) -> str:
    shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
    return (
        f"the regular expression {shown!r} cannot be evaluated safely: {reason}; write it without lookaround and "
        "backreferences, with repetition counts up to 1000 (contracts/README.md, Regular expressions)"
    )


def schema_problems(file: str, schema: Any, *, default: str = DEFAULT_DIALECT) -> list[Problem]:
    """Every reason ``schema`` is not a usable schema: unsupported draft, invalid under its own draft's
    metaschema, forbidden or unresolvable references (each with file and JSON pointer).

    The answer for a small schema is remembered by its JSON text (a history check or a soundness run
    asks about the same schemas again and again)."""
    try:
        text = json.dumps(schema, sort_keys=True, allow_nan=True) if isinstance(schema, Mapping) else None
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is None or len(text) > 20_000:
        return _schema_problems(file, schema, default)
    return list(_remembered_problems(file, text, default))


@lru_cache(maxsize=2048)
def _remembered_problems(file: str, text: str, default: str) -> tuple[Problem, ...]:
    return tuple(_schema_problems(file, json.loads(text), default))


def _schema_problems(file: str, schema: Any, default: str) -> list[Problem]:
    if not isinstance(schema, Mapping | bool):
        return [Problem(file, "", "a schema must be a JSON object or a boolean (true, false)")]
    draft = dialect_of(schema, default)
    if draft is None:
        declared = schema.get("$schema") if isinstance(schema, Mapping) else None
        supported = ", ".join(d.uri for d in DRAFTS.values())
        return [Problem(file, "/$schema", f"unsupported draft {declared!r}; use one of {supported}")]
    problems: list[Problem] = []
    undeclared = not (isinstance(schema, Mapping) and "$schema" in schema)
    try:
        draft.check_schema(schema)
    except JsonSchemaSchemaError as exc:
        # without $schema every draft was tried (read_dialect): none accepts the schema
        others = "; no other supported draft accepts it either" if undeclared else ""
        problems.append(
            Problem(
                file,
                pointer_from_path(exc.absolute_path),
                f"not a valid JSON Schema ({draft.name}): {exc.message}{others}",
            )
        )
    except RecursionError:
        problems.append(Problem(file, "", "not a usable JSON Schema: nested too deeply"))
    except (ValueError, OverflowError) as exc:  # e.g. a number too large to convert
        problems.append(Problem(file, "", f"not a usable JSON Schema: {exc}"))
    try:
        resources = schema_resources(schema, draft)
        for ref in iter_refs(schema, default=default):
            message = reference_problem(file, ref, resources)
            if message is not None:
                problems.append(Problem(file, ref.pointer, message))
    except RecursionError:
        problems.append(Problem(file, "", "not a usable JSON Schema: nested too deeply"))
    return problems


def check_schema(file: str, schema: Any, *, default: str = DEFAULT_DIALECT) -> None:
    """Raise ``SchemaError`` for the first problem (for callers that hold one schema, like ``diff``)."""
    from contract_platform.errors import SchemaError

    problems = schema_problems(file, schema, default=default)
    if problems:
        first = problems[0]
        raise SchemaError(first.file, first.pointer, first.message)
