"""Keyword families on a single value: annotations, type, enum/const, string and number constraints."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple

from .context import allowed_values, own_types
from .dialects import IGNORED_PREFIX
from .model import RuleId as R
from .schema import (
    CONJUNCTION,
    NUMBER_TYPES,
    UNMODELLED,
    View,
    describe,
    freeze,
    is_annotation,
    is_documentation,
    type_names,
)

if TYPE_CHECKING:
    from .walker import Walker

__all__ = [
    "BoundRules",
    "compare_annotations",
    "compare_bound",
    "compare_numbers",
    "compare_strings",
    "compare_types",
    "compare_values",
]

_MISSING = object()


class BoundRules(NamedTuple):
    added: R
    removed: R
    increased: R
    decreased: R


class _TextRules(NamedTuple):
    added: R
    removed: R
    changed: R


_STRING_BOUNDS = {
    "minLength": BoundRules(R.MIN_LENGTH_ADDED, R.MIN_LENGTH_REMOVED, R.MIN_LENGTH_INCREASED, R.MIN_LENGTH_DECREASED),
    "maxLength": BoundRules(R.MAX_LENGTH_ADDED, R.MAX_LENGTH_REMOVED, R.MAX_LENGTH_INCREASED, R.MAX_LENGTH_DECREASED),
}
_STRING_TEXTS = {
    "pattern": _TextRules(R.PATTERN_ADDED, R.PATTERN_REMOVED, R.PATTERN_CHANGED),
    "format": _TextRules(R.FORMAT_ADDED, R.FORMAT_REMOVED, R.FORMAT_CHANGED),
    "contentEncoding": _TextRules(R.CONTENT_ENCODING_ADDED, R.CONTENT_ENCODING_REMOVED, R.CONTENT_ENCODING_CHANGED),
    "contentMediaType": _TextRules(
        R.CONTENT_MEDIA_TYPE_ADDED, R.CONTENT_MEDIA_TYPE_REMOVED, R.CONTENT_MEDIA_TYPE_CHANGED
    ),
}


def _show(values: Any) -> str:
    items = [json.dumps(v, sort_keys=True, default=str)[:60] for v in values]
    return ", ".join(items[:8]) + (f" and {len(items) - 8} more" if len(items) > 8 else "")


# -- annotations -------------------------------------------------------------------------------


def compare_annotations(w: Walker, old: View, new: View, old_types: frozenset[str], new_types: frozenset[str]) -> None:
    """title, description, default, examples, $comment, $id, unknown keywords...: documentation only."""
    keywords = {k for k in (*old.schema, *new.schema) if isinstance(k, str) and is_annotation(k)}
    for keyword in sorted(keywords):
        before, after = old.schema.get(keyword, _MISSING), new.schema.get(keyword, _MISSING)
        if before is not _MISSING and after is not _MISSING and freeze(before) == freeze(after):
            continue
        where = describe(new.ptr if after is not _MISSING else old.ptr)
        if keyword == CONJUNCTION:
            names = ", ".join(
                sorted({*(before if isinstance(before, dict) else {}), *(after if isinstance(after, dict) else {})})
            )
            w.emit(
                R.KEYWORD_UNMODELLED,
                (new if after is not _MISSING else old).ptr,
                f"{where} sets {names} both beside a $ref (or in a combined schema) and in its target; "
                "the engine does not combine the two",
            )
        elif keyword in UNMODELLED or not is_documentation(keyword):
            path = new.at(keyword) if after is not _MISSING else old.at(keyword)
            w.emit(R.KEYWORD_UNMODELLED, path, f"keyword {keyword!r} of {where} changed; the engine does not model it")
        elif keyword == "$schema":
            w.emit(R.DIALECT_CHANGED, new.at(keyword), f"$schema of {where} changed from {before!r} to {after!r}")
        elif before is _MISSING:
            w.emit(R.ANNOTATION_ADDED, new.at(keyword), f"{_named(keyword)} added to {where}")
        elif after is _MISSING:
            w.emit(R.ANNOTATION_REMOVED, old.at(keyword), f"{_named(keyword)} removed from {where}")
        else:
            w.emit(R.ANNOTATION_CHANGED, new.at(keyword), f"{_named(keyword)} of {where} changed")


def _named(keyword: str) -> str:
    """``x-not-in-draft-07:prefixItems`` (see ``dialects``) as the user wrote and the draft reads it."""
    if keyword.startswith(IGNORED_PREFIX):
        draft, _, name = keyword.removeprefix(IGNORED_PREFIX).partition(":")
        return f"{name} (no keyword in {draft}, or beside a $ref there: it asserts nothing)"
    return keyword


# -- type and listed values ----------------------------------------------------------------------


def compare_types(w: Walker, old: View, new: View, old_types: frozenset[str], new_types: frozenset[str]) -> None:
    """Types as sets (integer inside number; null in a type list is nullability).

    Reported when ``type`` (or the listed values) changed; a difference that only comes from
    composition branches is reported by the composition. The sets compared include what the
    compositions imply, so wrapping a string in ``anyOf [string, null]`` reads as "null allowed"."""
    if old_types == new_types or own_types(old) & old.known == own_types(new) & new.known:
        return
    path = new.at("type") if "type" in new.schema else old.at("type") if "type" in old.schema else new.ptr
    where = describe(new.ptr)
    if old_types < new_types:
        gained = new_types - old_types
        rule = R.NULL_ALLOWED if gained == {"null"} else R.TYPE_WIDENED
        w.emit(rule, path, f"{where} now also accepts {type_names(gained)}: type widened from {type_names(old_types)}")
    elif new_types < old_types:
        lost = old_types - new_types
        rule = R.NULL_DISALLOWED if lost == {"null"} else R.TYPE_NARROWED
        w.emit(rule, path, f"{where} no longer accepts {type_names(lost)}: type narrowed to {type_names(new_types)}")
    else:
        w.emit(R.TYPE_CHANGED, path, f"{where} changed type from {type_names(old_types)} to {type_names(new_types)}")


def compare_values(w: Walker, old: View, new: View, old_types: frozenset[str], new_types: frozenset[str]) -> None:
    """enum and const, read as one closed list of values (const x is enum [x])."""
    before, after = allowed_values(old), allowed_values(new)
    if before is None and after is None:
        return
    where = describe(new.ptr)
    if after is None:
        assert before is not None
        path = old.at("enum" if "enum" in old.schema else "const")
        w.emit(R.ENUM_REMOVED, path, f"{where} no longer restricts its values to {_show(before.values())}")
        return
    path = new.at("enum" if "enum" in new.schema else "const")
    if before is None:
        w.emit(R.ENUM_ADDED, path, f"{where} now only accepts {_show(after.values()) or 'no value'}")
        return
    gained = [v for k, v in after.items() if k not in before]
    lost = [v for k, v in before.items() if k not in after]
    if gained:
        w.emit(R.ENUM_VALUE_ADDED, path, f"{where} now also accepts {_show(gained)}")
    if lost:
        w.emit(R.ENUM_VALUE_REMOVED, path, f"{where} no longer accepts {_show(lost)}")


# -- strings -------------------------------------------------------------------------------------


def compare_strings(w: Walker, old: View, new: View, old_types: frozenset[str], new_types: frozenset[str]) -> None:
    if "string" not in old_types & new_types:
        return
    for keyword, bound_rules in _STRING_BOUNDS.items():
        compare_bound(w, old, new, keyword, bound_rules, default=0 if keyword.startswith("min") else None)
    for keyword, text_rules in _STRING_TEXTS.items():
        _compare_text(w, old, new, keyword, text_rules)


def _compare_text(w: Walker, old: View, new: View, keyword: str, rules: _TextRules) -> None:
    """pattern, format, contentEncoding, contentMediaType: equal, added, removed, or changed (never assumed safe)."""
    before, after = old.text(keyword), new.text(keyword)
    if before == after:
        return
    where = describe(new.ptr)
    if before is None:
        w.emit(rules.added, new.at(keyword), f"{where} now has {keyword} {after!r}")
    elif after is None:
        w.emit(rules.removed, old.at(keyword), f"{keyword} {before!r} of {where} was removed")
    else:
        w.emit(rules.changed, new.at(keyword), f"{keyword} of {where} changed from {before!r} to {after!r}")


def compare_bound(
    w: Walker, old: View, new: View, keyword: str, rules: BoundRules, *, default: int | None = None
) -> None:
    """A count bound (minLength, maxItems, minProperties...); a bound equal to its default is no bound."""
    before, after = old.count(keyword), new.count(keyword)
    before, after = (None if v == default else v for v in (before, after))
    if before == after:
        return
    where = describe(new.ptr)
    if before is None:
        w.emit(rules.added, new.at(keyword), f"{keyword} {after} added to {where}")
    elif after is None:
        w.emit(rules.removed, old.at(keyword), f"{keyword} {before} of {where} was removed")
    elif after > before:
        w.emit(rules.increased, new.at(keyword), f"{keyword} of {where} increased from {before} to {after}")
    else:
        w.emit(rules.decreased, new.at(keyword), f"{keyword} of {where} decreased from {before} to {after}")


# -- numbers -------------------------------------------------------------------------------------


class _Limit(NamedTuple):
    value: int | float
    exclusive: bool
    keyword: str


class _LimitRules(NamedTuple):
    lower: bool  # True for minimum, False for maximum
    added: R
    removed: R
    increased: R
    decreased: R
    made_exclusive: R
    made_inclusive: R


_LOWER = _LimitRules(
    True, R.MINIMUM_ADDED, R.MINIMUM_REMOVED, R.MINIMUM_INCREASED, R.MINIMUM_DECREASED,
    R.MINIMUM_MADE_EXCLUSIVE, R.MINIMUM_MADE_INCLUSIVE,
)  # fmt: skip
_UPPER = _LimitRules(
    False, R.MAXIMUM_ADDED, R.MAXIMUM_REMOVED, R.MAXIMUM_INCREASED, R.MAXIMUM_DECREASED,
    R.MAXIMUM_MADE_EXCLUSIVE, R.MAXIMUM_MADE_INCLUSIVE,
)  # fmt: skip


def _limit(view: View, lower: bool, integral: bool) -> _Limit | None:
    """The tighter of minimum/exclusiveMinimum (or maximum/...), draft-04 boolean exclusives included.

    ``integral``: the only numbers allowed here are integers, so a bound is the nearest integer it
    admits, inclusive (``exclusiveMinimum: 2`` and ``minimum: 2.5`` both mean ``minimum: 3``)."""
    inclusive_kw, exclusive_kw = ("minimum", "exclusiveMinimum") if lower else ("maximum", "exclusiveMaximum")
    inclusive = view.number(inclusive_kw)
    if isinstance(view.schema.get(exclusive_kw), bool):  # draft-04: a flag on minimum/maximum
        limits = [] if inclusive is None else [_Limit(inclusive, view.schema[exclusive_kw], inclusive_kw)]
    else:
        exclusive = view.number(exclusive_kw)
        limits = [
            _Limit(v, e, k)
            for v, e, k in ((inclusive, False, inclusive_kw), (exclusive, True, exclusive_kw))
            if v is not None
        ]
    if integral:
        limits = [_Limit(_integer_bound(lim, lower), False, lim.keyword) for lim in limits]
    if not limits:
        return None
    return max(limits, key=lambda lim: (lim.value if lower else -lim.value, lim.exclusive))


def _integer_bound(limit: _Limit, lower: bool) -> int:
    value = Fraction(repr(limit.value)) if isinstance(limit.value, float) else Fraction(limit.value)
    if lower:
        return math.floor(value) + 1 if limit.exclusive else math.ceil(value)
    return math.ceil(value) - 1 if limit.exclusive else math.floor(value)


def _compare_limit(w: Walker, old: View, new: View, rules: _LimitRules, integral: tuple[bool, bool]) -> None:
    before, after = _limit(old, rules.lower, integral[0]), _limit(new, rules.lower, integral[1])
    if before == after or (before and after and (before.value, before.exclusive) == (after.value, after.exclusive)):
        return
    where = describe(new.ptr)
    if before is None:
        assert after is not None
        w.emit(rules.added, new.at(after.keyword), f"{after.keyword} {after.value} added to {where}")
    elif after is None:
        w.emit(rules.removed, old.at(before.keyword), f"{before.keyword} {before.value} of {where} was removed")
    elif after.value != before.value:
        rule = rules.increased if after.value > before.value else rules.decreased
        verb = "increased" if after.value > before.value else "decreased"
        w.emit(
            rule,
            new.at(after.keyword),
            f"{'lower' if rules.lower else 'upper'} bound of {where} {verb} from {before.value} to {after.value}",
        )
    else:
        rule, kind = (rules.made_exclusive, "exclusive") if after.exclusive else (rules.made_inclusive, "inclusive")
        w.emit(rule, new.at(after.keyword), f"bound {after.value} of {where} is now {kind}")


def _divisor(view: View) -> Fraction | None:
    value = view.number("multipleOf")
    if value is None:
        return None
    if value <= 0:
        raise view.error("multipleOf", f"multipleOf must be greater than 0, not {value!r}")
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


def _compare_multiple_of(w: Walker, old: View, new: View) -> None:
    before, after = _divisor(old), _divisor(new)
    if before == after:
        return
    where = describe(new.ptr)
    if before is None:
        w.emit(R.MULTIPLE_OF_ADDED, new.at("multipleOf"), f"{where} must now be a multiple of {after}")
    elif after is None:
        w.emit(R.MULTIPLE_OF_REMOVED, old.at("multipleOf"), f"multipleOf {before} of {where} was removed")
    elif (before / after).denominator == 1:
        w.emit(R.MULTIPLE_OF_RELAXED, new.at("multipleOf"), f"multipleOf of {where} relaxed from {before} to {after}")
    elif (after / before).denominator == 1:
        w.emit(
            R.MULTIPLE_OF_TIGHTENED, new.at("multipleOf"), f"multipleOf of {where} tightened from {before} to {after}"
        )
    else:
        w.emit(R.MULTIPLE_OF_CHANGED, new.at("multipleOf"), f"multipleOf of {where} changed from {before} to {after}")


def compare_numbers(w: Walker, old: View, new: View, old_types: frozenset[str], new_types: frozenset[str]) -> None:
    if not old_types & new_types & NUMBER_TYPES:
        return
    integral = (old_types & NUMBER_TYPES == {"integer"}, new_types & NUMBER_TYPES == {"integer"})
    _compare_limit(w, old, new, _LOWER, integral)
    _compare_limit(w, old, new, _UPPER, integral)
    _compare_multiple_of(w, old, new)
