"""One delivery as one archive line: ``encode_record`` writes the record, or its fallback when the properties
cannot be written as JSON.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from contract_platform.archive_record import fallback_record, to_record
from contract_platform.errors import clipped
from contract_platform.limits import depth_limit, nesting_beyond

__all__ = ["ORJSON_MAX_DEPTH", "encode_record"]

ORJSON_MAX_DEPTH = 254  # orjson refuses to write anything nested deeper


def encode_record(method: Any, properties: Any, body: bytes, received_at: datetime) -> tuple[bytes, bool]:
    """(the JSON line of one delivery, whether it is a fallback record): never raises for a delivery's content."""
    try:
        reason = _unencodable_headers(getattr(properties, "headers", None))
        if reason is None:
            return orjson.dumps(to_record(method, properties, body, received_at)) + b"\n", False
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:  # orjson.JSONEncodeError is a TypeError
        reason = f"its properties cannot be written as JSON ({type(exc).__name__}: {clipped(str(exc), 200)})"
    return orjson.dumps(fallback_record(method, properties, body, received_at, reason)) + b"\n", True


def _unencodable_headers(headers: Any) -> str | None:
    # the record holds headers two levels down (record -> properties -> headers); orjson writes 254 levels at most
    limit = min(depth_limit(), ORJSON_MAX_DEPTH) - 2
    pointer = nesting_beyond(headers, limit) if isinstance(headers, dict) else None
    if pointer is None:
        return None
    return f"its headers nest deeper than {limit} levels (at {clipped(pointer, 200)})"
