"""Bounds on input the platform does not control: one nesting limit for every walk over JSON or YAML.

Contracts come from pull requests and messages from any producer; a document nested thousands deep
would otherwise end in a ``RecursionError`` somewhere (a deep copy, a hash, a validator). Every reader
checks nesting against ``depth_limit()`` first (256 by default, ``$CONTRACT_MAX_JSON_DEPTH`` from 16 to
1000) and reports a deeper document as a finding with the pointer where it
goes too deep; nothing walks what this module has not measured. The walks here are iterative, so
they never recurse themselves.

::

    depth_limit()                          -> 256
    nesting_beyond(value)                  -> None, or the pointer of the first container past the limit
    nesting_beyond_text(text)              -> the same for JSON text no parser could read
    may_nest_beyond(text)                  -> False when too few brackets to nest that deep (skip the walk)
    MAX_INTEGER_DIGITS                     -> 4300: longer integers are bad input (Python refuses them too)
    MAX_PATTERN_REPETITION                 -> 1000: a larger {n,m} in a schema regular expression is not evaluated
    MAX_PATTERN_MEMORY                     -> 8 MiB: a regular expression whose compiled program is larger neither

Regular expressions from schemas run in time linear in the text (``contract_platform.patterns``); these two
bound what compiling one may cost.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

__all__ = [
    "DEFAULT_DEPTH_LIMIT",
    "MAX_INTEGER_DIGITS",
    "MAX_PATTERN_MEMORY",
    "MAX_PATTERN_REPETITION",
    "depth_limit",
    "may_nest_beyond",
    "nesting_beyond",
    "nesting_beyond_text",
]

MAX_INTEGER_DIGITS = 4300  # Python's own default (sys.get_int_max_str_digits) for int <-> str
if sys.flags.int_max_str_digits > 0:  # -X int_max_str_digits lowered it: respect the lower bound
    MAX_INTEGER_DIGITS = min(MAX_INTEGER_DIGITS, sys.flags.int_max_str_digits)

MAX_PATTERN_REPETITION = 1_000  # RE2's own bound on {n,m}
MAX_PATTERN_MEMORY = 8 << 20  # bytes of compiled program per regular expression (RE2's default)

DEFAULT_DEPTH_LIMIT = 256


def depth_limit() -> int:
    """How many containers deep a document may nest (``{"a": 1}`` is 1 deep): ``$CONTRACT_MAX_JSON_DEPTH``
    (16 to 1000) or 256. A value that is not an integer in range falls back to 256 rather than lift the bound."""
    text = os.environ.get("CONTRACT_MAX_JSON_DEPTH", "").strip()
    if text.isdigit() and len(text) <= 4 and 16 <= int(text) <= 1000:
        return int(text)
    return DEFAULT_DEPTH_LIMIT


def _pointer(node: tuple[Any, ...] | None) -> str:
    tokens: list[str] = []
    while node is not None:
        node, key = node
        tokens.append(str(key).replace("~", "~0").replace("/", "~1"))
    return "".join("/" + token for token in reversed(tokens))


def nesting_beyond(value: Any, limit: int | None = None) -> str | None:
    """The JSON pointer of the first container nested deeper than ``limit``, or None when within it.

    Dicts and lists (and tuples) are containers; anything else is a leaf. Iterative: safe on any depth.
    """
    limit = depth_limit() if limit is None else limit
    if not isinstance(value, dict | list | tuple):
        return None
    stack: list[tuple[Any, int, tuple[Any, ...] | None]] = [(value, 1, None)]
    while stack:
        current, depth, node = stack.pop()
        if depth > limit:
            return _pointer(node)
        items = current.items() if isinstance(current, dict) else enumerate(current)
        for key, item in items:
            if isinstance(item, dict | list | tuple):
                stack.append((item, depth + 1, (node, key)))
    return None


def may_nest_beyond(text: str | bytes, limit: int | None = None) -> bool:
    """False when ``text`` has too few brackets to nest past ``limit``: the cheap test before a walk."""
    limit = depth_limit() if limit is None else limit
    if isinstance(text, str):
        return text.count("{") + text.count("[") > limit
    return text.count(b"{") + text.count(b"[") > limit


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"(?:\s*:)?|[\[\]{},]')


def nesting_beyond_text(text: str, limit: int | None = None) -> str | None:
    """``nesting_beyond`` for JSON text, without parsing it (for text too deep for a parser to read).

    Follows brackets, commas and object keys only, so the pointer is right for valid JSON and a best
    effort for anything else.
    """
    limit = depth_limit() if limit is None else limit
    stack: list[list[Any]] = []  # [kind, key or index]
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("{", "["):
            if len(stack) >= limit:
                return _pointer_of(stack)
            stack.append([token, None if token == "{" else 0])
        elif token in ("}", "]"):
            if stack:
                stack.pop()
        elif token == ",":
            if stack and stack[-1][0] == "[":
                stack[-1][1] += 1
        elif token.endswith(":") and stack and stack[-1][0] == "{":
            try:
                stack[-1][1] = json.loads(token[:-1].rstrip())
            except ValueError:
                stack[-1][1] = token[1:-1]
    return None


def _pointer_of(stack: list[list[Any]]) -> str:
    return "".join("/" + str(key).replace("~", "~0").replace("/", "~1") for _, key in stack)
