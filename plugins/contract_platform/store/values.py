"""What callers hand to the store, checked and normalised before it reaches SQL.

Datetimes must be aware (stored as UTC); vocabularies must be known members; JSON must be a JSON
object that round-trips. Mistakes here are the caller's bug: ``ValueError`` / ``TypeError``, not
``StoreError``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

__all__ = ["aware", "json_object", "member", "now", "schema_fingerprint", "semver_key"]

E = TypeVar("E", bound=StrEnum)


def schema_fingerprint(schema: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces): equal schemas, equal fingerprints."""
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def now() -> datetime:
    return datetime.now(UTC)


def aware(value: datetime | None, name: str) -> datetime:
    if value is None:
        return now()
    if value.tzinfo is None:
        raise ValueError(f"{name} is a naive datetime ({value.isoformat()}): pass an aware UTC datetime")
    return value.astimezone(UTC)


def member(enum: type[E], value: E | str, what: str) -> E:
    try:
        return enum(value)
    except ValueError:
        known = ", ".join(item.value for item in enum)
        raise ValueError(f"unknown {what} {value!r}; known: {known}") from None


def json_object(value: Mapping[str, Any], what: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a JSON object (a mapping), not {type(value).__name__}")
    try:
        copied = json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} cannot be stored as JSON: {exc}") from exc
    assert isinstance(copied, dict)
    return copied


def semver_key(version: str) -> tuple[tuple[int, ...], int, str]:
    core, _, prerelease = version.split("+", 1)[0].partition("-")
    try:
        numbers = tuple(int(part) for part in core.split("."))
    except ValueError:
        numbers = (2**31,)  # not semver: after every real version, in text order
    return numbers, 0 if prerelease else 1, version
