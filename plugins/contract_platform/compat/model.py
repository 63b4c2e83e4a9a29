"""The compatibility engine's vocabulary: modes, policies, rule ids and the typed results.

Direction, once for the whole package: ``backward`` means readers using the NEW schema can still
read every instance written under the OLD one (OLD ⊆ NEW); ``forward`` means readers using the OLD
schema can read every instance written under the NEW one (NEW ⊆ OLD).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["Change", "Mode", "Policy", "ReportedChange", "RuleId", "Verdict"]


class Mode(StrEnum):
    """A contract's compatibility mode (``compatibility:`` in contract.yaml)."""

    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"
    NONE = "NONE"

    @property
    def transitive(self) -> bool:
        return self.value.endswith("_TRANSITIVE")

    def accepts(self, backward: bool, forward: bool) -> bool:
        """Whether a change with these directions is allowed under this mode."""
        base = self.value.removesuffix("_TRANSITIVE")
        if base == "BACKWARD":
            return backward
        if base == "FORWARD":
            return forward
        if base == "FULL":
            return backward and forward
        return True


class Policy(StrEnum):
    """How to read an open content model (an object schema that allows undeclared properties).

    ``strict``: an undeclared name may already carry any value, so declaring it (adding an optional
    property) can reject old data, and undeclaring it lets new data carry anything under that name.
    ``lenient``: producers only send declared fields and consumers ignore unknown ones, so adding or
    removing an optional property of an open model is compatible both ways.
    """

    STRICT = "strict"
    LENIENT = "lenient"


class RuleId(StrEnum):
    """One stable id per kind of change; B/F: backward/forward compatible (the values of ``rules.RULES``;
    ``*`` depends on the content-model policy). Bounds follow one scheme: ``*-added`` and ``*-removed``
    for a bound that appears or goes, ``*-increased``/``*-decreased`` for a moved one.

    ============================= ===== ======================================================================
    id                            B F   meaning
    ============================= ===== ======================================================================
    type-widened                  y n   the value may have more JSON types (integer -> number, type removed)
    type-narrowed                 n y   the value may have fewer JSON types
    type-changed                  n n   the old and new type sets only overlap in part
    null-allowed                  y n   null is now accepted (type list, or anyOf with null)
    null-disallowed               n y   null is no longer accepted
    schema-false-relaxed          y n   a false schema (nothing allowed) now allows values
    schema-made-false             n y   a schema became false: nothing allowed any more
    enum-added                    n y   a closed list of values (enum or const) appeared
    enum-removed                  y n   the closed list of values went away
    enum-value-added              y n   the list accepts more values
    enum-value-removed            n y   the list accepts fewer values
    min-length-added              n y
    min-length-removed            y n
    min-length-increased          n y
    min-length-decreased          y n
    max-length-added              n y
    max-length-removed            y n
    max-length-increased          y n
    max-length-decreased          n y
    pattern-added                 n y
    pattern-removed               y n
    pattern-changed               n n   a changed regex is never assumed compatible
    format-added                  n y
    format-removed                y n
    format-changed                n n   a different format is never assumed compatible
    content-encoding-added        n y
    content-encoding-removed      y n
    content-encoding-changed      n n
    content-media-type-added      n y
    content-media-type-removed    y n
    content-media-type-changed    n n
    minimum-added                 n y
    minimum-removed               y n
    minimum-increased             n y
    minimum-decreased             y n
    minimum-made-exclusive        n y   same bound, now exclusive (minimum and exclusiveMinimum fold into one bound)
    minimum-made-inclusive        y n   same bound, now inclusive (draft-04 boolean exclusives too)
    maximum-added                 n y
    maximum-removed               y n
    maximum-increased             y n
    maximum-decreased             n y
    maximum-made-exclusive        n y
    maximum-made-inclusive        y n
    multiple-of-added             n y
    multiple-of-removed           y n
    multiple-of-relaxed           y n   the new divisor divides the old one (10 -> 5)
    multiple-of-tightened         n y   the old divisor divides the new one (5 -> 10)
    multiple-of-changed           n n   neither divides the other (7 -> 13)
    min-items-added               n y
    min-items-removed             y n
    min-items-increased           n y
    min-items-decreased           y n
    max-items-added               n y
    max-items-removed             y n
    max-items-increased           y n
    max-items-decreased           n y
    min-contains-added            n y
    min-contains-removed          y n
    min-contains-increased        n y
    min-contains-decreased        y n
    max-contains-added            n y
    max-contains-removed          y n
    max-contains-increased        y n
    max-contains-decreased        n y
    unique-items-added            n y   items must be unique
    unique-items-removed          y n   items may repeat
    contains-added                n y   the array must contain a matching item
    contains-removed              y n   no matching item needed any more
    min-properties-added          n y
    min-properties-removed        y n
    min-properties-increased      n y
    min-properties-decreased      y n
    max-properties-added          n y
    max-properties-removed        y n
    max-properties-increased      y n
    max-properties-decreased      n y
    required-added                n y   a property must now be present
    required-removed              y n   a property may now be absent
    property-added                y y   declared where additionalProperties/patternProperties allowed it (schemas then diffed)
    property-added-closed-model   y n   declared where undeclared names were forbidden
    property-added-open-model       *   declared where any value was allowed (policy: strict n y, lenient y y)
    property-removed              y y   undeclared; an additionalProperties schema governs it now (schemas then diffed)
    property-removed-closed-model n y   undeclared where undeclared names are forbidden
    property-removed-open-model     *   undeclared in an open model (policy: strict y n, lenient y y)
    dependent-required-added      n y   dependentRequired / draft-07 dependencies (name list) grew
    dependent-required-removed    y n   ... shrank
    dependent-schema-added        n y   dependentSchemas / draft-07 dependencies (schema) appeared
    dependent-schema-removed      y n   ... went away
    all-of-branch-added           n y
    all-of-branch-removed         y n
    any-of-branch-added           y n
    any-of-branch-removed         n y
    one-of-branch-added           y n   oneOf is analysed like anyOf (overlap of branches not decided)
    one-of-branch-removed         n y
    all-of-to-any-of              ? ?   combinator changed: each direction holds where one side's values are
    one-of-to-any-of              ? ?   shown to lie within the other's, from the branches (logic); the
    any-of-to-all-of              ? ?   same branches read as y n, y n, n y, n y, n n, n n in this order.
    any-of-to-one-of              ? ?   One branch on each side, or anyOf <-> a oneOf of disjoint branches:
    all-of-to-one-of              ? ?   the same values, so the branches are matched and diffed instead
    one-of-to-all-of              ? ?
    composition-added             n y   a new allOf/anyOf/oneOf that old data may not meet
    composition-added-implied     y y   a new allOf/anyOf/oneOf every old value already meets
    composition-removed           y n   an allOf/anyOf/oneOf constraint went away
    composition-removed-implied   y y   it went away, but the rest of the new schema implies it
    not-added                     n y   a not schema appeared
    not-removed                   y n   the not schema went away
    conditional-added             n y   if/then/else appeared
    conditional-removed           y n   if/then/else went away
    condition-changed             n n   the if schema changed: instances are routed differently
    annotation-added              y y   title, description, default, examples, $comment, $id, deprecated, x-... keywords
    annotation-removed            y y
    annotation-changed            y y
    dialect-changed               y y   $schema changed (draft differences are normalised)
    keyword-unmodelled              *   a keyword the engine does not model changed, or a place it cannot
                                        read (policy: strict n n, lenient y y); reported with its pointer
    additional-properties-changed ? ?   lenient policy only: additionalProperties opened or closed (y y), or
                                        a map's value schema replaced by open or closed: a direction breaks
                                        where the values sent under it are refused (strict, and a schema
                                        on both sides: judged keyword by keyword instead)
    one-of-new-branches-overlap   n y   a oneOf changed and its new branches may overlap: an old value may
                                        match two of them, and oneOf wants exactly one
    one-of-old-branches-overlap   y n   a oneOf changed and its old branches may overlap
    ============================= ===== ======================================================================

    Inside ``not`` every change's directions are swapped (narrowing a negated schema widens).
    """

    TYPE_WIDENED = "type-widened"
    TYPE_NARROWED = "type-narrowed"
    TYPE_CHANGED = "type-changed"
    NULL_ALLOWED = "null-allowed"
    NULL_DISALLOWED = "null-disallowed"
    SCHEMA_FALSE_RELAXED = "schema-false-relaxed"
    SCHEMA_MADE_FALSE = "schema-made-false"
    ENUM_ADDED = "enum-added"
    ENUM_REMOVED = "enum-removed"
    ENUM_VALUE_ADDED = "enum-value-added"
    ENUM_VALUE_REMOVED = "enum-value-removed"
    MIN_LENGTH_ADDED = "min-length-added"
    MIN_LENGTH_REMOVED = "min-length-removed"
    MIN_LENGTH_INCREASED = "min-length-increased"
    MIN_LENGTH_DECREASED = "min-length-decreased"
    MAX_LENGTH_ADDED = "max-length-added"
    MAX_LENGTH_REMOVED = "max-length-removed"
    MAX_LENGTH_INCREASED = "max-length-increased"
    MAX_LENGTH_DECREASED = "max-length-decreased"
    PATTERN_ADDED = "pattern-added"
    PATTERN_REMOVED = "pattern-removed"
    PATTERN_CHANGED = "pattern-changed"
    FORMAT_ADDED = "format-added"
    FORMAT_REMOVED = "format-removed"
    FORMAT_CHANGED = "format-changed"
    CONTENT_ENCODING_ADDED = "content-encoding-added"
    CONTENT_ENCODING_REMOVED = "content-encoding-removed"
    CONTENT_ENCODING_CHANGED = "content-encoding-changed"
    CONTENT_MEDIA_TYPE_ADDED = "content-media-type-added"
    CONTENT_MEDIA_TYPE_REMOVED = "content-media-type-removed"
    CONTENT_MEDIA_TYPE_CHANGED = "content-media-type-changed"
    MINIMUM_ADDED = "minimum-added"
    MINIMUM_REMOVED = "minimum-removed"
    MINIMUM_INCREASED = "minimum-increased"
    MINIMUM_DECREASED = "minimum-decreased"
    MINIMUM_MADE_EXCLUSIVE = "minimum-made-exclusive"
    MINIMUM_MADE_INCLUSIVE = "minimum-made-inclusive"
    MAXIMUM_ADDED = "maximum-added"
    MAXIMUM_REMOVED = "maximum-removed"
    MAXIMUM_INCREASED = "maximum-increased"
    MAXIMUM_DECREASED = "maximum-decreased"
    MAXIMUM_MADE_EXCLUSIVE = "maximum-made-exclusive"
    MAXIMUM_MADE_INCLUSIVE = "maximum-made-inclusive"
    MULTIPLE_OF_ADDED = "multiple-of-added"
    MULTIPLE_OF_REMOVED = "multiple-of-removed"
    MULTIPLE_OF_RELAXED = "multiple-of-relaxed"
    MULTIPLE_OF_TIGHTENED = "multiple-of-tightened"
    MULTIPLE_OF_CHANGED = "multiple-of-changed"
    MIN_ITEMS_ADDED = "min-items-added"
    MIN_ITEMS_REMOVED = "min-items-removed"
    MIN_ITEMS_INCREASED = "min-items-increased"
    MIN_ITEMS_DECREASED = "min-items-decreased"
    MAX_ITEMS_ADDED = "max-items-added"
    MAX_ITEMS_REMOVED = "max-items-removed"
    MAX_ITEMS_INCREASED = "max-items-increased"
    MAX_ITEMS_DECREASED = "max-items-decreased"
    MIN_CONTAINS_ADDED = "min-contains-added"
    MIN_CONTAINS_REMOVED = "min-contains-removed"
    MIN_CONTAINS_INCREASED = "min-contains-increased"
    MIN_CONTAINS_DECREASED = "min-contains-decreased"
    MAX_CONTAINS_ADDED = "max-contains-added"
    MAX_CONTAINS_REMOVED = "max-contains-removed"
    MAX_CONTAINS_INCREASED = "max-contains-increased"
    MAX_CONTAINS_DECREASED = "max-contains-decreased"
    UNIQUE_ITEMS_ADDED = "unique-items-added"
    UNIQUE_ITEMS_REMOVED = "unique-items-removed"
    CONTAINS_ADDED = "contains-added"
    CONTAINS_REMOVED = "contains-removed"
    MIN_PROPERTIES_ADDED = "min-properties-added"
    MIN_PROPERTIES_REMOVED = "min-properties-removed"
    MIN_PROPERTIES_INCREASED = "min-properties-increased"
    MIN_PROPERTIES_DECREASED = "min-properties-decreased"
    MAX_PROPERTIES_ADDED = "max-properties-added"
    MAX_PROPERTIES_REMOVED = "max-properties-removed"
    MAX_PROPERTIES_INCREASED = "max-properties-increased"
    MAX_PROPERTIES_DECREASED = "max-properties-decreased"
    REQUIRED_ADDED = "required-added"
    REQUIRED_REMOVED = "required-removed"
    PROPERTY_ADDED = "property-added"
    PROPERTY_ADDED_CLOSED_MODEL = "property-added-closed-model"
    PROPERTY_ADDED_OPEN_MODEL = "property-added-open-model"
    PROPERTY_REMOVED = "property-removed"
    PROPERTY_REMOVED_CLOSED_MODEL = "property-removed-closed-model"
    PROPERTY_REMOVED_OPEN_MODEL = "property-removed-open-model"
    DEPENDENT_REQUIRED_ADDED = "dependent-required-added"
    DEPENDENT_REQUIRED_REMOVED = "dependent-required-removed"
    DEPENDENT_SCHEMA_ADDED = "dependent-schema-added"
    DEPENDENT_SCHEMA_REMOVED = "dependent-schema-removed"
    ALL_OF_BRANCH_ADDED = "all-of-branch-added"
    ALL_OF_BRANCH_REMOVED = "all-of-branch-removed"
    ANY_OF_BRANCH_ADDED = "any-of-branch-added"
    ANY_OF_BRANCH_REMOVED = "any-of-branch-removed"
    ONE_OF_BRANCH_ADDED = "one-of-branch-added"
    ONE_OF_BRANCH_REMOVED = "one-of-branch-removed"
    ALL_OF_TO_ANY_OF = "all-of-to-any-of"
    ONE_OF_TO_ANY_OF = "one-of-to-any-of"
    ANY_OF_TO_ALL_OF = "any-of-to-all-of"
    ANY_OF_TO_ONE_OF = "any-of-to-one-of"
    ALL_OF_TO_ONE_OF = "all-of-to-one-of"
    ONE_OF_TO_ALL_OF = "one-of-to-all-of"
    COMPOSITION_ADDED = "composition-added"
    COMPOSITION_ADDED_IMPLIED = "composition-added-implied"
    COMPOSITION_REMOVED = "composition-removed"
    COMPOSITION_REMOVED_IMPLIED = "composition-removed-implied"
    NOT_ADDED = "not-added"
    NOT_REMOVED = "not-removed"
    CONDITIONAL_ADDED = "conditional-added"
    CONDITIONAL_REMOVED = "conditional-removed"
    CONDITION_CHANGED = "condition-changed"
    ANNOTATION_ADDED = "annotation-added"
    ANNOTATION_REMOVED = "annotation-removed"
    ANNOTATION_CHANGED = "annotation-changed"
    DIALECT_CHANGED = "dialect-changed"
    KEYWORD_UNMODELLED = "keyword-unmodelled"
    ONE_OF_NEW_BRANCHES_OVERLAP = "one-of-new-branches-overlap"
    ONE_OF_OLD_BRANCHES_OVERLAP = "one-of-old-branches-overlap"
    ADDITIONAL_PROPERTIES_CHANGED = "additional-properties-changed"


@dataclass(frozen=True)
class Change:
    """One difference between two schemas, with what it does to each reading direction."""

    rule: RuleId
    path: str
    backward: bool
    forward: bool
    message: str


@dataclass(frozen=True)
class ReportedChange:
    """A change judged under a mode; ``against`` names the history entry it was found against."""

    rule: RuleId
    path: str
    compatible: bool
    message: str
    against: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": str(self.rule),
            "path": self.path,
            "compatible": self.compatible,
            "message": self.message,
        }
        if self.against is not None:
            out["against"] = self.against
        return out


@dataclass(frozen=True)
class Verdict:
    """The answer to "may NEW replace OLD under this mode?", with every change behind it."""

    mode: Mode
    compatible: bool
    changes: list[ReportedChange] = field(default_factory=list)

    @property
    def breaking(self) -> list[ReportedChange]:
        return [change for change in self.changes if not change.compatible]

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON shape (docs/design.md#cli); ``against`` appears only on history checks."""
        return {"compatible": self.compatible, "changes": [change.to_dict() for change in self.changes]}
