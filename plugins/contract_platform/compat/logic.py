"""Composition keywords: allOf, anyOf, oneOf (branches matched regardless of order), not, if/then/else.

Branches are paired by probing every old branch against every new one: equivalent pairs first,
then pairs compatible in one direction; what is left over was added or removed. oneOf is analysed
like anyOf (whether two branches overlap is not decided). A composition that appears or disappears
is checked against the whole schema on the other side, so wrapping ``{"type": "string"}`` in
``anyOf: [{"type": "string"}, {"type": "null"}]`` is recognised as a widening.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .context import as_object, same_instance
from .model import RuleId as R
from .schema import View, deref, describe, merge

if TYPE_CHECKING:
    from .walker import Walker

__all__ = ["compare_compositions", "compare_conditional", "compare_not", "pair_branches"]

KINDS = ("allOf", "anyOf", "oneOf")
_BRANCH_ADDED = {"allOf": R.ALL_OF_BRANCH_ADDED, "anyOf": R.ANY_OF_BRANCH_ADDED, "oneOf": R.ONE_OF_BRANCH_ADDED}
_BRANCH_REMOVED = {"allOf": R.ALL_OF_BRANCH_REMOVED, "anyOf": R.ANY_OF_BRANCH_REMOVED, "oneOf": R.ONE_OF_BRANCH_REMOVED}
_KIND_CHANGED = {
    ("allOf", "anyOf"): R.ALL_OF_TO_ANY_OF,
    ("oneOf", "anyOf"): R.ONE_OF_TO_ANY_OF,
    ("anyOf", "allOf"): R.ANY_OF_TO_ALL_OF,
    ("anyOf", "oneOf"): R.ANY_OF_TO_ONE_OF,
    ("allOf", "oneOf"): R.ALL_OF_TO_ONE_OF,
    ("oneOf", "allOf"): R.ONE_OF_TO_ALL_OF,
}


def _branches(view: View, kind: str) -> list[View]:
    return [same_instance(view, kind, schema, i) for i, schema in enumerate(view.schema_list(kind) or [])]


def compare_compositions(w: Walker, old: View, new: View, old_types: frozenset[str], new_types: frozenset[str]) -> None:
    before = [k for k in KINDS if old.schema_list(k) is not None]
    after = [k for k in KINDS if new.schema_list(k) is not None]
    for kind in KINDS:
        if kind in before and kind in after:
            _compare_branches(w, old, new, kind, kind)
    gone = [k for k in before if k not in after]
    came = [k for k in after if k not in before]
    if len(gone) == 1 and len(came) == 1:
        _compare_kind_change(w, old, new, gone[0], came[0])
        return
    for kind in came:
        _composition_added(w, old, new, kind)
    for kind in gone:
        _composition_removed(w, old, new, kind)


def pair_branches(
    w: Walker, olds: list[View], news: list[View]
) -> tuple[list[tuple[View, View]], list[View], list[View]]:
    """Match branches regardless of order: (pairs, old branches left over, new branches left over)."""
    candidates = []
    for i, before in enumerate(olds):
        for j, after in enumerate(news):
            probe = w.probe(before, after)
            if probe.backward or probe.forward:
                candidates.append((not (probe.backward and probe.forward), probe.changes, abs(i - j), i, j))
    pairs: list[tuple[int, int]] = []
    used_old: set[int] = set()
    used_new: set[int] = set()
    for *_, i, j in sorted(candidates):
        if i not in used_old and j not in used_new:
            pairs.append((i, j))
            used_old.add(i)
            used_new.add(j)
    return (
        [(olds[i], news[j]) for i, j in sorted(pairs, key=lambda p: p[1])],
        [b for i, b in enumerate(olds) if i not in used_old],
        [b for j, b in enumerate(news) if j not in used_new],
    )


def _compare_branches(w: Walker, old: View, new: View, old_kind: str, new_kind: str) -> None:
    pairs, lost, gained = pair_branches(w, _branches(old, old_kind), _branches(new, new_kind))
    for before, after in pairs:
        w.compare(before, after)
    where = describe(new.ptr)
    for branch in lost:
        w.emit(_BRANCH_REMOVED[old_kind], branch.ptr, f"a branch of {old_kind} in {where} was removed")
    for branch in gained:
        w.emit(_BRANCH_ADDED[new_kind], branch.ptr, f"a branch was added to {new_kind} in {where}")


def _compare_kind_change(w: Walker, old: View, new: View, old_kind: str, new_kind: str) -> None:
    single = len(old.schema_list(old_kind) or []) == 1 and len(new.schema_list(new_kind) or []) == 1
    if not single:  # one branch means the same under all three
        w.emit(
            _KIND_CHANGED[old_kind, new_kind], new.at(new_kind), f"{old_kind} of {describe(new.ptr)} became {new_kind}"
        )
    _compare_branches(w, old, new, old_kind, new_kind)


def _with_branch(view: View, kind: str, branch: View) -> View:
    """``view`` without ``kind``, merged with one of its branches: what that branch admits."""
    resolved = deref(branch)
    if resolved.schema is False:
        return resolved
    rest = replace(view, schema={k: v for k, v in view.schema.items() if k != kind})
    return merge(rest, as_object(resolved), tag=f"{kind}-branch", ptr=branch.ptr)


def _composition_added(w: Walker, old: View, new: View, kind: str) -> None:
    """NEW gained allOf/anyOf/oneOf: implied if every OLD instance meets it (one branch, or all for allOf)."""
    covered = [w.probe(old, _with_branch(new, kind, b)).backward for b in _branches(new, kind)]
    implied = all(covered) if kind == "allOf" else any(covered)
    rule = R.COMPOSITION_ADDED_IMPLIED if implied else R.COMPOSITION_ADDED
    note = "; every value the old schema accepted already meets it" if implied else ""
    w.emit(rule, new.at(kind), f"{kind} was added to {describe(new.ptr)}{note}")


def _composition_removed(w: Walker, old: View, new: View, kind: str) -> None:
    """OLD lost allOf/anyOf/oneOf: implied if every NEW instance still meets it."""
    covered = [w.probe(_with_branch(old, kind, b), new).forward for b in _branches(old, kind)]
    implied = all(covered) if kind == "allOf" else any(covered)
    rule = R.COMPOSITION_REMOVED_IMPLIED if implied else R.COMPOSITION_REMOVED
    note = "; the rest of the new schema still implies it" if implied else ""
    w.emit(rule, old.at(kind), f"{kind} was removed from {describe(new.ptr)}{note}")


def compare_not(w: Walker, old: View, new: View, old_types: frozenset[str], new_types: frozenset[str]) -> None:
    before, after = old.schema_at("not"), new.schema_at("not")
    if before is not None and after is not None:
        with w.negation():
            w.compare(same_instance(old, "not", before), same_instance(new, "not", after))
    elif after is not None:
        w.emit(R.NOT_ADDED, new.at("not"), f"{describe(new.ptr)} must now not match a 'not' schema")
    elif before is not None:
        w.emit(R.NOT_REMOVED, old.at("not"), f"the 'not' schema of {describe(new.ptr)} was removed")


def compare_conditional(w: Walker, old: View, new: View, old_types: frozenset[str], new_types: frozenset[str]) -> None:
    """if/then/else: a changed condition re-routes instances, so it is never assumed compatible."""
    before, after = _condition(old), _condition(new)
    where = describe(new.ptr)
    if before is None and after is None:
        return
    if before is None:
        w.emit(R.CONDITIONAL_ADDED, new.at("if"), f"a conditional (if/then/else) was added to {where}")
        return
    if after is None:
        w.emit(R.CONDITIONAL_REMOVED, old.at("if"), f"the conditional (if/then/else) of {where} was removed")
        return
    probe = w.probe(before, after)
    if not (probe.backward and probe.forward):
        w.emit(R.CONDITION_CHANGED, new.at("if"), f"the 'if' condition of {where} changed")
        return
    for keyword in ("then", "else"):
        w.compare(_branch(old, keyword), _branch(new, keyword))


def _condition(view: View) -> View | None:
    """The ``if`` schema, when a then or else gives it any effect."""
    schema = view.schema_at("if")
    if schema is None or not ("then" in view.schema or "else" in view.schema):
        return None
    return same_instance(view, "if", schema)


def _branch(view: View, keyword: str) -> View:
    schema = view.schema_at(keyword)
    return same_instance(view, keyword, True if schema is None else schema)
