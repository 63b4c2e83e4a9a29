"""Schema regular expressions: ECMA-262 meanings, linear time, and one verdict on the fast and the slow path."""

from __future__ import annotations

import time

import pytest

from contract_platform.catalog.schemas import validator_for
from contract_platform.errors import PatternInvalid, PatternNotEvaluable
from contract_platform.patterns import compile_pattern, is_regex, pattern_problem
from contract_platform.validation.schemas import SchemaCheck

# (pattern, text, matches) as ECMA-262 reads them (RegExp.prototype.test without flags)
ECMA = [
    ("a$", "a\n", False),  # $ is the end of the input, not before a final newline
    ("^\\d$", "\u0663", False),  # \d is [0-9]
    ("^\\w$", "\u00e9", False),  # \w is [A-Za-z0-9_]
    ("^\\s$", "\u00a0", True),  # \s includes Unicode white space
    ("^\\s$", "\u2028", True),
    ("^[\\S]$", "\u3000", False),
    (".", "\n", False),  # . excludes line terminators
    (".", "\r", False),
    (".", "\u2029", False),
    ("^.$", "\U0001f600", True),  # one code point
    ("^\\uD83D\\uDE00$", "\U0001f600", True),  # a surrogate pair escape is one character
    ("^\\u00e9$", "\u00e9", True),
    ("^\\x41$", "A", True),
    ("^\\cJ$", "\n", True),
    ("[^]", "\n", True),  # any character
    ("[]", "a", False),  # no character
    ("^a{,2}$", "a{,2}", True),  # not a quantifier: literal
    ("^a{,2}$", "aa", False),
    ("^[[a]b]$", "ab]", True),  # "[" is a class member, not a nested class
    ("^[[a]b]$", "b", False),
    ("^[[a]b]$", "[b]", True),
    ("^[a-c--b]$", "-", True),  # "--" is no set difference
    ("^(?<year>\\d{4})$", "2026", True),
    ("\\bfoo\\b", "a foo b", True),
    ("^[\\b]$", "\b", True),  # backspace inside a class
    ("^\\a$", "a", True),  # identity escape
    ("^(a+)+$", "a" * 41 + "!", False),
]


@pytest.mark.parametrize(("pattern", "text", "matches"), ECMA)
def test_a_pattern_means_what_ecma_262_says(pattern: str, text: str, matches: bool) -> None:
    assert compile_pattern(pattern).search(text) is matches


@pytest.mark.parametrize(("pattern", "text", "matches"), ECMA)
def test_the_fast_path_and_the_jsonschema_library_agree_on_every_pattern(
    pattern: str, text: str, matches: bool
) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}}
    assert validator_for(schema).is_valid({"v": text}) is matches
    if SchemaCheck(schema).accepts({"v": text}):  # the fast path may only leave a verdict to the slow one
        assert matches


def test_matching_time_is_linear_in_the_text() -> None:
    compiled = compile_pattern("^(a|aa)+$")
    started = time.monotonic()
    assert not compiled.search("a" * 200_000 + "!")
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(?=a)a", "lookahead"),
        ("(?<!a)b", "lookbehind"),
        ("(a)\\1", "backreference"),
        ("\\k<n>(?<n>a)", "backreference"),
        ("a{99999999999}", "at most 1000"),
        ("((a{100}){100}){100}", "too large"),
    ],
)
def test_what_the_platform_will_not_evaluate_says_why(pattern: str, why: str) -> None:
    with pytest.raises(PatternNotEvaluable) as caught:
        compile_pattern(pattern)
    assert not isinstance(caught.value, PatternInvalid)
    assert why in (pattern_problem(pattern) or "")
    assert is_regex(pattern)  # a regular expression all the same (format: regex)


@pytest.mark.parametrize("text", ["[", "(", ")", "*a", "a**", "a{2,1}", "\\", "(?x)", "[z-a]"])
def test_what_is_no_regular_expression_is_invalid(text: str) -> None:
    with pytest.raises(PatternInvalid):
        compile_pattern(text)
    assert not is_regex(text)
    assert not validator_for({"format": "regex"}).is_valid(text)
