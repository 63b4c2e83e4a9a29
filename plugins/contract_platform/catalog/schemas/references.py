"""References at schema positions only, and validators whose retrieval refuses every URI: nothing is fetched from
the network or the file system, whatever a schema says.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote, urldefrag, urljoin

import referencing
import referencing.jsonschema
from jsonschema.protocols import Validator
from referencing.exceptions import NoSuchResource

from contract_platform.catalog.documents import pointer_from_path, resolve_pointer
from contract_platform.catalog.schemas.drafts import DEFAULT_DIALECT, DRAFTS, Draft, dialect_of, validator_class
from contract_platform.catalog.schemas.positions import REF_KEYWORDS, child_schemas

__all__ = [
    "Reference",
    "catalogue_registry",
    "iter_refs",
    "reference_problem",
    "refuse_retrieval",
    "schema_resources",
    "validator_for",
]

_BASE: Final = "https://schema.contract-platform.invalid/root.json"  # base URI of a schema without $id


def refuse_retrieval(uri: str) -> referencing.Resource[Any]:
    """The retrieve function of every registry: no network, no file system, ever (``NoSuchResource``)."""
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class mypy cannot see into


def _resource(schema: Any, default: str) -> referencing.Resource[Any]:
    draft = dialect_of(schema, default) or DRAFTS[default]
    return draft.specification.create_resource(schema)


def catalogue_registry(
    documents: Iterable[tuple[str, Any]] = (), *, default: str = DEFAULT_DIALECT
) -> referencing.Registry[Any]:
    """A registry holding the catalogue's documents ((uri, schema) pairs) whose retrieval refuses all else."""
    registry: referencing.Registry[Any] = referencing.Registry(retrieve=refuse_retrieval)  # type: ignore[call-arg]
    resources = [(uri, _resource(schema, default)) for uri, schema in documents]
    return registry.with_resources(resources) if resources else registry


_EMPTY_REGISTRY: Final = catalogue_registry()


def validator_for(
    schema: Mapping[str, Any] | bool,
    *,
    formats: bool = True,
    registry: referencing.Registry[Any] | None = None,
    default: str = DEFAULT_DIALECT,
) -> Validator:
    """A validator of the schema's own draft, format assertions on, that resolves within the catalogue only."""
    cls = validator_class(schema, default)
    return cls(
        schema,
        format_checker=cls.FORMAT_CHECKER if formats else None,
        registry=_EMPTY_REGISTRY if registry is None else registry,
    )


@dataclass(frozen=True)
class Reference:
    """One reference keyword at a schema position: where it is, which keyword, its value, its absolute URI."""

    pointer: str
    keyword: str
    target: str
    uri: str  # the target resolved against the base URI in force there


def _join(base: str, ref: str) -> str:
    """RFC 3986 resolution, also for bases urllib will not join against (``urn:``): a fragment stays in ``base``."""
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    return urljoin(base, ref)


def _base_after(node: Mapping[str, Any], base: str, draft: Draft) -> str:
    """The base URI inside ``node``: changed by ``$id`` (``id`` in draft-04), not by a plain ``#anchor`` id."""
    ident = node.get("id" if draft.order == 4 else "$id")
    if isinstance(ident, str) and ident and not ident.startswith("#"):
        return urldefrag(_join(base, ident))[0]
    return base


def iter_refs(schema: Any, *, default: str = DEFAULT_DIALECT) -> Iterator[Reference]:
    """Every reference keyword at a schema position, depth first, with its target resolved to a URI."""
    draft = dialect_of(schema, default) or DRAFTS[default]
    stack: list[tuple[Any, str, str]] = [(schema, "", _BASE)]
    while stack:
        node, pointer, base = stack.pop()
        if not isinstance(node, Mapping):
            continue
        base = _base_after(node, base, draft)
        for keyword in REF_KEYWORDS:
            target = node.get(keyword)
            if isinstance(target, str):
                yield Reference(pointer + pointer_from_path([keyword]), keyword, target, _join(base, target))
        stack.extend(reversed(list((sub, at, base) for sub, at in child_schemas(node, pointer))))


def schema_resources(schema: Any, draft: Draft) -> dict[str, tuple[Any, dict[str, Any]]]:
    """URI -> (resource node, its anchors) for the root and every embedded ``$id`` of ``schema``."""
    found: dict[str, tuple[Any, dict[str, Any]]] = {}
    stack: list[tuple[Any, str, str]] = [(schema, _BASE, _BASE)]
    while stack:
        node, base, resource = stack.pop()
        if not isinstance(node, Mapping):
            continue
        inner = _base_after(node, base, draft)
        if inner != base or not found:
            found.setdefault(inner, (node, {}))
            resource = inner
        anchors = found[resource][1]
        for key in ("$anchor", "$dynamicAnchor"):
            if isinstance(node.get(key), str):
                anchors.setdefault(node[key], node)
        ident = node.get("id" if draft.order == 4 else "$id")
        if isinstance(ident, str) and "#" in ident and draft.legacy:
            anchors.setdefault(ident.split("#", 1)[1], node)
        stack.extend((sub, inner, resource) for sub, _ in child_schemas(node, ""))
    return found


def reference_problem(file: str, ref: Reference, resources: Mapping[str, tuple[Any, dict[str, Any]]]) -> str | None:
    uri, fragment = urldefrag(ref.uri)
    if uri not in resources:
        return (
            f"forbidden reference: {ref.keyword} {ref.target!r} leaves the catalogue (schemas are never fetched "
            "from the network or the file system); bundle the definition into $defs and use '#/$defs/...'"
        )
    node, anchors = resources[uri]
    if ref.keyword == "$recursiveRef" and ref.target != "#":
        return f"$recursiveRef must be '#', not {ref.target!r}"
    fragment = unquote(fragment)
    if fragment == "" or fragment.startswith("/"):
        try:
            resolve_pointer(node, fragment)
        except KeyError:
            return f"{ref.keyword} {ref.target!r} does not resolve to anything in this schema"
        return None
    if fragment not in anchors:
        return f"{ref.keyword} {ref.target!r} names no anchor of this schema"
    return None
