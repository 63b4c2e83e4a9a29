"""Hostile input for the fuzz suite: what a hostile contributor or a buggy producer would send.

Strategies of JSON text, YAML flow values and Python values that are deep, huge, aliased, not UTF-8 or
not what the format says, mixed with ordinary ones so the suite also walks the usual paths.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

DEPTHS = st.sampled_from([1, 2, 50, 255, 256, 257, 300, 990, 1_100, 5_000])


def _nest_json(depth: int, kind: str) -> str:
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"k": ' * depth + "1" + "}" * depth


def _nest_yaml(depth: int, kind: str) -> str:
    if kind == "array":
        return "[" * depth + "]" * depth
    return "{k: " * depth + "1" + "}" * depth


def _alias_bomb(levels: int, width: int) -> str:
    """A YAML flow sequence whose last item expands to width**levels scalars."""
    items = [f"&a0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        items.append(f"&a{level} [{', '.join([f'*a{level - 1}'] * width)}]")
    return "[" + ", ".join(items) + "]"


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
ORDINARY_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip

JSON_TEXTS = st.one_of(
    st.builds(_nest_json, DEPTHS, st.sampled_from(["array", "object"])),
    st.builds(lambda n: "9" * n, st.sampled_from([19, 20, 4_300, 4_301, 5_000])),
    st.builds(lambda n: "-" + "1" * n + ".5e3", st.sampled_from([400, 5_000])),
    st.sampled_from(["1e999999", "NaN", "-Infinity", '"\\ud800"', '"\\u0000"', "[", "{", '"', "tru", ""]),
    st.builds(json.dumps, ORDINARY_VALUES),
    st.builds(lambda n: json.dumps("x" * n), st.sampled_from([0, 70_000])),
)

YAML_FLOW_VALUES = st.one_of(
    st.builds(_nest_yaml, DEPTHS, st.sampled_from(["array", "object"])),
    st.builds(_alias_bomb, st.integers(2, 10), st.integers(2, 10)),
    st.builds(lambda n: "9" * n, st.sampled_from([19, 20, 4_300, 4_301, 5_000])),
    st.sampled_from(
        [
            "99999999999999999999d",
            "36501d",
            "'" + "9" * 5_000 + "s'",
            "-1d",
            "0x" + "f" * 5_000,
            "!!python/object/apply:os.system ['true']",
            "!!binary aGVsbG8=",
            "*undefined",
            "&x [*x]",
            "2026-13-45",
            ".nan",
            "~",
            "'\\ud800'",
            '"\\x00\\uffff"',
            "[",
        ]
    ),
    st.builds(json.dumps, ORDINARY_VALUES),
)


def nested_value(depth: int) -> Any:
    """A Python value nested ``depth`` containers deep (built iteratively)."""
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


HOSTILE_BYTES = st.one_of(
    st.binary(max_size=64),
    st.sampled_from([b"\xff\xfe\x00", b"\xc3\x28", b"\xed\xa0\x80", b"\x00" * 8, b"\xef\xbb\xbf{}"]),
)


# ECMA-262 patterns that backtrack exponentially, or that a linear engine refuses, or that are no pattern at all
CATASTROPHIC_PATTERN = "^(a+)+$"
BACKTRACKING_TEXT = "a" * 41 + "!"  # 2**41 steps for a backtracking engine on CATASTROPHIC_PATTERN
HOSTILE_PATTERNS = st.one_of(
    st.sampled_from(
        [
            CATASTROPHIC_PATTERN,
            "(a|a)+$",
            "(a|aa)+$",
            "^(\\w+\\s?)+$",
            "(.*a){12}",
            "a{1000}",
            "a{99999999999}",
            "(a{1000}){1000}",
            "(?=a)a",
            "(a)\\1",
            "[",
            "(?<n>a)\\k<n>",
            "\\ud800",
        ]
    ),
    st.text(alphabet="a()|+*?{}[]^$\\.0123456789,-=!<>:", max_size=16),
)


class WireBytes(str):
    """Text whose wire form is ``raw``, any bytes: what a client in another language can send where pika would
    encode UTF-8 (pika turns a field's ``str`` into bytes with ``.encode("UTF-8")``). As a ``str`` it reads as
    the platform keeps such bytes: ``surrogateescape``."""

    raw: bytes

    def __new__(cls, raw: bytes) -> WireBytes:
        text = super().__new__(cls, raw.decode("utf-8", "surrogateescape"))
        text.raw = raw
        return text

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        return self.raw

    def __copy__(self) -> WireBytes:  # pika copies its connection parameters
        return self

    def __deepcopy__(self, memo: object) -> WireBytes:
        return self
