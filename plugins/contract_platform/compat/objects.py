"""Object keywords: properties, patternProperties, additionalProperties, required, dependencies, bounds.

Every property name is compared through its *effective* schema on each side: the declared one, or
else the patternProperties schema its name matches, or else additionalProperties. A property that
appears or disappears is therefore judged against what the other side allowed under that name:

- forbidden there (``additionalProperties: false``): the change is ``*-closed-model``;
- anything allowed there (an open content model): ``*-open-model``, which the policy decides;
- a schema there (``additionalProperties: {...}``): ``property-added``/``-removed`` plus the diff of
  the two schemas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .context import additional, property_view, same_instance, unconstrained
from .model import Policy
from .model import RuleId as R
from .scalars import BoundRules, compare_bound
from .schema import View, deref, describe, escape, name_matches

if TYPE_CHECKING:
    from .walker import Walker

__all__ = ["compare_objects"]

_BOUNDS = {
    "minProperties": BoundRules(
        R.MIN_PROPERTIES_ADDED, R.MIN_PROPERTIES_REMOVED, R.MIN_PROPERTIES_INCREASED, R.MIN_PROPERTIES_DECREASED
    ),
    "maxProperties": BoundRules(
        R.MAX_PROPERTIES_ADDED, R.MAX_PROPERTIES_REMOVED, R.MAX_PROPERTIES_INCREASED, R.MAX_PROPERTIES_DECREASED
    ),
}
_STRING = frozenset({"string"})


def compare_objects(w: Walker, old: View, new: View, old_types: frozenset[str], new_types: frozenset[str]) -> None:
    if "object" not in old_types & new_types:
        return
    _compare_properties(w, old, new)
    _compare_patterns(w, old, new)
    _compare_undeclared(w, old, new)
    _compare_required(w, old, new)
    w.compare(_optional(old, "propertyNames", known=_STRING), _optional(new, "propertyNames", known=_STRING))
    _compare_dependent_required(w, old, new)
    _compare_dependent_schemas(w, old, new)
    for keyword, rules in _BOUNDS.items():
        compare_bound(w, old, new, keyword, rules, default=0 if keyword == "minProperties" else None)


def _carries_names(view: View) -> bool:
    """An ``additionalProperties`` that is a schema of its own (a map's values), not open or closed."""
    return not isinstance(view.schema, bool) and not unconstrained(view)


def _compare_undeclared(w: Walker, old: View, new: View) -> None:
    """The schema for undeclared names. Under the lenient policy producers send declared fields only where
    the model is open (``additionalProperties`` absent or ``true``), so opening or closing it is compatible
    both ways. Where it is a schema (``{"additionalProperties": {"type": "string"}}``: a map), producers do
    send undeclared names, and the side that has one is judged as under the strict policy: its values must
    still be accepted by the other side."""
    before, after = additional(old), additional(new)
    if w.session.policy is not Policy.LENIENT or (_carries_names(before) and _carries_names(after)):
        w.compare(before, after)
        return
    probe = w.probe(before, after)
    if not probe.changes or (probe.backward and probe.forward):
        return
    backward = probe.backward or not _carries_names(before)  # old data carries undeclared names only if so
    forward = probe.forward or not _carries_names(after)
    note = (
        "under the lenient policy producers send declared properties only"
        if backward and forward
        else "values sent under the names that schema governs are not accepted by the other side"
    )
    w.emit(
        R.ADDITIONAL_PROPERTIES_CHANGED,
        after.ptr,
        f"the schema for undeclared properties of {describe(new.ptr)} changed; {note}",
        directions=(backward, forward),
    )


def _optional(view: View, keyword: str, **context: frozenset[str]) -> View:
    schema = view.schema_at(keyword)
    return view.child(keyword, True if schema is None else schema, **context)


def _effective(view: View, name: str) -> View:
    """The schema ``view`` applies to an undeclared property called ``name``."""
    for pattern, schema in view.schema_map("patternProperties").items():
        if name_matches(pattern, name):
            return view.child("patternProperties", schema, pattern)
    return additional(view)


def _ordered(before: Mapping[str, object], after: Mapping[str, object]) -> list[str]:
    return [*after, *(name for name in before if name not in after)]


def _compare_properties(w: Walker, old: View, new: View) -> None:
    before, after = old.schema_map("properties"), new.schema_map("properties")
    for name in _ordered(before, after):
        if name in before and name in after:
            w.compare(property_view(old, name), property_view(new, name))
        elif name in after:
            declared = property_view(new, name)
            _declared(w, _effective(old, name), declared, f"property {describe(declared.ptr)}")
        else:
            dropped = property_view(old, name)
            _undeclared(w, dropped, _effective(new, name), f"property {describe(dropped.ptr)}")


def _compare_patterns(w: Walker, old: View, new: View) -> None:
    before, after = old.schema_map("patternProperties"), new.schema_map("patternProperties")
    for pattern in _ordered(before, after):
        label = f"properties matching {pattern!r} in {describe(new.ptr)}"
        if pattern in before and pattern in after:
            w.compare(
                old.child("patternProperties", before[pattern], pattern),
                new.child("patternProperties", after[pattern], pattern),
            )
        elif pattern in after:
            _declared(w, additional(old), new.child("patternProperties", after[pattern], pattern), label)
        else:
            _undeclared(w, old.child("patternProperties", before[pattern], pattern), additional(new), label)


def _declared(w: Walker, allowed_before: View, declared: View, label: str) -> None:
    """A name (or pattern) declared in NEW that OLD only governed through ``allowed_before``."""
    before, after = deref(allowed_before), deref(declared)
    if before.schema is False:
        if after.schema is not False:
            w.emit(
                R.PROPERTY_ADDED_CLOSED_MODEL,
                declared.ptr,
                f"{label} was added where undeclared properties were forbidden",
            )
    elif unconstrained(before) and not unconstrained(after) and after.schema is not False:
        w.emit(
            R.PROPERTY_ADDED_OPEN_MODEL,
            declared.ptr,
            f"{label} was added to an open object, where old data may already use that name for any value",
        )
    else:
        w.emit(
            R.PROPERTY_ADDED, declared.ptr, f"{label} was added; the old schema allowed it as an undeclared property"
        )
        w.compare(allowed_before, declared)


def _undeclared(w: Walker, dropped: View, allowed_after: View, label: str) -> None:
    """A name (or pattern) declared in OLD that NEW only governs through ``allowed_after``."""
    before, after = deref(dropped), deref(allowed_after)
    if after.schema is False:
        if before.schema is not False:
            w.emit(
                R.PROPERTY_REMOVED_CLOSED_MODEL,
                dropped.ptr,
                f"{label} was removed and undeclared properties are forbidden",
            )
    elif unconstrained(after) and not unconstrained(before) and before.schema is not False:
        w.emit(
            R.PROPERTY_REMOVED_OPEN_MODEL,
            dropped.ptr,
            f"{label} was removed from an open object, where new data may then use that name for any value",
        )
    else:
        w.emit(
            R.PROPERTY_REMOVED,
            dropped.ptr,
            f"{label} was removed; the new schema still allows it as an undeclared property",
        )
        w.compare(dropped, allowed_after)


def _compare_required(w: Walker, old: View, new: View) -> None:
    before, after = old.names("required"), new.names("required")
    for name in after:
        if name not in before:
            field = describe(f"{new.ptr}/properties/{escape(name)}")
            w.emit(R.REQUIRED_ADDED, new.at("required"), f"property {field} is now required")
    for name in before:
        if name not in after:
            field = describe(f"{old.ptr}/properties/{escape(name)}")
            w.emit(R.REQUIRED_REMOVED, old.at("required"), f"property {field} is no longer required")


def _dependent_required(view: View) -> dict[str, tuple[list[str], str]]:
    """dependentRequired, and draft-07 ``dependencies`` whose value is a list of names."""
    found: dict[str, tuple[list[str], str]] = {}
    for keyword in ("dependencies", "dependentRequired"):
        for key, value in view.schema_map(keyword).items():
            if isinstance(value, list) or keyword == "dependentRequired":
                found[key] = (view.names(keyword, value), f"{view.at(keyword)}/{escape(key)}")
    return found


def _dependent_schemas(view: View) -> dict[str, View]:
    """dependentSchemas, and draft-07 ``dependencies`` whose value is a schema."""
    found: dict[str, View] = {}
    for keyword in ("dependencies", "dependentSchemas"):
        for key, value in view.schema_map(keyword).items():
            if keyword == "dependencies" and isinstance(value, list):
                continue
            if not isinstance(value, Mapping | bool):
                raise view.error(keyword, f"{keyword}[{key!r}] must be a schema or a list of property names")
            found[key] = same_instance(view, keyword, value, key)
    return found


def _crossed(old: View, new: View) -> set[str]:
    """Trigger names with a list of names on one side and a schema on the other, and nothing else: a list
    means the schema ``{"required": [...]}`` (draft-07 ``dependencies`` and 2019-09 ``dependentRequired``
    alike), so the two are compared as schemas."""
    req_old, req_new = _dependent_required(old), _dependent_required(new)
    sch_old, sch_new = _dependent_schemas(old), _dependent_schemas(new)
    return {
        key
        for key in {*req_old, *req_new}
        if (key in req_old and key not in sch_old and key in sch_new and key not in req_new)
        or (key in req_new and key not in sch_new and key in sch_old and key not in req_old)
    }


def _as_schema(view: View, key: str) -> View:
    """A trigger's list of names as the schema it means, at the list's place."""
    names, _ = _dependent_required(view)[key]
    keyword = "dependentRequired" if key in view.schema_map("dependentRequired") else "dependencies"
    return same_instance(view, keyword, {"required": names}, key)


def _compare_dependent_required(w: Walker, old: View, new: View) -> None:
    before, after = _dependent_required(old), _dependent_required(new)
    crossed = _crossed(old, new)
    for key in _ordered(before, after):
        if key in crossed:
            continue
        had, has = set(before.get(key, ([], ""))[0]), set(after.get(key, ([], ""))[0])
        trigger = describe(f"{new.ptr}/properties/{escape(key)}")
        if gained := sorted(has - had):
            w.emit(
                R.DEPENDENT_REQUIRED_ADDED,
                after[key][1],
                f"when {trigger} is present, {', '.join(gained)} must now be present too",
            )
        if lost := sorted(had - has):
            w.emit(
                R.DEPENDENT_REQUIRED_REMOVED,
                before[key][1],
                f"when {trigger} is present, {', '.join(lost)} no longer need to be",
            )


def _compare_dependent_schemas(w: Walker, old: View, new: View) -> None:
    before, after = _dependent_schemas(old), _dependent_schemas(new)
    for key in _crossed(old, new):
        if key in before:
            after[key] = _as_schema(new, key)
        else:
            before[key] = _as_schema(old, key)
    for key in _ordered(before, after):
        trigger = describe(f"{new.ptr}/properties/{escape(key)}")
        if key in before and key in after:
            w.compare(before[key], after[key])
        elif key in after:
            w.emit(
                R.DEPENDENT_SCHEMA_ADDED,
                after[key].ptr,
                f"when {trigger} is present, the object must now match an extra schema",
            )
        else:
            w.emit(
                R.DEPENDENT_SCHEMA_REMOVED,
                before[key].ptr,
                f"when {trigger} is present, the object no longer needs to match an extra schema",
            )
