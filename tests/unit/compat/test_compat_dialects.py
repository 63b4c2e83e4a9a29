"""Each draft's keywords compared with that draft's meaning, with and without ``$schema``.

Tables written from the specifications (draft-04 Validation 5.3.1 ``additionalItems``/``items``, 5.4.5
``dependencies``, 5.1.2-5.1.3 boolean ``exclusiveMinimum``; draft-06/07 Validation 6.4.1-6.4.2 and
6.5.7; 2019-09 Core 9.3.1.1-9.3.1.2 ``items``/``additionalItems``, Validation 6.5.4 and Core 9.2.2.4
``dependentRequired``/``dependentSchemas``; 2020-12 Core 10.3.1.1-10.3.1.2 ``prefixItems``/``items``).
Every row names an instance that decides each direction the engine calls incompatible: valid under
the source schema, rejected by the target, checked here with the platform's own validator, so a
verdict that disagrees with another registry's label is settled by the instance, not by the label.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from tests.unit.compat.diffs import directions_of

from contract_platform.catalog.schemas import DRAFTS, read_dialect, schema_problems, validator_for
from contract_platform.compat import Mode, check_compatibility, diff_schemas
from contract_platform.errors import SchemaError

D04 = "http://json-schema.org/draft-04/schema#"
D06 = "http://json-schema.org/draft-06/schema#"
D07 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"
NONE = object()  # no deciding instance: the direction holds
STR = {"type": "string"}
INT = {"type": "integer"}


def _declare(schema: dict[str, Any], uri: str | None) -> dict[str, Any]:
    return schema if uri is None else {"$schema": uri, **schema}


# -- which draft a schema is read in ------------------------------------------------------------------

READINGS = [
    # (schema, default dialect, draft read, why)
    ({"type": "array", "items": [STR]}, "2020-12", "draft-07", "keywords"),
    ({"type": "array", "items": [STR], "additionalItems": False}, "2020-12", "draft-07", "keywords"),
    ({"type": "object", "dependencies": {"a": ["b"]}}, "2020-12", "draft-07", "keywords"),
    ({"type": "object", "properties": {"p": {"dependencies": {"a": STR}}}}, "2020-12", "draft-07", "keywords"),
    ({"type": "array", "prefixItems": [STR]}, "draft-07", "2020-12", "keywords"),
    ({"$defs": {"a": STR}, "$ref": "#/$defs/a"}, "draft-04", "2020-12", "keywords"),
    ({"type": "object", "dependentRequired": {"a": ["b"]}}, "draft-07", "2020-12", "keywords"),
    ({"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}}, "draft-07", "2020-12", "keywords"),
    ({"type": "object", "unevaluatedProperties": False}, "draft-06", "2020-12", "keywords"),
    ({"$dynamicAnchor": "n", "anyOf": [STR, {"$dynamicRef": "#n"}]}, "draft-07", "2020-12", "keywords"),
    ({"$recursiveAnchor": True, "anyOf": [STR, {"$recursiveRef": "#"}]}, "draft-07", "2019-09", "keywords"),
    ({"type": "string"}, "2020-12", "2020-12", "default"),
    ({"type": "string"}, "draft-07", "draft-07", "default"),
    ({"definitions": {"a": STR}, "$ref": "#/definitions/a"}, "draft-04", "draft-04", "default"),
    # draft-04's boolean exclusiveMinimum: every later metaschema refuses it, so draft-04 reads it
    ({"type": "number", "minimum": 0, "exclusiveMinimum": True}, "2020-12", "draft-04", "fallback"),
    ({"type": "array", "items": [STR], "exclusiveMaximum": True, "maximum": 3}, "2020-12", "draft-04", "keywords"),
    # both families: the default reads it when it can; else the newest draft that accepts it
    ({"type": "array", "items": [STR], "$defs": {"a": STR}}, "2020-12", "2019-09", "fallback"),
    ({"type": "object", "dependencies": {"a": ["b"]}, "dependentRequired": {"a": ["c"]}}, "draft-07", "draft-07", "default"),
    ({"$schema": D06, "type": "array", "prefixItems": [STR]}, "2020-12", "draft-06", "declared"),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "default", "draft", "source"), READINGS)
def test_the_draft_comes_from_schema_then_keywords_then_the_default(
    schema: dict[str, Any], default: str, draft: str, source: str
) -> None:
    reading = read_dialect(schema, default)
    assert reading is not None
    assert (reading.draft.name, reading.source) == (draft, source), reading.describe()
    assert schema_problems("s.json", schema, default=default) == []


def test_a_mixed_schema_names_both_families_keywords_with_pointers() -> None:
    reading = read_dialect({"type": "array", "items": [STR], "properties": {"p": {"dependentRequired": {}}}})
    assert reading is not None and reading.mixed
    assert [(m.pointer, m.family) for m in reading.markers] == [
        ("/items", "draft-04..07"),
        ("/properties/p/dependentRequired", "2019-09/2020-12"),
    ]


def test_only_a_schema_every_draft_refuses_is_refused_and_the_pointer_is_named() -> None:
    with pytest.raises(SchemaError) as raised:
        diff_schemas({"type": "string"}, {"type": "object", "properties": {"a": {"minLength": -1}}})
    assert raised.value.problem.pointer == "/properties/a/minLength"
    assert "no other supported draft accepts it either" in raised.value.problem.message


# -- each draft keyword with its own meaning ---------------------------------------------------------

# (case, old, new, backward witness, forward witness): a witness is an instance the source schema accepts
# and the target rejects (backward: OLD -> NEW; forward: NEW -> OLD); NONE where the direction holds.
TUPLE = {"type": "array", "items": [STR]}
KEYWORD_PAIRS: list[tuple[str, dict[str, Any], dict[str, Any], Any, Any]] = [
    ("tuple item added", TUPLE, {"type": "array", "items": [STR, INT]}, ["a", "b"], NONE),
    ("additionalItems false added", TUPLE, {**TUPLE, "additionalItems": False}, ["a", 1], NONE),
    ("additionalItems false removed", {**TUPLE, "additionalItems": False}, TUPLE, NONE, ["a", 1]),
    ("additionalItems schema changed", {**TUPLE, "additionalItems": STR}, {**TUPLE, "additionalItems": INT},
     ["a", "b"], ["a", 1]),
    ("additionalItems widened", {**TUPLE, "additionalItems": STR}, {**TUPLE, "additionalItems": {"type": ["string", "integer"]}},
     NONE, ["a", 1]),
    # without tuple items additionalItems does nothing (draft-07 Validation 6.4.2)
    ("additionalItems beside schema items", {"type": "array", "items": STR},
     {"type": "array", "items": STR, "additionalItems": False}, NONE, NONE),
    ("dependencies array added", {"type": "object"}, {"type": "object", "dependencies": {"a": ["b"]}}, {"a": 1}, NONE),
    ("dependencies array removed", {"type": "object", "dependencies": {"a": ["b"]}}, {"type": "object"}, NONE, {"a": 1}),
    ("dependencies array grew", {"type": "object", "dependencies": {"a": ["b"]}},
     {"type": "object", "dependencies": {"a": ["b", "c"]}}, {"a": 1, "b": 1}, NONE),
    ("dependencies schema added", {"type": "object"},
     {"type": "object", "dependencies": {"a": {"properties": {"b": INT}}}}, {"a": 1, "b": "x"}, NONE),
    ("dependencies schema changed", {"type": "object", "dependencies": {"a": {"properties": {"b": INT}}}},
     {"type": "object", "dependencies": {"a": {"properties": {"b": STR}}}}, {"a": 1, "b": 2}, {"a": 1, "b": "x"}),
    # a list of names means the schema {"required": names} (draft-07 Validation 6.5.7)
    ("dependencies schema to array form", {"type": "object", "dependencies": {"a": {"required": ["b"]}}},
     {"type": "object", "dependencies": {"a": ["b"]}}, NONE, NONE),
    ("dependencies schema to a longer array", {"type": "object", "dependencies": {"a": {"required": ["b"]}}},
     {"type": "object", "dependencies": {"a": ["b", "c"]}}, {"a": 1, "b": 1}, NONE),
    ("definitions target changed", {"definitions": {"d": STR}, "properties": {"p": {"$ref": "#/definitions/d"}}},
     {"definitions": {"d": INT}, "properties": {"p": {"$ref": "#/definitions/d"}}}, {"p": "x"}, {"p": 1}),
    ("definitions target widened", {"definitions": {"d": STR}, "properties": {"p": {"$ref": "#/definitions/d"}}},
     {"definitions": {"d": {"type": ["string", "integer"]}}, "properties": {"p": {"$ref": "#/definitions/d"}}},
     NONE, {"p": 1}),
]  # fmt: skip
LEGACY_DRAFTS = {"no $schema": None, "draft-04": D04, "draft-06": D06, "draft-07": D07}


def _witness_holds(source: Any, target: Any, instance: Any) -> None:
    assert validator_for(source).is_valid(instance), f"{instance!r} should be valid under {source}"
    assert not validator_for(target).is_valid(instance), f"{instance!r} should be rejected by {target}"


def _holds_as_witnessed(old: Any, new: Any, backward: Any, forward: Any) -> None:
    """Each direction holds unless the case gives a witness against it, and each witness given is one."""
    assert directions_of(old, new) == (backward is NONE, forward is NONE), diff_schemas(old, new)
    if backward is not NONE:
        _witness_holds(old, new, backward)
    if forward is not NONE:
        _witness_holds(new, old, forward)


@pytest.mark.parametrize("declared", list(LEGACY_DRAFTS))
@pytest.mark.parametrize(
    ("case", "old", "new", "backward", "forward"), KEYWORD_PAIRS, ids=[p[0] for p in KEYWORD_PAIRS]
)
def test_draft_keywords_keep_their_meaning(
    declared: str, case: str, old: dict[str, Any], new: dict[str, Any], backward: Any, forward: Any
) -> None:
    uri = LEGACY_DRAFTS[declared]
    _holds_as_witnessed(_declare(old, uri), _declare(new, uri), backward, forward)


# The same changes in 2019-09 and 2020-12 spelling; without $schema their keywords name the family.
MODERN_PAIRS: list[tuple[str, dict[str, Any], dict[str, Any], Any, Any, tuple[str, ...]]] = [
    ("prefixItems: items false added", {"type": "array", "prefixItems": [STR]},
     {"type": "array", "prefixItems": [STR], "items": False}, ["a", 1], NONE, ("2020-12",)),
    ("2019-09 additionalItems false added", {"type": "array", "items": [STR]},
     {"type": "array", "items": [STR], "additionalItems": False}, ["a", 1], NONE, ("2019-09",)),
    ("dependentRequired grew", {"type": "object", "dependentRequired": {"a": ["b"]}},
     {"type": "object", "dependentRequired": {"a": ["b", "c"]}}, {"a": 1, "b": 1}, NONE, ("2019-09", "2020-12")),
    ("dependentRequired to the same dependentSchemas", {"type": "object", "dependentRequired": {"a": ["b"]}},
     {"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}}, NONE, NONE, ("2019-09", "2020-12")),
    ("dependentSchemas removed", {"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}},
     {"type": "object", "dependentSchemas": {}}, NONE, {"a": 1}, ("2019-09", "2020-12")),
    ("$defs target changed", {"$defs": {"d": STR}, "properties": {"p": {"$ref": "#/$defs/d"}}},
     {"$defs": {"d": INT}, "properties": {"p": {"$ref": "#/$defs/d"}}}, {"p": "x"}, {"p": 1}, ("2019-09", "2020-12")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "old", "new", "backward", "forward", "drafts"), MODERN_PAIRS, ids=[p[0] for p in MODERN_PAIRS]
)
def test_2019_and_2020_keywords_keep_their_meaning(
    case: str, old: dict[str, Any], new: dict[str, Any], backward: Any, forward: Any, drafts: tuple[str, ...]
) -> None:
    spellings: list[str | None] = [DRAFTS[d].uri for d in drafts]
    if "2020-12" in drafts or "$defs" in repr(old) or "dependent" in repr(old):
        spellings.append(None)  # their own keywords say 2019-09/2020-12
    for uri in spellings:
        _holds_as_witnessed(_declare(old, uri), _declare(new, uri), backward, forward)


def test_a_draft04_boolean_exclusive_minimum_without_schema_is_read_as_draft04() -> None:
    old = {"type": "number", "minimum": 0}
    new = {"type": "number", "minimum": 0, "exclusiveMinimum": True}
    assert directions_of(old, new) == (False, True)
    _witness_holds(old, new, 0)


def test_the_same_schema_with_and_without_its_schema_keyword_differs_in_nothing() -> None:
    assert diff_schemas({"$schema": D07, **TUPLE}, TUPLE) == []  # its tuple items say draft-07
    for uri in (D04, D06):  # read in another legacy draft: the dialect differs, the values do not
        changes = diff_schemas({"$schema": uri, **TUPLE}, TUPLE)
        assert [str(c.rule) for c in changes] == ["dialect-changed"]
        assert changes[0].backward and changes[0].forward


def test_a_draft07_tuple_and_its_2020_spelling_are_the_same_schema() -> None:
    draft07 = {"type": "array", "items": [STR], "additionalItems": False}
    draft2020 = {"type": "array", "prefixItems": [STR], "items": False}
    assert directions_of(draft07, draft2020) == (True, True)


# -- combinators: decided by the branches' instance sets --------------------------------------------

A = {"type": "object", "properties": {"a": STR}, "required": ["a"]}
B = {"type": "object", "properties": {"b": INT}, "required": ["b"]}
OPEN_A = {"properties": {"a": STR}}
OPEN_B = {"properties": {"b": INT}}
COMBINATOR_PAIRS: list[tuple[str, dict[str, Any], dict[str, Any], Any, Any]] = [
    # {"a": "x", "b": 1} meets both branches: allOf takes it, oneOf (exactly one) refuses it
    ("allOf to oneOf, overlapping branches", {"allOf": [A, B]}, {"oneOf": [A, B]}, {"a": "x", "b": 1}, {"a": "x"}),
    # {} meets both open branches; oneOf rejects it, so oneOf's values are those meeting exactly one
    ("allOf to oneOf, open branches", {"allOf": [OPEN_A, OPEN_B]}, {"oneOf": [OPEN_A, OPEN_B]}, {}, {"a": 1}),
    # one more property in the merged branch: every old value meets exactly one new branch
    ("allOf to oneOf with fewer properties", {"allOf": [{"type": "object"}, A]}, {"oneOf": [A, {"type": "string"}]},
     NONE, "x"),
    ("oneOf to allOf with more properties", {"oneOf": [A, {"type": "string"}]}, {"allOf": [{"type": "object"}, A]},
     "x", NONE),
    ("oneOf to allOf, the same values", {"oneOf": [A]}, {"allOf": [{"type": "object"}, {"required": ["a"], "properties": {"a": STR}}]},
     NONE, NONE),
    # a branch is no repeat of a sibling that only looks like it because that branch is there
    ("allOf branch replaced beside an empty one", {"allOf": [STR, {}]}, {"allOf": [INT, True]}, "x", 1),
    ("allOf to anyOf", {"allOf": [A, B]}, {"anyOf": [A, B]}, NONE, {"a": "x"}),
    ("anyOf to allOf", {"anyOf": [A, B]}, {"allOf": [A, B]}, {"a": "x"}, NONE),
    # disjoint branches: anyOf and oneOf accept the same values
    ("anyOf to oneOf, disjoint", {"anyOf": [A, {"type": "string"}]}, {"oneOf": [A, {"type": "string"}]}, NONE, NONE),
    ("anyOf to oneOf, overlapping", {"anyOf": [A, B]}, {"oneOf": [A, B]}, {"a": "x", "b": 1}, NONE),
    ("oneOf to anyOf, overlapping", {"oneOf": [A, B]}, {"anyOf": [A, B]}, NONE, {"a": "x", "b": 1}),
    ("anyOf of objects lost a branch", {"anyOf": [A, B]}, {"anyOf": [A]}, {"b": 1}, NONE),
    ("anyOf of objects gained a branch", {"anyOf": [A]}, {"anyOf": [A, B]}, NONE, {"b": 1}),
    # const inside properties (draft-06 on): a value of its own
    ("const changed inside a property", {"type": "object", "properties": {"k": {"const": "x"}}},
     {"type": "object", "properties": {"k": {"const": "y"}}}, {"k": "x"}, {"k": "y"}),
    ("const widened to an enum", {"type": "object", "properties": {"k": {"const": "x"}}},
     {"type": "object", "properties": {"k": {"enum": ["x", "y"]}}}, NONE, {"k": "y"}),
    # required names replaced: each side has a value the other refuses
    ("required changed", {"type": "object", "required": ["a"]}, {"type": "object", "required": ["b"]}, {"a": 1}, {"b": 1}),
]  # fmt: skip


@pytest.mark.parametrize("declared", [None, D07, D2020])
@pytest.mark.parametrize(
    ("case", "old", "new", "backward", "forward"), COMBINATOR_PAIRS, ids=[p[0] for p in COMBINATOR_PAIRS]
)
def test_combinator_changes_follow_the_instances_their_branches_accept(
    declared: str | None, case: str, old: dict[str, Any], new: dict[str, Any], backward: Any, forward: Any
) -> None:
    _holds_as_witnessed(_declare(old, declared), _declare(new, declared), backward, forward)


# -- no refusals: schemas in each family's idiom, without $schema -----------------------------------

IDIOMS = {
    "draft-04 exclusive bound": {"type": "object", "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}},
    "draft-04 id and definitions": {"id": "urn:example:a", "definitions": {"s": STR}, "properties": {"s": {"$ref": "#/definitions/s"}}},
    "draft-06 const and contains": {"type": "array", "contains": {"const": 1}},
    "draft-07 tuple": {"type": "array", "items": [STR, INT], "additionalItems": False},
    "draft-07 dependencies": {"type": "object", "dependencies": {"a": ["b"], "c": {"required": ["d"]}}},
    "draft-07 if/then": {"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}},
    "draft-07 $ref with siblings": {"definitions": {"s": STR}, "properties": {"p": {"$ref": "#/definitions/s", "maxLength": 2}}},
    "2019-09 recursive": {"$recursiveAnchor": True, "type": "object", "additionalProperties": {"$recursiveRef": "#"}},
    "2019-09 tuple": {"type": "array", "items": [STR], "additionalItems": False, "unevaluatedItems": False},
    "2020-12 prefixItems": {"type": "array", "prefixItems": [STR], "items": False},
    "2020-12 dependentSchemas": {"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}, "$defs": {"x": STR}},
    "2020-12 unevaluatedProperties": {"type": "object", "properties": {"a": STR}, "unevaluatedProperties": False},
}  # fmt: skip


def test_every_pair_of_undeclared_schemas_in_each_drafts_idiom_gets_a_verdict() -> None:
    verdicts = 0
    for (_, old), (_, new) in itertools.product(IDIOMS.items(), repeat=2):
        for mode in (Mode.BACKWARD, Mode.FORWARD):
            check_compatibility(old, new, mode=mode)  # a SchemaError here is a refusal: the test fails
            verdicts += 1
    assert verdicts == 2 * len(IDIOMS) ** 2
    for name, schema in IDIOMS.items():
        assert check_compatibility(schema, schema, mode=Mode.FULL).compatible, name


def test_the_default_dialect_reads_a_schema_whose_keywords_do_not_say() -> None:
    # draft-07 ignores the siblings of $ref; 2020-12 applies them
    old = {"definitions": {"s": STR}, "properties": {"p": {"$ref": "#/definitions/s"}}}
    new = {"definitions": {"s": STR}, "properties": {"p": {"$ref": "#/definitions/s", "maxLength": 2}}}
    assert directions_of(old, new) == (False, True)
    _witness_holds(old, new, {"p": "abc"})
    draft07 = diff_schemas(old, new, default_dialect="draft-07")
    assert all(c.backward and c.forward for c in draft07)
    assert validator_for(new, default="draft-07").is_valid({"p": "abc"})


# -- soundness: what the tables call compatible survives sampling -------------------------------------

SAMPLED = [(case, old, new) for case, old, new, *_ in (*KEYWORD_PAIRS, *COMBINATOR_PAIRS)]


@pytest.mark.parametrize(("case", "old", "new"), SAMPLED, ids=[p[0] for p in SAMPLED])
def test_directions_called_compatible_survive_sampling(case: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    pytest.importorskip("hypothesis_jsonschema")
    from contract_platform.compat.soundness import verify_samples

    changes = diff_schemas(old, new)
    called = [
        d
        for d, holds in (("backward", all(c.backward for c in changes)), ("forward", all(c.forward for c in changes)))
        if holds
    ]
    for check in verify_samples(old, new, samples=20, directions=called):
        assert check.holds, f"{case} {check.direction}: {check.counterexample}"
