"""Which draft a schema is written in (``$schema``, else the keywords only one family defines, else the catalogue's
default: ``read_dialect``), and each draft's validator class and metaschema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import referencing
import referencing.jsonschema
from jsonschema import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
    FormatChecker,
)
from jsonschema.exceptions import SchemaError as JsonSchemaSchemaError
from jsonschema.protocols import Validator

from contract_platform.catalog.documents import pointer_from_path
from contract_platform.catalog.schemas.positions import REF_KEYWORDS, subschemas
from contract_platform.catalog.schemas.regex import bounded

__all__ = [
    "DEFAULT_DIALECT",
    "DRAFTS",
    "Draft",
    "LEGACY",
    "MODERN",
    "Marker",
    "Reading",
    "dialect_markers",
    "dialect_of",
    "pin_dialect",
    "read_dialect",
    "validator_class",
]


@dataclass(frozen=True)
class Draft:
    """One supported JSON Schema dialect: its name, canonical ``$schema`` URI and jsonschema class
    (``validator``: the library's, regular expressions in linear time; ``library``: the library's own)."""

    name: str
    uri: str
    library: type[Validator]
    order: int  # 4, 6, 7, 2019, 2020: lets callers ask "is this draft-07 or older?"

    @property
    def validator(self) -> type[Validator]:
        return _BOUNDED[self.library]

    def check_schema(self, schema: Any) -> None:
        """The draft's metaschema check (jsonschema's ``SchemaError``), ``format: regex`` judged in linear time.

        A schema the fast path accepts (``_metaschema_accepts``) is valid; anything else is judged by jsonschema,
        whose error says what and where."""
        cls: Any = self.validator
        if _metaschema_accepts(self, schema, cls.FORMAT_CHECKER):
            return
        cls.check_schema(schema, format_checker=cls.FORMAT_CHECKER)

    @property
    def legacy(self) -> bool:
        """draft-04/06/07: ``$ref`` siblings are ignored, ``items`` arrays and ``dependencies`` apply."""
        return self.order <= 7

    @property
    def specification(self) -> referencing.Specification[Any]:
        return referencing.jsonschema.specification_with(self.uri)


# The fast path of the metaschema check (a 2020-12 metaschema pass costs jsonschema about 3 ms, so a
# catalogue of 2,000 contracts spent most of its loading there). jsonschema-rs answers "valid?" with
# formats off; the formats the metaschemas assert (regex on ``pattern`` and ``patternProperties`` names,
# uri on ``$schema`` and ``$vocabulary`` names, uri-reference on ``$id`` and the reference keywords) are
# then judged by the same format checker jsonschema is given, at every mapping of the schema (data
# positions too: more places than the metaschema looks at, never fewer). Only a schema both accept is
# taken as valid; jsonschema judges every other one, draft-04 (whose integers differ) and booleans.
_FORMAT_VALUES: Final = {
    "pattern": "regex",
    "$schema": "uri",
    "$id": "uri-reference",
    **dict.fromkeys(REF_KEYWORDS, "uri-reference"),
}
_FORMAT_NAMES: Final = {"patternProperties": "regex", "$vocabulary": "uri"}


@lru_cache(maxsize=8)
def _rs_metaschema(library: type[Validator]) -> Any:
    try:
        import jsonschema_rs
    except ImportError:  # pragma: no cover - a declared dependency; jsonschema alone stays correct
        return None
    cls = getattr(jsonschema_rs, library.__name__, None)
    return None if cls is None else cls(library.META_SCHEMA, validate_formats=False)


def _metaschema_accepts(draft: Draft, schema: Any, checker: FormatChecker) -> bool:
    if draft.order < 6 or not isinstance(schema, Mapping):
        return False
    try:
        metaschema = _rs_metaschema(draft.library)
        if metaschema is None or not metaschema.is_valid(schema):
            return False
        stack: list[Any] = [schema]
        while stack:
            node = stack.pop()
            if isinstance(node, Mapping):
                for key, value in node.items():
                    if (
                        key in _FORMAT_VALUES
                        and isinstance(value, str)
                        and not checker.conforms(value, _FORMAT_VALUES[key])
                    ):
                        return False
                    names = value if key in _FORMAT_NAMES and isinstance(value, Mapping) else ()
                    if not all(checker.conforms(name, _FORMAT_NAMES[key]) for name in names):
                        return False
                    stack.append(value)
            elif isinstance(node, list):
                stack.extend(node)
    except Exception:  # anything jsonschema-rs cannot take is judged by jsonschema
        return False
    return True


DRAFTS: Final[Mapping[str, Draft]] = {
    d.name: d
    for d in (
        Draft("draft-04", "http://json-schema.org/draft-04/schema#", Draft4Validator, 4),
        Draft("draft-06", "http://json-schema.org/draft-06/schema#", Draft6Validator, 6),
        Draft("draft-07", "http://json-schema.org/draft-07/schema#", Draft7Validator, 7),
        Draft("2019-09", "https://json-schema.org/draft/2019-09/schema", Draft201909Validator, 2019),
        Draft("2020-12", "https://json-schema.org/draft/2020-12/schema", Draft202012Validator, 2020),
    )
}
DEFAULT_DIALECT: Final = "2020-12"
_BOUNDED: Final[Mapping[type[Validator], type[Validator]]] = {d.library: bounded(d.library) for d in DRAFTS.values()}


def _key(uri: str) -> str:
    """``$schema`` spellings that name the same draft: scheme and a trailing empty fragment don't matter."""
    return uri.strip().rstrip("#").removeprefix("https://").removeprefix("http://")


_BY_URI: Final = {_key(d.uri): d for d in DRAFTS.values()}
LEGACY: Final = "draft-04..07"
MODERN: Final = "2019-09/2020-12"


# Keywords that belong to one family of drafts only (``items`` counts when it is an array).
_FAMILY_KEYWORDS: Final[Mapping[str, str]] = {
    "additionalItems": LEGACY, "dependencies": LEGACY,
    "prefixItems": MODERN, "$defs": MODERN, "dependentSchemas": MODERN, "dependentRequired": MODERN,
    "unevaluatedItems": MODERN, "unevaluatedProperties": MODERN, "$dynamicRef": MODERN, "$dynamicAnchor": MODERN,
    "$recursiveRef": MODERN, "$recursiveAnchor": MODERN,
}  # fmt: skip


# The drafts a family's keywords point to, the first preferred; the rest follow when it refuses the schema.
_PREFERENCE: Final[Mapping[str, tuple[str, ...]]] = {
    LEGACY: ("draft-07", "draft-06", "draft-04"),
    MODERN: ("2020-12", "2019-09"),
}


@dataclass(frozen=True)
class Marker:
    """A keyword that only one family of drafts defines, where the schema uses it."""

    pointer: str
    keyword: str
    family: str  # LEGACY or MODERN

    def __str__(self) -> str:
        form = "array-form items" if self.keyword == "items" else self.keyword
        return f"{form} at {self.pointer or '/'}"


@dataclass(frozen=True)
class Reading:
    """The draft a schema is read in, and why: ``declared`` ($schema), ``keywords`` (a family's own keywords),
    ``default`` (neither), ``fallback`` (the draft those gave refuses the schema; the first that takes it)."""

    draft: Draft
    source: str
    markers: tuple[Marker, ...] = ()

    @property
    def mixed(self) -> bool:
        """The schema uses keywords of both families: one family's keywords mean nothing in its draft."""
        return len({m.family for m in self.markers}) > 1

    def describe(self) -> str:
        """``draft-07 (no $schema; array-form items at /items)``: the draft and the reason, for people."""
        if self.source == "declared":
            return f"{self.draft.name} ($schema)"
        evidence = "; ".join(str(m) for m in self.markers[:3])
        reason = {
            "keywords": f"no $schema; {evidence}",
            "default": "no $schema, no draft-specific keyword: the default dialect",
            "fallback": "no $schema; the newest draft that accepts the schema as written",
        }[self.source]
        return f"{self.draft.name} ({reason})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.draft.name,
            "uri": self.draft.uri,
            "source": self.source,
            "markers": [{"pointer": m.pointer, "keyword": m.keyword, "family": m.family} for m in self.markers],
        }


def dialect_markers(schema: Any) -> tuple[Marker, ...]:
    """Every keyword of ``schema`` (at schema positions) that only one family of drafts defines."""
    found: list[Marker] = []
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, pointer = stack.pop()
        if not isinstance(node, Mapping):
            continue
        for keyword in node:
            family = _FAMILY_KEYWORDS.get(keyword)
            if keyword == "items" and isinstance(node[keyword], list):
                family = LEGACY
            if family is not None:
                found.append(Marker(pointer + pointer_from_path([keyword]), keyword, family))
        stack.extend(reversed([(sub, at) for _, _, sub, at in subschemas(node, pointer)]))
    return tuple(sorted(found, key=lambda m: m.pointer))


def _refused_by(draft: Draft, schema: Any) -> bool:
    try:
        draft.check_schema(schema)
    except (JsonSchemaSchemaError, RecursionError, ValueError):
        return True
    return False


def read_dialect(schema: Any, default: str = DEFAULT_DIALECT) -> Reading | None:
    """How ``schema`` is read; None when its ``$schema`` names no supported draft.

    ``$schema`` decides when present. Without it, the keywords that only one family of drafts defines
    decide: array-form ``items``, ``additionalItems`` or ``dependencies`` mean draft-04..07 (draft-07 first),
    ``prefixItems``, ``$defs``, ``dependentSchemas``, ``dependentRequired``, ``unevaluated*`` or
    ``$dynamicRef`` mean 2019-09/2020-12 (2020-12 first; 2019-09 first for ``$recursiveRef``). A schema with
    none of them, or with both families' (a lint finding), takes ``default``. When that draft's metaschema
    refuses the schema and another draft's accepts it (a draft-04 boolean ``exclusiveMinimum``), the first
    such draft reads it: only a schema that every draft refuses is refused."""
    declared = schema.get("$schema") if isinstance(schema, Mapping) else None
    if declared is not None:
        draft = _BY_URI.get(_key(declared)) if isinstance(declared, str) else None
        return Reading(draft, "declared") if draft is not None else None
    if not isinstance(schema, Mapping):
        return Reading(DRAFTS[default], "default")
    try:
        text = json.dumps(schema, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is None or len(text) > 20_000:
        return _read_undeclared(schema, default)
    return _remembered_reading(text, default)


@lru_cache(maxsize=2048)
def _remembered_reading(text: str, default: str) -> Reading:
    return _read_undeclared(json.loads(text), default)


def _read_undeclared(schema: Mapping[str, Any], default: str) -> Reading:
    try:
        markers = dialect_markers(schema)
    except RecursionError:
        markers = ()
    families = {m.family for m in markers}
    if len(families) == 1:
        (family,) = families
        preferred = _PREFERENCE[family]
        if any(m.keyword in ("$recursiveRef", "$recursiveAnchor") for m in markers):
            preferred = ("2019-09", "2020-12")
        source = "keywords"
    else:
        preferred, source = (default,), "default"
    order = list(dict.fromkeys([*preferred, *sorted(DRAFTS, key=lambda n: -DRAFTS[n].order)]))
    for position, name in enumerate(order):
        if not _refused_by(DRAFTS[name], schema):
            fell_back = position >= len(preferred)
            return Reading(DRAFTS[name], "fallback" if fell_back else source, markers)
    return Reading(DRAFTS[preferred[0]], source, markers)  # refused by every draft: reported under this one


def dialect_of(schema: Any, default: str = DEFAULT_DIALECT) -> Draft | None:
    """The draft ``schema`` is read in (:func:`read_dialect`); None when its ``$schema`` is unsupported."""
    reading = read_dialect(schema, default)
    return reading.draft if reading is not None else None


def pin_dialect(schema: Any, default: str = DEFAULT_DIALECT) -> Any:
    """``schema`` with the ``$schema`` of the draft it is read in, so every later reader (validators in
    jobs, the diff, the docs) reads it the same way whatever default it is given."""
    if not isinstance(schema, Mapping) or "$schema" in schema:
        return schema
    reading = read_dialect(schema, default)
    return {"$schema": reading.draft.uri, **schema} if reading is not None else schema


def validator_class(schema: Any, default: str = DEFAULT_DIALECT) -> type[Validator]:
    """The jsonschema class of the schema's draft (the default's for an unsupported one: lint reports it)."""
    draft = dialect_of(schema, default) or DRAFTS[default]
    return draft.validator
