"""An empirical check of the engine's verdicts: instances generated from one schema, validated by the other.

If the engine calls a pair *backward* compatible, every instance valid under OLD must be valid under
NEW; *forward*: every instance valid under NEW must be valid under OLD. ``verify_samples`` draws
instances from the source schema with ``hypothesis-jsonschema`` and validates them with the
platform's own validator for the target; a failure is shrunk by Hypothesis to a minimal instance.
``pairs()`` generates schema pairs (a schema and an edit of it, across drafts too) for the property
test and ``benchmarks/compat_soundness.py``.

Hypothesis is imported inside the functions only, so ``contractctl diff`` stays fast when the check
is not asked for.

hypothesis-jsonschema matches ``pattern`` and ``patternProperties`` with Python's backtracking ``re``
while it generates, so a pattern that repeats a group (``(a+)+``, ``(a|aa)*``, ``(x){3}``) or one the
platform does not evaluate is left out of the schema generated from; every instance is still judged
by the platform's validator, which evaluates every pattern in linear time (``contract_platform.patterns``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from contract_platform.catalog.schemas import DEFAULT_DIALECT, schema_problems, validator_for
from contract_platform.patterns import pattern_problem

from .dialects import normalise

if TYPE_CHECKING:
    from hypothesis import settings
    from hypothesis import strategies as st

    from contract_platform.compat.model import Change

__all__ = [
    "Counterexample",
    "SampleCheck",
    "called_compatible",
    "generation_schema",
    "instances",
    "pairs",
    "sampling_settings",
    "verify_samples",
]

DIRECTIONS: Final = ("backward", "forward")


@dataclass(frozen=True)
class Counterexample:
    """An instance the source schema accepts and the target rejects, with the target's reason."""

    instance: Any
    reason: str
    pointer: str


@dataclass(frozen=True)
class SampleCheck:
    """One direction checked by sampling: ``backward`` samples OLD against NEW, ``forward`` NEW against OLD."""

    direction: str
    samples: int  # how many instances were asked for
    counterexample: Counterexample | None = None
    skipped: str | None = None  # why no instance could be drawn (e.g. the source schema accepts nothing)

    @property
    def holds(self) -> bool:
        return self.counterexample is None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"direction": self.direction, "samples": self.samples, "holds": self.holds}
        if self.counterexample is not None:
            out["counterexample"] = {
                "instance": self.counterexample.instance,
                "reason": self.counterexample.reason,
                "pointer": self.counterexample.pointer,
            }
        if self.skipped is not None:
            out["skipped"] = self.skipped
        return out


# -- from the platform's schema to one hypothesis-jsonschema can generate from -------------------------


_REPEATED_GROUP: Final = re.compile(r"\)(?:[*+]|\{[0-9])")  # a group under * + or {n}: the backtracking kind


def _generates_safely(pattern: Any) -> bool:
    """May hypothesis-jsonschema's backtracking ``re`` run ``pattern``? No repeated group, and one the platform
    evaluates (plain text, not a regular expression, is scanned here in time linear in its length)."""
    return isinstance(pattern, str) and _REPEATED_GROUP.search(pattern) is None and pattern_problem(pattern) is None


def _generation_node(node: Any) -> Any:
    """A 2020-12-form subschema rewritten in draft-07 spelling (what hypothesis-jsonschema reads)."""
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for keyword, value in node.items():
        if keyword in ("$schema", "$id", "$anchor", "$dynamicAnchor", "$comment") or keyword.startswith("x-"):
            continue
        if keyword == "pattern" and not _generates_safely(value):
            continue
        if keyword == "patternProperties" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if _generates_safely(k)}
        if keyword in ("not", "if", "then", "else", "additionalProperties", "propertyNames", "contains"):
            out[keyword] = _generation_node(value)
        elif keyword in ("properties", "patternProperties", "$defs", "definitions"):
            out[keyword] = {k: _generation_node(v) for k, v in value.items()}
        elif keyword in ("allOf", "anyOf", "oneOf"):
            out[keyword] = [_generation_node(v) for v in value]
        elif keyword == "prefixItems":
            out["items"] = [_generation_node(v) for v in value]
            if "items" in node:
                out["additionalItems"] = _generation_node(node["items"])
        elif keyword == "items":
            if "prefixItems" not in node:
                out["items"] = _generation_node(value)
        elif keyword == "dependentRequired":
            out.setdefault("dependencies", {}).update(value)
        elif keyword == "dependentSchemas":
            out.setdefault("dependencies", {}).update({k: _generation_node(v) for k, v in value.items()})
        else:
            out[keyword] = value
    if "$ref" in out and len(out) > 1:  # 2020-12 applies $ref's siblings; draft-07 would ignore them
        ref = out.pop("$ref")
        out["allOf"] = [*out.get("allOf", []), {"$ref": ref}]
    return out


def generation_schema(schema: Any, default: str = DEFAULT_DIALECT) -> Any:
    """``schema`` (any supported draft) in the draft-07 spelling hypothesis-jsonschema generates from."""
    if isinstance(schema, bool):
        return schema
    return {"$schema": "http://json-schema.org/draft-07/schema#", **_generation_node(normalise(schema, default).schema)}


def _patch_hypothesis_jsonschema() -> None:
    """hypothesis-jsonschema 0.23 drives ``hypothesis.internal.conjecture.utils.many`` with ``more()``, which
    newer Hypothesis releases replaced by ``with many(...) as e: for _ in e``. Adapt it once, here."""
    import hypothesis_jsonschema._from_schema as impl
    from hypothesis.internal.conjecture import utils

    if hasattr(utils.many, "more") or getattr(impl.cu, "adapted", False):
        return

    class _Many:
        def __init__(self, data: Any, **sizes: Any) -> None:
            self._many = utils.many(data, **sizes)
            self._many.__enter__()
            self._each = iter(self._many)

        def more(self) -> bool:
            try:
                next(self._each)
            except StopIteration:
                self._many.__exit__(None, None, None)
                return False
            return True

        def reject(self, why: str | None = None) -> None:
            self._many.reject(why)

    class _Utils:
        adapted = True
        many = _Many

    impl.cu = _Utils  # type: ignore[assignment]


def instances(schema: Any, default: str = DEFAULT_DIALECT) -> st.SearchStrategy[Any]:
    """Instances valid under ``schema`` (checked by the platform's validator, so generator gaps cannot lie)."""
    _patch_hypothesis_jsonschema()
    from hypothesis_jsonschema import from_schema

    validator = validator_for(schema, default=default)
    strategy: st.SearchStrategy[Any] = from_schema(generation_schema(schema, default))
    return strategy.filter(_accepted_by(validator))


def _accepted_by(validator: Any) -> Callable[[Any], bool]:
    """A small predicate (Hypothesis reads a filter's source; jsonschema's ``is_valid`` is a long one)."""

    def accepted(instance: Any) -> bool:
        return bool(validator.is_valid(instance))

    return accepted


# -- checking one pair ---------------------------------------------------------------------------------


def _first_error(validator: Any, instance: Any) -> tuple[str, str]:
    from contract_platform.catalog.documents import pointer_from_path

    error = next(iter(validator.iter_errors(instance)), None)
    return ("", "rejected") if error is None else (pointer_from_path(error.absolute_path), error.message)


def _rejected_by(validator: Any) -> Callable[[Any], bool]:
    return lambda instance: not validator.is_valid(instance)


def sampling_settings(examples: int, **more: Any) -> settings:
    """Hypothesis's settings for ``examples`` draws of a soundness check: generate and shrink only, no deadline,
    no example database, no health check (a slow or much-filtered draw is part of what is checked)."""
    from hypothesis import HealthCheck, Phase, settings

    return settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        **more,
    )


def called_compatible(changes: Sequence[Change]) -> list[str]:
    """The directions (``DIRECTIONS``) in which ``changes`` keep every instance valid: what sampling checks."""
    held = {"backward": all(c.backward for c in changes), "forward": all(c.forward for c in changes)}
    return [direction for direction in DIRECTIONS if held[direction]]


def verify_samples(
    old: Any,
    new: Any,
    *,
    samples: int = 100,
    directions: Sequence[str] = DIRECTIONS,
    default: str = DEFAULT_DIALECT,
) -> list[SampleCheck]:
    """Per direction, up to ``samples`` instances of the source schema validated against the target.

    A failing instance is shrunk to a minimal one. Both schemas must be valid (``schema_problems``);
    nothing is ever fetched, whatever they say."""
    from hypothesis import find
    from hypothesis.errors import InvalidArgument, NoSuchExample, Unsatisfiable

    for label, schema in (("old schema", old), ("new schema", new)):
        if schema_problems(label, schema, default=default):
            raise ValueError(f"{label} is not a valid schema; check it before sampling")
    config = sampling_settings(samples, derandomize=True)
    checks = []
    for direction in directions:
        source, target = (old, new) if direction == "backward" else (new, old)
        validator = validator_for(target, default=default)
        try:
            found = find(instances(source, default), _rejected_by(validator), settings=config)
        except NoSuchExample:
            checks.append(SampleCheck(direction, samples))
            continue
        except Unsatisfiable:
            checks.append(SampleCheck(direction, samples, skipped="the source schema accepts no instance to sample"))
            continue
        except InvalidArgument as exc:  # hypothesis-jsonschema cannot generate from this schema
            checks.append(SampleCheck(direction, samples, skipped=f"no instances can be generated: {exc}"))
            continue
        pointer, reason = _first_error(validator, found)
        checks.append(SampleCheck(direction, samples, Counterexample(found, reason, pointer)))
    return checks


# -- generated pairs -----------------------------------------------------------------------------------

_NAMES: Final = ("a", "b", "c", "const", "enum")  # "const"/"enum" as property names: they are names


def _leaves() -> st.SearchStrategy[Any]:
    from hypothesis import strategies as st

    small = st.integers(0, 4)
    bound = st.integers(-3, 6)
    strings = st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={"minLength": small, "maxLength": small, "enum": st.lists(st.sampled_from("xyz"), min_size=1, max_size=3, unique=True), "pattern": st.sampled_from(["^x", "y$"])},
    )  # fmt: skip
    numbers = st.fixed_dictionaries(
        {"type": st.sampled_from(["integer", "number"])},
        optional={"minimum": bound, "maximum": bound, "exclusiveMinimum": bound, "exclusiveMaximum": bound, "multipleOf": st.sampled_from([1, 2, 3])},
    )  # fmt: skip
    others = st.sampled_from(
        [
            {"type": "boolean"},
            {"type": "null"},
            {"type": ["string", "null"]},
            {"const": 1},
            {"enum": [1, "x", None]},
            True,
        ]
    )
    return st.one_of(strings, numbers, others)


def _combined(kind: str, branches: list[Any]) -> dict[str, Any]:
    return {kind: branches}


def _valid_pair(pair: tuple[Any, Any]) -> bool:
    return not schema_problems("old", pair[0]) and not schema_problems("new", pair[1])


def _schemas() -> st.SearchStrategy[Any]:
    from hypothesis import strategies as st

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        names = st.sampled_from(_NAMES)
        objects = st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(names, children, max_size=3)},
            optional={"required": st.lists(names, max_size=2, unique=True), "additionalProperties": st.one_of(st.booleans(), children), "maxProperties": st.integers(1, 4)},
        )  # fmt: skip
        arrays = st.fixed_dictionaries(
            {"type": st.just("array")},
            optional={"items": children, "prefixItems": st.lists(children, min_size=1, max_size=2), "minItems": st.integers(0, 2), "maxItems": st.integers(1, 3), "uniqueItems": st.booleans()},
        )  # fmt: skip
        branches = st.lists(children, min_size=1, max_size=3)
        combined = st.builds(_combined, st.sampled_from(["anyOf", "oneOf", "allOf"]), branches)
        return st.one_of(objects, arrays, combined)

    return st.recursive(_leaves(), extend, max_leaves=6)


_NUMERIC: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
                   "minItems", "maxItems", "maxProperties")  # fmt: skip


def _edits(data: Any, node: dict[str, Any]) -> None:
    """One random edit of ``node`` in place: bounds, required, properties, types, values, combinators."""
    from hypothesis import strategies as st

    bounds = [k for k in _NUMERIC if isinstance(node.get(k), int) and not isinstance(node.get(k), bool)]
    ops: list[Callable[[], None]] = []
    if bounds:
        key = data.draw(st.sampled_from(bounds))
        ops.append(lambda: node.__setitem__(key, max(0, node[key] + data.draw(st.integers(-2, 2)))))
        ops.append(lambda: node.pop(key))
    if node.get("type") in ("integer", "number"):
        ops.append(lambda: node.__setitem__(data.draw(st.sampled_from(_NUMERIC[:4])), data.draw(st.integers(-3, 6))))
        ops.append(lambda: node.__setitem__("type", "number" if node["type"] == "integer" else "integer"))
    if "properties" in node:
        name = data.draw(st.sampled_from(_NAMES))
        required = list(node.get("required", []))
        ops.append(
            lambda: node.__setitem__(
                "required", [n for n in required if n != name] if name in required else [*required, name]
            )
        )
        ops.append(lambda: node["properties"].pop(name, None))
        ops.append(lambda: node["properties"].__setitem__(name, data.draw(_leaves())))
        ops.append(lambda: node.__setitem__("additionalProperties", data.draw(st.booleans())))
        ops.append(lambda: node.pop("additionalProperties", None))
        ops.append(lambda: node.__setitem__("unevaluatedProperties", False))
    if "enum" in node:
        ops.append(lambda: node.__setitem__("enum", [*node["enum"], data.draw(st.sampled_from(["w", 2, None]))]))
        ops.append(lambda: node.__setitem__("enum", node["enum"][1:] or node["enum"]))
    for kind in ("anyOf", "oneOf", "allOf"):
        if kind in node:
            ops.extend(_branch_edits(data, node, kind))
    if node.get("type") == "array":
        ops.append(lambda: node.__setitem__("items", data.draw(st.one_of(st.booleans(), _leaves()))))
        ops.append(lambda: node.pop("prefixItems", None))
    ops.append(
        lambda: node.__setitem__(
            "type", data.draw(st.sampled_from(["string", "integer", "object", ["string", "null"]]))
        )
    )
    ops.append(lambda: node.update({"anyOf": [{"type": "null"}, dict(node)]}))
    ops[data.draw(st.integers(0, len(ops) - 1), label="edit")]()  # an index: describing lambdas is slow


def _branch_edits(data: Any, node: dict[str, Any], kind: str) -> list[Callable[[], None]]:
    """Change the combinator's kind, duplicate, reorder or drop a branch."""
    from hypothesis import strategies as st

    branches: list[Any] = node[kind]

    def change_kind() -> None:
        node[data.draw(st.sampled_from(["anyOf", "oneOf", "allOf"]))] = node.pop(kind)

    def duplicate() -> None:
        branches.append(copy.deepcopy(data.draw(st.sampled_from(branches))))

    def drop() -> None:
        if len(branches) > 1:
            branches.pop()

    return [change_kind, duplicate, branches.reverse, drop]


def _nodes(schema: Any) -> list[dict[str, Any]]:
    """Every object subschema of ``schema`` (positions only: properties, items, branches)."""
    found: list[dict[str, Any]] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        found.append(node)
        stack.extend(node.get("properties", {}).values())
        stack.extend(v for k, v in node.items() if k in ("items", "additionalProperties"))
        for k in ("prefixItems", "anyOf", "oneOf", "allOf"):
            stack.extend(node.get(k, []))
    return found


def _as_draft07(schema: Any) -> Any:
    """The same schema spelled in draft-07 (tuple items + additionalItems), to make cross-draft pairs."""
    spelled = _generation_node(normalise(schema).schema) if isinstance(schema, dict) else schema
    return {"$schema": "http://json-schema.org/draft-07/schema#", **spelled} if isinstance(spelled, dict) else spelled


def pairs() -> st.SearchStrategy[tuple[Any, Any]]:
    """(old, new): a generated schema and one to three random edits of it; some written in draft-07, with
    or without ``$schema``."""
    from hypothesis import strategies as st

    @st.composite
    def edited(draw: Any) -> tuple[Any, Any]:
        old = draw(_schemas())
        new = copy.deepcopy(old)
        data = draw(st.data())
        for _ in range(draw(st.integers(1, 3))):
            nodes = _nodes(new)
            if not nodes:
                new = draw(_schemas())
                continue
            _edits(data, draw(st.sampled_from(nodes)))
        if draw(st.booleans()) and "unevaluated" not in repr(old):  # draft-07 has no unevaluated*
            old = _as_draft07(old)
            if draw(st.booleans()) and isinstance(old, dict):  # as teams write it: no $schema, read from keywords
                old = {k: v for k, v in old.items() if k != "$schema"}
        return old, new

    return edited().filter(_valid_pair)
