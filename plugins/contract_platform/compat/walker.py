"""The schema diff: walks OLD and NEW side by side and emits typed :class:`Change` records.

Each keyword family lives in its own module (``scalars``, ``arrays``, ``objects``, ``logic``) as
functions ``(walker, old, new, old_types, new_types)``. The walker owns what they share: ``$ref``
resolution, the memo that makes recursive schemas terminate (pairs of old/new pointers already
compared are skipped), the polarity flip inside ``not``, and *probes* — quiet sub-diffs that answer
"is this subschema compatible with that one?" for matching composition branches.

Where the changes found below a pair of schemas break a direction, the pair is judged once more by its
values (``subsumption.contained``): when every value the source side accepts is shown to be accepted by
the other, that direction holds for every change below, each saying so. The pairs compared below are
then forgotten by the memo, so that met again elsewhere, without that proof, they are judged afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from contract_platform.catalog.schemas import DEFAULT_DIALECT, schema_problems
from contract_platform.errors import SchemaError

from . import arrays, logic, objects, scalars, subsumption
from .context import as_object, effective_types, unconstrained
from .dialects import normalise, original_path, same_dialect_spelling
from .model import Change, Policy, RuleId
from .rules import ANNOTATION_RULES, effect
from .schema import REF_KEYWORDS, Document, View, deref, describe, freeze

__all__ = ["Probe", "Walker", "diff_schemas"]

Family = Callable[["Walker", View, View, frozenset[str], frozenset[str]], None]
FAMILIES: tuple[Family, ...] = (
    scalars.compare_annotations,
    scalars.compare_types,
    scalars.compare_values,
    scalars.compare_strings,
    scalars.compare_numbers,
    arrays.compare_arrays,
    objects.compare_objects,
    logic.compare_compositions,
    logic.compare_not,
    logic.compare_conditional,
)

_CONSEQUENCE = {
    (True, True): "",
    (False, True): ", so data written under the old schema may fail the new one",
    (True, False): ", so readers still on the old schema may reject data written under the new one",
    (False, False): ", so old data may fail the new schema and new data may fail the old one",
}
_SHOWN = {
    "backward": "; yet the new schema accepts every value the old one accepted at {where}",
    "forward": "; yet the old schema accepts every value the new one accepts at {where}",
}


@dataclass(frozen=True)
class Probe:
    """The outcome of a quiet sub-diff: directions that hold, and how many non-annotation changes."""

    backward: bool
    forward: bool
    changes: int


class Session:
    """State shared by a diff and all its probes."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.probes: dict[tuple[Any, ...], Probe | None] = {}


class Walker:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.negated = False
        self.changes: list[Change] = []
        self._seen: set[tuple[str, Any, str, Any, bool]] = set()
        self._seen_order: list[tuple[str, Any, str, Any, bool]] = []

    def emit(self, rule: RuleId, path: str, message: str, *, directions: tuple[bool, bool] | None = None) -> None:
        """Record a change; its directions are the rule's (``rules.RULES``) unless the caller decided them
        from the instances both schemas accept (``directions``, as (backward, forward))."""
        backward, forward = effect(rule, self.session.policy) if directions is None else directions
        if self.negated:
            backward, forward = forward, backward
            message += " (inside 'not', which reverses its effect)"
        self.changes.append(Change(rule, path, backward, forward, message + _CONSEQUENCE[backward, forward] + "."))

    def compare(self, old: View, new: View) -> None:
        """Diff two subschemas (raw: ``$ref`` allowed) and emit what changed."""
        if _has_ref(old) and _has_ref(new):
            scalars.compare_annotations(self, old, new, frozenset(), frozenset())
        written = old, new
        try:
            old, new = deref(old), deref(new)
        except SchemaError as exc:  # a reference that only leads back to itself: valid, but nothing to compare
            self._unmodelled(new, exc)
            return
        if old.schema is False or new.schema is False:
            self._compare_false(old, new)
            return
        old, new = as_object(old), as_object(new)
        if unconstrained(old) and unconstrained(new):
            scalars.compare_annotations(self, old, new, frozenset(), frozenset())
            return
        # Every unconstrained schema behaves alike, so they share one key: a recursive schema compared
        # with an absent one (whose default children have ever longer pointers) still terminates.
        key = (_memo_ptr(old), _identity(old), _memo_ptr(new), _identity(new), self.negated)
        if key in self._seen:
            return  # already compared, or being compared further up: recursion ends here
        first_change, first_seen = len(self.changes), len(self._seen_order)
        self._seen.add(key)
        self._seen_order.append(key)
        try:
            old_types, new_types = effective_types(old), effective_types(new)
            for family in FAMILIES:
                family(self, old, new, old_types, new_types)
        except SchemaError as exc:  # a valid schema the engine cannot read here: judged, never an error exit
            self._unmodelled(new, exc)
        self._judge_by_values(*written, first_change, first_seen)

    def _judge_by_values(self, old: View, new: View, first_change: int, first_seen: int) -> None:
        """Each direction the changes since ``first_change`` break, held after all when every value of one
        side lies within the other (``subsumption.contained``: old within new for backward). Inside ``not``
        the pair's own backward is the whole diff's forward, as ``emit`` flips it."""
        if len(self.changes) == first_change or old.doc.reads_evaluation or new.doc.reads_evaluation:
            return
        for own_backward in (True, False):
            direction = "backward" if own_backward != self.negated else "forward"
            if all(getattr(change, direction) for change in self.changes[first_change:]):
                continue
            inner, outer = (old, new) if own_backward else (new, old)
            if subsumption.contained(self, inner, outer, backward=own_backward):
                note = _SHOWN[direction].format(where=describe(new.ptr))
                self.changes[first_change:] = [_holding(c, direction, note) for c in self.changes[first_change:]]
                for forgotten in self._seen_order[first_seen:]:  # judged here under this proof only
                    self._seen.discard(forgotten)
                del self._seen_order[first_seen:]

    def _unmodelled(self, new: View, exc: SchemaError) -> None:
        self.emit(
            RuleId.KEYWORD_UNMODELLED,
            exc.problem.pointer or new.ptr,
            f"{describe(new.ptr)} could not be compared ({exc.problem.message}); judged conservatively",
        )

    def _compare_false(self, old: View, new: View) -> None:
        if old.schema is False and new.schema is False:
            return
        if old.schema is False:
            self.emit(RuleId.SCHEMA_FALSE_RELAXED, new.ptr, f"{describe(new.ptr)} allowed no value and now allows some")
        else:
            self.emit(RuleId.SCHEMA_MADE_FALSE, new.ptr, f"{describe(new.ptr)} now allows no value at all")

    @contextmanager
    def negation(self) -> Iterator[None]:
        self.negated = not self.negated
        try:
            yield
        finally:
            self.negated = not self.negated

    def probe(self, old: View, new: View) -> Probe:
        """Diff quietly; recursion into a probe already running assumes compatibility (co-induction)."""
        old, new = deref(old), deref(new)
        # the documents too: a branch is also probed against its sibling in the same document
        key = (old.doc.label, _memo_ptr(old), _identity(old), new.doc.label, _memo_ptr(new), _identity(new))
        probes = self.session.probes
        if key in probes:
            return probes[key] or Probe(True, True, 0)
        probes[key] = None
        sub = Walker(self.session)
        sub.compare(old, new)
        result = Probe(
            all(c.backward for c in sub.changes),
            all(c.forward for c in sub.changes),
            sum(1 for c in sub.changes if c.rule not in ANNOTATION_RULES),
        )
        probes[key] = result
        return result


def _holding(change: Change, direction: str, note: str) -> Change:
    """``change`` with ``direction`` holding, its message saying why (``note``) and what follows from that."""
    if getattr(change, direction):
        return change
    backward = change.backward or direction == "backward"
    forward = change.forward or direction == "forward"
    said = change.message.removesuffix(_CONSEQUENCE[change.backward, change.forward] + ".")
    return replace(
        change, backward=backward, forward=forward, message=said + note + _CONSEQUENCE[backward, forward] + "."
    )


def _identity(view: View) -> Any:
    """What tells a view apart from others at its pointer: its tag, and a merged view's own keywords too (the
    same branch merged into two different schemas, ``subsumption.with_branch``, is two different schemas)."""
    return view.tag if view.bases is None else (view.tag, freeze(view.schema))


def _memo_ptr(view: View) -> str:
    return "(anything)" if unconstrained(view) else view.ptr


def _has_ref(view: View) -> bool:
    return isinstance(view.schema, Mapping) and any(k in view.schema for k in REF_KEYWORDS)


def diff_schemas(
    old: Mapping[str, Any] | bool,
    new: Mapping[str, Any] | bool,
    *,
    policy: Policy = Policy.STRICT,
    default_dialect: str = DEFAULT_DIALECT,
) -> list[Change]:
    """Every difference between two JSON Schemas that matters for compatibility, plus annotation changes.

    Each schema is read in its own draft (``$schema``, else its draft-specific keywords, else
    ``default_dialect``: ``catalog.schemas.read_dialect``) and rewritten into one form first
    (``dialects``), so drafts compare by meaning. Paths are JSON pointers into the
    NEW schema as written (into the OLD one for things that were removed); a change inside a ``$ref``
    target is reported once, at the definition. A schema that is not valid under its draft (metaschema,
    references outside the schema) raises :class:`SchemaError` with its pointer; in a valid one, what the
    engine cannot interpret in a place (a circular reference, a keyword it does not model) is reported
    there as ``keyword-unmodelled`` and judged conservatively, never an error.
    """
    for label, schema in (("old schema", old), ("new schema", new)):
        problems = schema_problems(label, schema, default=default_dialect)
        if problems:
            raise SchemaError(label, problems[0].pointer, problems[0].message)
    before, after = normalise(old, default_dialect), normalise(new, default_dialect)
    same_dialect_spelling(before, after)
    walker = Walker(Session(Policy(policy)))
    try:
        walker.compare(
            View(Document(before.schema, "old schema"), before.schema, ""),
            View(Document(after.schema, "new schema"), after.schema, ""),
        )
    except RecursionError as exc:
        raise SchemaError("new schema", "", "the schemas nest too deeply to compare") from exc
    changes = []
    for change in dict.fromkeys(walker.changes):
        renamed = after.renamed if original_path(change.path, after.renamed) != change.path else before.renamed
        changes.append(replace(change, path=original_path(change.path, renamed)))
    return changes
