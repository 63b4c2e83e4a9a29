"""Schema pairs with the verdicts a careful reader of the JSON Schema specifications gives them.

Written from each keyword's definition (draft-04 ... 2020-12), not taken from another project's
data. ``(id, old, new, (backward, forward))`` under the strict policy: ``backward`` means every
instance valid under OLD is valid under NEW; ``forward`` the other way round. Used by the verdict
test (``test_compat_semantics``) and the soundness test (``test_compat_soundness``).
"""

from __future__ import annotations

from typing import Any

D04 = "http://json-schema.org/draft-04/schema#"
D06 = "http://json-schema.org/draft-06/schema#"
D07 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"
STRING, INTEGER, NULL = {"type": "string"}, {"type": "integer"}, {"type": "null"}
NON_OBJECTS = {"type": ["null", "boolean", "array", "string", "number"]}


def obj(props: dict[str, Any], **keywords: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **keywords}


# (id, old, new, (backward, forward)) under the strict policy
SPEC_PAIRS: list[tuple[str, Any, Any, tuple[bool, bool]]] = [
    # unevaluatedProperties / unevaluatedItems: a partially open content model
    ("unevaluated-props-closed-add", obj({"a": STRING}, unevaluatedProperties=False),
     obj({"a": STRING, "b": INTEGER}, unevaluatedProperties=False), (True, False)),
    ("unevaluated-props-closing", obj({"a": STRING}), obj({"a": STRING}, unevaluatedProperties=False), (False, True)),
    ("unevaluated-props-narrowed", obj({"a": STRING}, unevaluatedProperties=STRING),
     obj({"a": STRING}, unevaluatedProperties={"type": "string", "maxLength": 2}), (False, True)),
    ("unevaluated-props-equals-additional", obj({"a": STRING}, additionalProperties=False),
     obj({"a": STRING}, unevaluatedProperties=False), (True, True)),
    ("unevaluated-items-position-added", {"type": "array", "prefixItems": [STRING], "unevaluatedItems": False},
     {"type": "array", "prefixItems": [STRING, INTEGER], "unevaluatedItems": False}, (True, False)),
    # oneOf / anyOf / allOf: reordered, duplicated, kind changed
    ("one-of-reordered", {"oneOf": [STRING, INTEGER, NULL]}, {"oneOf": [NULL, STRING, INTEGER]}, (True, True)),
    ("any-of-duplicated", {"anyOf": [STRING, INTEGER]}, {"anyOf": [STRING, INTEGER, STRING]}, (True, True)),
    ("any-of-branch-replaced-by-a-duplicate", {"anyOf": [INTEGER, STRING]}, {"anyOf": [INTEGER, INTEGER]}, (False, True)),
    ("any-of-duplicates-replaced", {"anyOf": [NULL, NULL]}, {"anyOf": [STRING, STRING]}, (False, False)),
    ("any-to-one-of-disjoint", {"anyOf": [STRING, INTEGER]}, {"oneOf": [INTEGER, STRING]}, (True, True)),
    ("any-to-one-of-overlapping", {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
     {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, (False, True)),
    ("one-to-any-of-overlapping", {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
     {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}, (True, False)),
    ("one-of-discriminated-branch-added",
     {"oneOf": [obj({"kind": {"const": "card"}}, required=["kind"]), obj({"kind": {"const": "iban"}}, required=["kind"])]},
     {"oneOf": [obj({"kind": {"const": "card"}}, required=["kind"]), obj({"kind": {"const": "iban"}}, required=["kind"]),
                obj({"kind": {"const": "cash"}}, required=["kind"])]}, (True, False)),
    # the values decide: a union cut into its branches, a branch into its JSON types, const/enum into values
    ("any-of-minima-covered-by-one-minimum", {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "integer", "minimum": 2}]},
     {"type": ["integer", "string"], "minimum": 1}, (True, False)),
    ("any-of-minima-below-the-new-minimum", {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "integer", "minimum": 2}]},
     {"type": ["integer", "string"], "minimum": 1}, (False, False)),
    ("any-of-branch-made-object-others-take-the-rest", {"anyOf": [{"properties": {"id": STRING}}, NON_OBJECTS]},
     {"anyOf": [obj({"id": STRING}), NON_OBJECTS]}, (True, True)),
    ("any-of-branch-made-object-a-non-object-lost", {"anyOf": [{"properties": {"id": STRING}}, STRING]},
     {"anyOf": [obj({"id": STRING}), STRING]}, (False, True)),
    ("any-of-branch-made-object-others-take-non-objects", {"anyOf": [{"type": ["object", "string"], "required": ["id"]}, STRING]},
     {"anyOf": [{"type": "object", "required": ["id"]}, {"not": {"type": "object"}}]}, (True, False)),
    ("any-to-overlapping-one-of-minima", {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "integer", "minimum": 2}]},
     {"oneOf": [{"type": "integer", "minimum": 1}, {"type": "integer", "minimum": 2}]}, (False, True)),
    ("const-object-to-property-const", {"const": {"key": "value"}}, {"properties": {"key": {"const": "value"}}}, (True, False)),
    ("const-object-to-closed-properties", {"const": {"key": "value"}},
     {"properties": {"key": {"const": "value"}}, "additionalProperties": False}, (True, False)),
    ("const-object-with-more-to-closed-properties", {"const": {"key": "value", "extra": 1}},
     {"properties": {"key": {"const": "value"}}, "additionalProperties": False}, (False, False)),
    ("const-object-value-differs", {"const": {"key": "other"}}, {"properties": {"key": {"const": "value"}}}, (False, False)),
    ("enum-of-objects-one-refused", {"enum": [{"key": "value"}, {"key": 1}]}, {"properties": {"key": STRING}}, (False, False)),
    ("const-date-to-format-date", {"const": "2026-11-27"}, {"type": "string", "format": "date"}, (True, False)),
    ("const-not-a-date-to-format-date", {"const": "27/11/2026"}, {"type": "string", "format": "date"}, (False, False)),
    ("not-added-no-old-value-matches", STRING, {"type": "string", "not": {"type": "object"}}, (True, True)),
    ("not-added-old-values-match", {}, {"not": {"type": "object"}}, (False, True)),
    # a definition shown to fit in one place (a's new anyOf covers it) still breaks where nothing covers it (b)
    ("covered-in-one-place-only",
     {"$defs": {"n": {"type": "integer", "minimum": 2}}, "type": "object",
      "properties": {"a": {"anyOf": [{"$ref": "#/$defs/n"}, STRING]}, "b": {"$ref": "#/$defs/n"}}},
     {"$defs": {"n": {"type": "integer", "minimum": 3}}, "type": "object",
      "properties": {"a": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": ["integer", "string"], "minimum": 2}]},
                     "b": {"$ref": "#/$defs/n"}}}, (False, True)),
    # required
    ("required-added", obj({"a": STRING}), obj({"a": STRING}, required=["a"]), (False, True)),
    ("required-removed", obj({"a": STRING}, required=["a"]), obj({"a": STRING}), (True, False)),
    ("required-reordered", obj({"a": STRING, "b": STRING}, required=["a", "b"]),
     obj({"a": STRING, "b": STRING}, required=["b", "a"]), (True, True)),
    # additionalProperties / additionalItems removed or narrowed (strict)
    ("additional-props-removed", obj({"a": STRING}, additionalProperties=False), obj({"a": STRING}), (True, False)),
    ("additional-props-narrowed", obj({"a": STRING}, additionalProperties=STRING),
     obj({"a": STRING}, additionalProperties={"type": "string", "maxLength": 1}), (False, True)),
    ("additional-items-removed", {"$schema": D07, "type": "array", "items": [STRING], "additionalItems": False},
     {"$schema": D07, "type": "array", "items": [STRING]}, (True, False)),
    # const inside properties, and a property that is *named* const
    ("const-in-property-changed", obj({"status": {"const": "OPEN"}}), obj({"status": {"const": "CLOSED"}}), (False, False)),
    ("const-to-enum", obj({"status": {"const": "OPEN"}}), obj({"status": {"enum": ["OPEN", "CLOSED"]}}), (True, False)),
    ("property-named-const", obj({"const": STRING}), obj({"const": INTEGER}), (False, False)),
    # redundant bounds
    ("integer-min-vs-exclusive", {"type": "integer", "minimum": 3}, {"type": "integer", "exclusiveMinimum": 2}, (True, True)),
    ("integer-max-fraction", {"type": "integer", "maximum": 4.5}, {"type": "integer", "exclusiveMaximum": 5}, (True, True)),
    ("number-min-vs-exclusive", {"type": "number", "minimum": 3}, {"type": "number", "exclusiveMinimum": 2}, (True, False)),
    # drafts read with their own meaning
    ("draft04-exclusive-flag", {"$schema": D04, "type": "number", "minimum": 0, "exclusiveMinimum": True},
     {"$schema": D2020, "type": "number", "exclusiveMinimum": 0}, (True, True)),
    ("draft04-has-no-const", {"$schema": D04, "type": "integer"}, {"$schema": D04, "type": "integer", "const": 1}, (True, True)),
    ("draft06-const", {"$schema": D06, "type": "integer"}, {"$schema": D06, "type": "integer", "const": 1}, (False, True)),
    ("draft07-tuple-vs-prefix-items", {"$schema": D07, "type": "array", "items": [STRING, INTEGER], "additionalItems": False},
     {"$schema": D2020, "type": "array", "prefixItems": [STRING, INTEGER], "items": False}, (True, True)),
    ("draft07-dependencies-vs-dependent-required", {"$schema": D07, "type": "object", "dependencies": {"a": ["b"]}},
     {"$schema": D2020, "type": "object", "dependentRequired": {"a": ["b"]}}, (True, True)),
    ("draft07-definitions-vs-defs",
     {"$schema": D07, "definitions": {"id": {"type": "string", "minLength": 3}}, "properties": {"x": {"$ref": "#/definitions/id"}}},
     {"$schema": D2020, "$defs": {"id": {"type": "string", "minLength": 3}}, "properties": {"x": {"$ref": "#/$defs/id"}}},
     (True, True)),
    ("draft04-id-vs-2020-id", {"$schema": D04, "id": "urn:example:a", "type": "string"},
     {"$schema": D2020, "$id": "urn:example:a", "type": "string"}, (True, True)),
    ("draft2019-recursive-ref-vs-dynamic-ref",
     {"$schema": D2019, "type": "object", "properties": {"children": {"type": "array", "items": {"$recursiveRef": "#"}}}},
     {"$schema": D2020, "type": "object", "properties": {"children": {"type": "array", "items": {"$dynamicRef": "#"}}}},
     (True, True)),
    ("draft07-ref-siblings-ignored",
     {"$schema": D07, "definitions": {"s": STRING}, "properties": {"x": {"$ref": "#/definitions/s"}}},
     {"$schema": D07, "definitions": {"s": STRING}, "properties": {"x": {"$ref": "#/definitions/s", "maxLength": 1}}},
     (True, True)),
    # 2019-09 and later: $ref and its siblings both apply, a repeated keyword included
    ("ref-sibling-repeats-a-bound",
     {"$defs": {"n": {"type": "integer", "minimum": 5}}, "properties": {"a": {"$ref": "#/$defs/n", "minimum": 3}}},
     {"properties": {"a": {"type": "integer", "minimum": 3}}}, (True, False)),
    # boolean schemas, the root included
    ("true-root-to-false", True, False, (False, True)),
    ("true-root-vs-empty", True, {}, (True, True)),
    ("false-property-relaxed", obj({"a": False}), obj({"a": STRING}), (True, False)),
]  # fmt: skip

# One schema per draft (and the two boolean schemas), each using its draft's own spellings.
SCHEMA_IN_EACH_DRAFT = {
    D04: {"$schema": D04, "id": "urn:x", "type": "object", "properties": {"n": {"type": "integer", "minimum": 0,
          "exclusiveMinimum": True}}, "dependencies": {"n": ["m"]}, "definitions": {"t": {"type": "array", "items": [{}]}}},
    D06: {"$schema": D06, "type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": 0},
          "c": {"const": "x"}}, "propertyNames": {"maxLength": 3}},
    D07: {"$schema": D07, "type": "object", "properties": {"t": {"type": "array", "items": [{"type": "string"}],
          "additionalItems": False}}, "if": {"required": ["t"]}, "then": {"required": ["n"]}},
    D2019: {"$schema": D2019, "$recursiveAnchor": True, "type": "object", "properties": {"kids": {"type": "array",
            "items": {"$recursiveRef": "#"}}}, "unevaluatedProperties": False, "dependentRequired": {"a": ["b"]}},
    D2020: {"$schema": D2020, "type": "object", "properties": {"t": {"type": "array", "prefixItems": [{"type": "string"}],
            "items": False}, "kids": {"type": "array", "items": {"$dynamicRef": "#"}}}, "unevaluatedProperties": False},
    "true": True,
    "false": False,
}  # fmt: skip
