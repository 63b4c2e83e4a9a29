"""Regular expressions in linear time: the keywords that evaluate patterns (``pattern``, ``patternProperties``, the
names ``additionalProperties`` and ``unevaluatedProperties`` weigh against them, ``format: regex``) replaced in
each draft's validator class by ``contract_platform.patterns``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema import (
    FormatChecker,
)
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend

from contract_platform.patterns import is_regex, search

__all__ = ["bounded"]


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and isinstance(pattern, str) and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object") or not isinstance(patterns, Mapping):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if search(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> set[str]:
    """The names neither ``properties`` nor a ``patternProperties`` pattern of ``schema`` governs."""
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return {
        name for name in instance if name not in properties and not any(search(pattern, name) for pattern in patterns)
    }


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    if validator.is_type(additional, "object"):
        for extra in sorted(extras):
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        names = ", ".join(repr(each) for each in sorted(extras))
        if "patternProperties" in schema:
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{names} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


def _valid(errors: Iterator[ValidationError]) -> bool:
    return next(errors, None) is None


def _evaluated_names(validator: Any, instance: Mapping[str, Any], schema: Any) -> set[str]:
    """The names of ``instance`` that ``schema`` evaluates, for ``unevaluatedProperties`` (2019-09, 2020-12):
    the library's walk, with ``patternProperties`` matched in linear time."""
    if not isinstance(schema, Mapping):
        return set()
    found: set[str] = set()
    resolver: Any = validator._resolver  # the library's own walk of unevaluatedProperties uses it too
    for keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
        target = schema.get(keyword)
        if not isinstance(target, str):
            continue
        resolved = resolver.lookup(target)
        inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
        found |= _evaluated_names(inner, instance, resolved.contents)
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        found |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if (subschema := schema.get(keyword)) is not None:
            found |= {name for name, value in instance.items() if _valid(validator.descend(value, subschema))}
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping):
        found |= {name for name in instance if any(search(pattern, name) for pattern in patterns)}
    dependent = schema.get("dependentSchemas")
    if isinstance(dependent, Mapping):
        for name, subschema in dependent.items():
            if name in instance:
                found |= _evaluated_names(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []) or []:
            if _valid(validator.descend(instance, subschema)):
                found |= _evaluated_names(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            found |= _evaluated_names(validator, instance, schema["if"])
            if "then" in schema:
                found |= _evaluated_names(validator, instance, schema["then"])
        elif "else" in schema:
            found |= _evaluated_names(validator, instance, schema["else"])
    return found


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_names(validator, instance, schema)
    rejected = [
        name
        for name in instance
        if name not in evaluated
        and not _valid(validator.descend(instance[name], unevaluated, path=name, schema_path=name))
    ]
    if rejected:
        names = ", ".join(repr(each) for each in sorted(rejected))
        verb = "was" if len(rejected) == 1 else "were"
        if unevaluated is False:
            yield ValidationError(f"Unevaluated properties are not allowed ({names} {verb} unexpected)")
        else:
            yield ValidationError(
                f"Unevaluated properties are not valid under the given schema ({names} {verb} unevaluated and invalid)"
            )


def _regex_format(value: object) -> bool:
    return not isinstance(value, str) or is_regex(value)


def _bounded_formats(library: FormatChecker) -> FormatChecker:
    checker = FormatChecker(formats=())
    checker.checkers = dict(library.checkers)
    checker.checks("regex")(_regex_format)
    return checker


def bounded(library: type[Validator]) -> type[Validator]:
    """The library's draft class with every regular expression evaluated in linear time."""
    keywords: dict[str, Any] = {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    }
    if "unevaluatedProperties" in library.VALIDATORS:
        keywords["unevaluatedProperties"] = _unevaluated_properties
    # jsonschema's stubs leave validators.extend untyped; it returns a class of the library's kind
    cls: type[Validator] = extend(library, keywords, format_checker=_bounded_formats(library.FORMAT_CHECKER))  # type: ignore[no-untyped-call]
    cls.__name__ = cls.__qualname__ = library.__name__  # the same draft: jsonschema-rs is looked up by this name
    return cls
