"""What a consumer's guard tolerates in a payload its contract's schema refuses: the tolerant reader, decided once.

The guard validates a payload with the contract's own schema, strictly (the platform's validator; the archive
validation judges producers with the same schema). A payload the schema accepts goes to the handler as it is.
One it refuses is looked at error by error, and passes only when every error is one of these:

=========================================  ==================================================================
error                                      tolerated when
=========================================  ==================================================================
``enum``: a value the enum does not list   the enum's ``x-unknownValuePolicy`` is ``passthrough`` (the
                                           handler gets the value as sent) or ``fallback:<VALUE>`` (the
                                           handler gets ``<VALUE>``, the enum member the owner chose for
                                           anything unknown); ``reject`` or no policy: never
``additionalProperties: false``,           the contract's compatibility mode is FORWARD or FULL (and their
``unevaluatedProperties: false``: a        ``_TRANSITIVE`` forms): the owner promised that readers of this
property the schema does not name          version read data of later minors, which may add fields; BACKWARD
                                           and NONE keep a closed model closed
=========================================  ==================================================================

An open object (no ``additionalProperties: false``, the catalogue's default) accepts an added optional field
in every mode without any of this. An error inside ``anyOf``/``oneOf`` branches is never tolerated (which
branch was meant cannot be told). The pointers tolerated are handed to the handler (``Message.tolerated``)
and counted; nothing else about the payload changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import ValidationError

from contract_platform.catalog.documents import pointer_from_path

__all__ = ["FORWARD_MODES", "Tolerance", "classify", "fallback_of"]

FORWARD_MODES = frozenset({"FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"})
_POLICY = "x-unknownValuePolicy"
_CLOSING = frozenset({"additionalProperties", "unevaluatedProperties"})
_MOST = 50  # errors looked at; a payload with more is refused on the first ones


@dataclass(frozen=True)
class Tolerance:
    """One error the guard lets through: where (a pointer into the payload's envelope), why, and any fallback."""

    pointer: str  # /payload/...
    keyword: str  # enum | additionalProperties | unevaluatedProperties
    path: tuple[str | int, ...]  # the same place as tokens from the payload's root
    fallback: Any = None
    substitutes: bool = False  # True: the value at ``path`` becomes ``fallback``


def fallback_of(schema: Mapping[str, Any]) -> tuple[str, Any] | None:
    """(policy, fallback value) of an enum schema's ``x-unknownValuePolicy`` when it lets unknown values in."""
    policy = schema.get(_POLICY)
    if policy == "passthrough":
        return "passthrough", None
    if isinstance(policy, str) and policy.startswith("fallback:"):
        return "fallback", policy.split(":", 1)[1]
    return None


def classify(errors: Iterable[ValidationError], compatibility: str) -> tuple[list[Tolerance], list[ValidationError]]:
    """(what is tolerated, what is not) of a payload's schema errors under the contract's compatibility mode."""
    tolerated: list[Tolerance] = []
    refused: list[ValidationError] = []
    for index, error in enumerate(errors):
        if index >= _MOST:
            break
        tolerance = _tolerance(error, compatibility)
        if tolerance is None:
            refused.append(error)
        else:
            tolerated.append(tolerance)
    return tolerated, refused


def _tolerance(error: ValidationError, compatibility: str) -> Tolerance | None:
    if error.context:
        return None
    path = tuple(error.absolute_path)
    pointer = "/payload" + pointer_from_path(path)
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "enum":
        policy = fallback_of(schema)
        if policy is None:
            return None
        kind, value = policy
        return Tolerance(pointer, "enum", path, value, substitutes=kind == "fallback")
    if error.validator in _CLOSING and error.validator_value is False and compatibility in FORWARD_MODES:
        return Tolerance(pointer, str(error.validator), path)
    return None
