"""Composition keywords: allOf, anyOf, oneOf (branches matched regardless of order), not, if/then/else.

Branches are paired by probing every old branch against every new one: equivalent pairs first,
then pairs compatible in one direction; what is left over was added or removed. oneOf is analysed
like anyOf where its branches are provably disjoint (different types, listed values, or a required
discriminator property); where they may overlap, a change to them is ``one-of-*-branches-overlap``. A composition that appears or disappears
is checked against the whole schema on the other side, so wrapping ``{"type": "string"}`` in
``anyOf: [{"type": "string"}, {"type": "null"}]`` is recognised as a widening. A change of kind
(``allOf`` -> ``oneOf``...) is judged from the values each side's branches accept, never from the
keywords' names: each direction holds where one side's values are shown to lie within the other's
(``subsumption.contained``, which the walker also asks wherever the keywords call a direction broken).
A ``not`` added where no old value could match it (or removed where no new value could) changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from .context import allowed_values, as_object, effective_types, property_view, same_instance
from .model import RuleId as R
from .rules import ANNOTATION_RULES, effect
from .schema import ALL_TYPES, View, deref, describe
from .subsumption import branches, contained, with_branch

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


def compare_compositions(w: Walker, old: View, new: View, old_types: frozenset[str], new_types: frozenset[str]) -> None:
    before = [k for k in KINDS if old.schema_list(k) is not None]
    after = [k for k in KINDS if new.schema_list(k) is not None]
    for kind in KINDS:
        if kind in before and kind in after:
            with _one_of_guard(w, old, new, kind, kind):
                _compare_branches(w, old, new, kind, kind)
    gone = [k for k in before if k not in after]
    came = [k for k in after if k not in before]
    if len(gone) == 1 and len(came) == 1:
        with _one_of_guard(w, old, new, gone[0], came[0]):
            _compare_kind_change(w, old, new, gone[0], came[0])
        return
    for kind in came:
        _composition_added(w, old, new, kind)
    for kind in gone:
        _composition_removed(w, old, new, kind)


def disjoint(a: View, b: View, depth: int = 3) -> bool:
    """True only if no instance can match both schemas: no common type, no common listed value, or,
    for objects only, a property one of them requires whose two schemas are disjoint."""
    a, b = deref(a), deref(b)
    if a.schema is False or b.schema is False:
        return True
    a, b = as_object(a), as_object(b)
    common = effective_types(a) & effective_types(b)
    if not common:
        return True
    values_a, values_b = allowed_values(a), allowed_values(b)
    if values_a is not None and values_b is not None and not values_a.keys() & values_b.keys():
        return True
    if common != {"object"} or depth == 0:
        return False
    props_a, props_b = a.schema_map("properties"), b.schema_map("properties")
    required = set(a.names("required")) | set(b.names("required"))
    return any(
        disjoint(property_view(a, name), property_view(b, name), depth - 1)
        for name in sorted(required & props_a.keys() & props_b.keys())
    )


def _pairwise_disjoint(branches: list[View]) -> bool:
    return all(disjoint(x, y) for i, x in enumerate(branches) for y in branches[i + 1 :])


@contextmanager
def _one_of_guard(w: Walker, old: View, new: View, old_kind: str, new_kind: str) -> Iterator[None]:
    """oneOf asks for exactly one matching branch; the branch-by-branch diff reads it like anyOf.

    From oneOf to oneOf that reading holds for the backward direction when NEW's branches cannot overlap
    (an old instance matches at most one of them), and for the forward one when OLD's cannot. Otherwise a
    changed branch (widened, added, duplicated) may make an instance match two, and that direction is not
    assured. A change of kind is judged by its own rule (anyOf -> oneOf narrows, oneOf -> anyOf widens)."""
    start = len(w.changes)
    yield
    if (old_kind, new_kind) != ("oneOf", "oneOf"):
        return
    if not any(c.rule not in ANNOTATION_RULES for c in w.changes[start:]):
        return
    where = describe(new.ptr)
    if not _pairwise_disjoint(branches(new, new_kind)):
        w.emit(
            R.ONE_OF_NEW_BRANCHES_OVERLAP,
            new.at(new_kind),
            f"the oneOf of {where} changed and its new branches may overlap (an old value may now match two)",
        )
    if not _pairwise_disjoint(branches(old, old_kind)):
        w.emit(
            R.ONE_OF_OLD_BRANCHES_OVERLAP,
            old.at(old_kind),
            f"the oneOf of {where} changed and its old branches may overlap (a new value may match two of them)",
        )


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
    """Paired branches diffed; the rest added or removed. A removed branch is judged by its own kind's
    rule, except when the kind changed and nothing paired up (or one branch became one branch, where
    all kinds mean the same): then NEW's kind judges it, since no old branch carries over."""
    pairs, lost, gained = pair_branches(w, branches(old, old_kind), branches(new, new_kind))
    for before, after in pairs:
        w.compare(before, after)
    where = describe(new.ptr)
    olds, news = branches(old, old_kind), branches(new, new_kind)
    single = len(olds) == 1 and len(news) == 1
    judge = new_kind if old_kind != new_kind and (single or not pairs) else old_kind
    for branch in lost:
        if not _repeats(w, branch, olds, old_kind, {before.ptr for before, _ in pairs}):
            w.emit(_BRANCH_REMOVED[judge], branch.ptr, f"a branch of {old_kind} in {where} was removed")
    for branch in gained:
        if not _repeats(w, branch, news, new_kind, {after.ptr for _, after in pairs}):
            w.emit(_BRANCH_ADDED[new_kind], branch.ptr, f"a branch was added to {new_kind} in {where}")


def _repeats(w: Walker, branch: View, siblings: list[View], kind: str, paired: set[str]) -> bool:
    """A branch equivalent to a paired branch, or to an earlier one, of the same anyOf/allOf adds nothing
    (not so for oneOf). Of several equivalent unpaired branches the first still counts."""
    if kind == "oneOf":
        return False
    position = next(i for i, s in enumerate(siblings) if s.ptr == branch.ptr)
    for i, other in enumerate(siblings):
        if i != position and (i < position or other.ptr in paired):
            probe = w.probe(_bare(other), _bare(branch))
            if probe.backward and probe.forward and probe.changes == 0:
                return True
    return False


def _bare(branch: View) -> View:
    """A branch without what its siblings say of the instance: in ``allOf: [{"type": "string"}, {}]`` the
    two branches are alike only because the first one is there, so equal they must be on their own."""
    return replace(branch, known=ALL_TYPES, peers=(), tag=f"{branch.tag}(alone)")


def _compare_kind_change(w: Walker, old: View, new: View, old_kind: str, new_kind: str) -> None:
    single = len(old.schema_list(old_kind) or []) == 1 and len(new.schema_list(new_kind) or []) == 1
    # anyOf and oneOf mean the same when the oneOf's branches are disjoint
    same = {old_kind, new_kind} == {"anyOf", "oneOf"} and _pairwise_disjoint(
        branches(old, old_kind) if old_kind == "oneOf" else branches(new, new_kind)
    )
    if single or same:  # one branch means the same under all three: the branches carry the change
        _compare_branches(w, old, new, old_kind, new_kind)
        return
    # Otherwise the keyword's name decides nothing: each direction holds when one side's instance set is
    # shown to lie inside the other's (allOf: the intersection of its branches; anyOf: their union; oneOf:
    # at most their union, and exactly it when the branches are disjoint).
    backward = contained(w, old, new, backward=True)
    forward = contained(w, new, old, backward=False)
    holds = {
        (True, True): "every value either schema accepts the other accepts too",
        (True, False): "every value the old schema accepted is still accepted",
        (False, True): "every value the new schema accepts was accepted before",
        (False, False): "neither schema's values are shown to lie within the other's",
    }[backward, forward]
    w.emit(
        _KIND_CHANGED[old_kind, new_kind],
        new.at(new_kind),
        f"{old_kind} of {describe(new.ptr)} became {new_kind}; judged by the branches' values: {holds}",
        directions=(backward, forward),
    )


def _composition_added(w: Walker, old: View, new: View, kind: str) -> None:
    """NEW gained allOf/anyOf/oneOf: implied if every OLD instance meets it (one branch, or all for allOf)."""
    covered = [w.probe(old, with_branch(new, kind, b)).backward for b in branches(new, kind)]
    implied = all(covered) if kind == "allOf" else any(covered)
    implied = implied and (kind != "oneOf" or _pairwise_disjoint(branches(new, kind)))
    rule = R.COMPOSITION_ADDED_IMPLIED if implied else R.COMPOSITION_ADDED
    note = "; every value the old schema accepted already meets it" if implied else ""
    w.emit(rule, new.at(kind), f"{kind} was added to {describe(new.ptr)}{note}")


def _composition_removed(w: Walker, old: View, new: View, kind: str) -> None:
    """OLD lost allOf/anyOf/oneOf: implied if every NEW instance still meets it."""
    covered = [w.probe(with_branch(old, kind, b), new).forward for b in branches(old, kind)]
    implied = all(covered) if kind == "allOf" else any(covered)
    implied = implied and (kind != "oneOf" or _pairwise_disjoint(branches(old, kind)))
    rule = R.COMPOSITION_REMOVED_IMPLIED if implied else R.COMPOSITION_REMOVED
    note = "; the rest of the new schema still implies it" if implied else ""
    w.emit(rule, old.at(kind), f"{kind} was removed from {describe(new.ptr)}{note}")


def compare_not(w: Walker, old: View, new: View, old_types: frozenset[str], new_types: frozenset[str]) -> None:
    before, after = old.schema_at("not"), new.schema_at("not")
    if before is not None and after is not None:
        with w.negation():
            w.compare(same_instance(old, "not", before), same_instance(new, "not", after))
    elif after is not None:
        # no old value can match the new 'not' schema: each still passes it
        moot = disjoint(old, same_instance(new, "not", after))
        note = "; no value the old schema accepted matches it" if moot else ""
        w.emit(
            R.NOT_ADDED,
            new.at("not"),
            f"{describe(new.ptr)} must now not match a 'not' schema{note}",
            directions=(True, effect(R.NOT_ADDED, w.session.policy)[1]) if moot else None,
        )
    elif before is not None:
        moot = disjoint(new, same_instance(old, "not", before))
        note = "; no value the new schema accepts matches it" if moot else ""
        w.emit(
            R.NOT_REMOVED,
            old.at("not"),
            f"the 'not' schema of {describe(new.ptr)} was removed{note}",
            directions=(effect(R.NOT_REMOVED, w.session.policy)[0], True) if moot else None,
        )


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
