"""Where a schema change lands in a message: the engine's schema paths as envelope pointers, and coverage.

The compatibility engine reports a change at a JSON pointer into a *schema* as written
(``/$defs/LineItem/properties/sku/type``); a consumer declares what it reads as JSON pointers into the
*envelope* (``/payload/lines/*/sku``). This module translates the first into the second and decides
whether a read covers a change (docs/consumer-impact.md#how-impact-is-decided).

Translation walks the schema from its root, following local ``$ref``s, and records for every
subschema position the instance paths that reach it:

==================================================== =============================================
schema position                                      instance step
==================================================== =============================================
``properties/<name>``                                ``<name>``
``items`` (a schema), ``additionalItems``,           ``*`` (any array item)
``unevaluatedItems``, ``contains``
``items/<i>`` (draft-07 tuple), ``prefixItems/<i>``  ``<i>``
``additionalProperties``, ``patternProperties/<p>``, ``*`` (any member name)
``unevaluatedProperties``
``allOf|anyOf|oneOf/<i>``, ``not``, ``if``/``then``/ none: the same value (a change inside a ``oneOf``
``else``, ``dependentSchemas``, ``propertyNames``    branch lands on the field the branch declares)
``$defs``/``definitions``                            reached through the ``$ref``s that name them
==================================================== =============================================

A change at ``<object>/required`` lands on the property it names. Anything the walk cannot place
lands on the nearest position it can (at worst the whole payload): never on nothing, so a consumer is
never called untouched by guesswork.

Coverage: a read covers a change when one is a prefix of the other, token by token, where ``*``
matches any token (an index or a name): reading ``/payload/lines/*/sku`` is covered by a change at
``/payload/lines/*/sku``, at ``/payload/lines`` (an ancestor) and, reading ``/payload/customer``, by
one at ``/payload/customer/email`` (a descendant).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from contract_platform.catalog.documents import resolve_pointer
from contract_platform.catalog.pointers import split_pointer
from contract_platform.catalog.schemas import subschemas

__all__ = [
    "ANY",
    "ANY_NAME",
    "PositionIndex",
    "covers",
    "format_pointer",
    "instance_paths",
    "overlaps",
    "parse_read",
]

ANY = "*"  # any array item (the token a read writes)
ANY_NAME = "\x00*"  # any member name of an object (additionalProperties...): no read can spell it
Tokens = tuple[str, ...]

_SAME_VALUE = frozenset(
    {"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies", "propertyNames"}
)
_ANY_MEMBER = frozenset({"additionalProperties", "patternProperties", "unevaluatedProperties"})
_ANY_ITEM = frozenset({"additionalItems", "unevaluatedItems", "contains"})
_MAX_DEPTH = 64  # instance depth: a recursive schema is followed this deep, no further
_MAX_VISITS = 50_000
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")


def parse_read(pointer: str) -> Tokens:
    """A declared read (``/payload/lines/*/sku``) as tokens; ValueError when it is not a JSON pointer."""
    if pointer == "":
        return ()
    return tuple(split_pointer(pointer))


def format_pointer(tokens: Iterable[str]) -> str:
    """Tokens as a pointer; any member name (``additionalProperties``) shows as ``*`` too."""
    return "".join("/" + (ANY if t == ANY_NAME else t.replace("~", "~0").replace("/", "~1")) for t in tokens)


def _same(a: str, b: str) -> bool:
    return a == b or a in (ANY, ANY_NAME) or b in (ANY, ANY_NAME)


def _declares(position: str, read: str) -> bool:
    """Whether a schema step names what a read token asks for: ``*`` is an array item (any index), a name is
    a declared property or a member an ``additionalProperties`` schema governs, an index an item or tuple place."""
    if read == ANY:
        return position == ANY or position.isdigit()
    if read.isdigit() and position == ANY:
        return True
    return position in (read, ANY_NAME)


def covers(read: Sequence[str], change: Sequence[str]) -> bool:
    """Whether a consumer reading ``read`` sees a change at ``change`` (both envelope tokens): one is a
    prefix of the other, ``*`` matching any token."""
    return all(_same(a, b) for a, b in zip(read, change, strict=False))


overlaps = covers  # symmetric: two places in a message overlap when one contains the other


def _step(keyword: str, key: str | int | None) -> Tokens | None:
    """The instance step of a subschema position; None for positions no instance reaches directly."""
    if keyword == "properties":
        return (str(key),)
    if keyword in _ANY_MEMBER:
        return (ANY_NAME,)
    if keyword in _ANY_ITEM:
        return (ANY,)
    if keyword == "items":
        return (ANY,) if key is None else (str(key),)
    if keyword == "prefixItems":
        return (str(key),)
    if keyword in _SAME_VALUE:
        return ()
    return None  # $defs, definitions, contentSchema


class PositionIndex:
    """Every subschema position of one schema document and the instance paths (payload tokens) that reach it."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.positions: dict[Tokens, set[Tokens]] = {}
        self.declared: set[Tokens] = set()  # instance paths some object schema describes
        self._walk()

    def resolves(self, read: Sequence[str]) -> bool:
        """Whether a read (tokens below the schema's root) names a place this schema describes."""
        return any(
            len(path) == len(read) and all(_declares(p, r) for p, r in zip(path, read, strict=True))
            for path in self.declared
        )

    def _walk(self) -> None:
        stack: list[tuple[Tokens, Tokens, Any]] = [((), (), self.schema)]
        seen: set[tuple[Tokens, Tokens]] = set()
        visits = 0
        while stack and visits < _MAX_VISITS:
            where, instance, node = stack.pop()
            if (where, instance) in seen or len(instance) > _MAX_DEPTH:
                continue
            seen.add((where, instance))
            visits += 1
            self.positions.setdefault(where, set()).add(instance)
            if not isinstance(node, Mapping):
                continue
            self.declared.add(instance)
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#"):
                target = self._resolve(ref[1:])
                if target is not None:
                    stack.append((target[0], instance, target[1]))
            for keyword, key, child, _here in subschemas(node):
                step = _step(keyword, key)
                if step is None:
                    continue
                position = (*where, keyword) if key is None else (*where, keyword, str(key))
                stack.append((position, (*instance, *step), child))

    def _resolve(self, fragment: str) -> tuple[Tokens, Any] | None:
        try:
            tokens = tuple(split_pointer(fragment)) if fragment else ()
            return tokens, resolve_pointer(self.schema, fragment) if fragment else self.schema
        except (KeyError, ValueError, TypeError, IndexError):
            return None

    def place(self, path: Tokens) -> tuple[int, set[Tokens]]:
        """(length of the longest known position that starts ``path``, the instance paths reaching it)."""
        for length in range(len(path), -1, -1):
            found = self.positions.get(path[:length])
            if found:
                return length, found
        return 0, set()

    def node(self, path: Tokens) -> Any:
        try:
            return resolve_pointer(self.schema, format_pointer(path)) if path else self.schema
        except (KeyError, ValueError, TypeError, IndexError):
            return None


def _rest(rest: Tokens) -> Tokens:
    """Instance steps of the part of a change's path below the last position the walk knows (a subschema
    present in one document only, or a keyword): as far as it names positions, then the value itself."""
    steps: list[str] = []
    i = 0
    while i < len(rest):
        keyword = rest[i]
        key = rest[i + 1] if i + 1 < len(rest) else None
        tuple_place = keyword in ("prefixItems", "items") and key is not None and key.isdigit()
        if key is not None and (keyword == "properties" or tuple_place):
            steps.append(key)
            i += 2
        elif keyword == "patternProperties" and key is not None:
            steps.append(ANY_NAME)
            i += 2
        elif keyword in _ANY_MEMBER:
            steps.append(ANY_NAME)
            i += 1
        elif keyword in _ANY_ITEM or keyword == "items":
            steps.append(ANY)
            i += 1
        elif keyword in ("allOf", "anyOf", "oneOf") and key is not None and key.isdigit():
            i += 2
        elif keyword in _SAME_VALUE:
            i += 1
        else:
            break  # a keyword (type, enum, required...): the change is about the value here
    return tuple(steps)


def _required_names(path: Tokens, message: str, documents: Sequence[PositionIndex]) -> list[str]:
    """The property a ``required`` change names: the names added or removed there, kept to the one the
    message quotes when it quotes one."""
    lists: list[set[str]] = []
    for index in documents:
        value = index.node(path)
        lists.append({n for n in value if isinstance(n, str)} if isinstance(value, list) else set())
    differing = set[str]().union(*lists) - lists[0].intersection(*lists[1:]) if lists else set[str]()
    quoted = set(_QUOTED.findall(message))
    named = sorted(differing & quoted)
    return named or sorted(differing)


def instance_paths(path: str, message: str, new: PositionIndex, old: PositionIndex) -> list[Tokens]:
    """Where a change reported at ``path`` (into the new schema, else the old one) lands in the envelope."""
    try:
        tokens = tuple(split_pointer(path)) if path else ()
    except ValueError:
        tokens = ()
    placed = [(index, *index.place(tokens)) for index in (new, old)]
    best = max(length for _, length, _ in placed)
    found: set[Tokens] = set()
    for _index, length, reached in placed:
        if length != best:
            continue
        rest = tokens[length:]
        steps = _rest(rest)
        names: list[str] = []
        if rest[-1:] == ("required",):
            names = _required_names(tokens, message, (new, old))
        for base in reached:
            full = (*base, *steps)
            found.update({(*full, n) for n in names} if names else {full})
    return sorted(("payload", *t) for t in found) or [("payload",)]
