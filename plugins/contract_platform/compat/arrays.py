"""Array keywords: items/prefixItems (and draft-07 array-form items + additionalItems), contains, bounds.

Positions are compared one by one: position ``i`` is governed by the i-th tuple schema when there
is one, otherwise by the schema for the remaining items. So appending a tuple position where extra
items were forbidden is the same as allowing them there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import RuleId as R
from .scalars import BoundRules, compare_bound
from .schema import View, describe

if TYPE_CHECKING:
    from .walker import Walker

__all__ = ["compare_arrays", "layout"]

_BOUNDS = {
    "minItems": BoundRules(R.MIN_ITEMS_ADDED, R.MIN_ITEMS_REMOVED, R.MIN_ITEMS_INCREASED, R.MIN_ITEMS_DECREASED),
    "maxItems": BoundRules(R.MAX_ITEMS_ADDED, R.MAX_ITEMS_REMOVED, R.MAX_ITEMS_INCREASED, R.MAX_ITEMS_DECREASED),
}
_CONTAINS_BOUNDS = {
    "minContains": BoundRules(
        R.MIN_CONTAINS_ADDED, R.MIN_CONTAINS_REMOVED, R.MIN_CONTAINS_INCREASED, R.MIN_CONTAINS_DECREASED
    ),
    "maxContains": BoundRules(
        R.MAX_CONTAINS_ADDED, R.MAX_CONTAINS_REMOVED, R.MAX_CONTAINS_INCREASED, R.MAX_CONTAINS_DECREASED
    ),
}


def layout(view: View) -> tuple[list[View], View]:
    """(one view per tuple position, the view for the remaining items), 2020-12 form (``dialects``).

    The remaining items are governed by ``items``, else by ``unevaluatedItems`` (an approximation only
    where ``contains`` or a subschema applied in place evaluates some of them), else by ``true``."""
    prefix = [
        view.child("prefixItems", s, i) for i, s in enumerate(view.schema_list("prefixItems", allow_empty=True) or [])
    ]
    for keyword in ("items", "unevaluatedItems"):
        rest = view.schema_at(keyword)
        if rest is not None:
            return prefix, view.child(keyword, rest)
    return prefix, view.child("items", True)


def compare_arrays(w: Walker, old: View, new: View, old_types: frozenset[str], new_types: frozenset[str]) -> None:
    if "array" not in old_types & new_types:
        return
    _compare_items(w, old, new)
    _compare_contains(w, old, new)
    for keyword, rules in _BOUNDS.items():
        compare_bound(w, old, new, keyword, rules, default=0 if keyword == "minItems" else None)
    _compare_unique(w, old, new)


def _compare_items(w: Walker, old: View, new: View) -> None:
    old_prefix, old_rest = layout(old)
    new_prefix, new_rest = layout(new)
    for i in range(max(len(old_prefix), len(new_prefix))):
        before = old_prefix[i] if i < len(old_prefix) else old_rest
        after = new_prefix[i] if i < len(new_prefix) else new_rest
        w.compare(before, after)
    w.compare(old_rest, new_rest)


def _compare_contains(w: Walker, old: View, new: View) -> None:
    before, after = old.schema_at("contains"), new.schema_at("contains")
    where = describe(new.ptr)
    if before is None and after is None:
        return
    if before is None:
        w.emit(R.CONTAINS_ADDED, new.at("contains"), f"{where} must now contain a matching item (contains added)")
        return
    if after is None:
        w.emit(R.CONTAINS_REMOVED, old.at("contains"), f"{where} no longer needs to contain a matching item")
        return
    w.compare(old.child("contains", before), new.child("contains", after))
    for keyword, rules in _CONTAINS_BOUNDS.items():
        compare_bound(w, old, new, keyword, rules, default=1 if keyword == "minContains" else None)


def _compare_unique(w: Walker, old: View, new: View) -> None:
    before, after = old.flag("uniqueItems"), new.flag("uniqueItems")
    if before == after:
        return
    if after:
        w.emit(R.UNIQUE_ITEMS_ADDED, new.at("uniqueItems"), f"items of {describe(new.ptr)} must now be unique")
    else:
        w.emit(R.UNIQUE_ITEMS_REMOVED, old.at("uniqueItems"), f"items of {describe(new.ptr)} may now repeat")
