"""Regular expressions from schemas, evaluated in linear time: the one way the platform matches a ``pattern``.

JSON Schema's ``pattern``, ``patternProperties`` and ``format: regex`` speak ECMA-262. Python's ``re``
backtracks, so ``^(a+)+$`` against forty ``a`` and a ``!`` never ends; a pattern comes from a pull
request and the string from any producer, so neither may decide how long a match takes. Every
pattern is translated here from ECMA-262 to RE2 syntax and matched by RE2 (``google-re2``), whose time
is linear in the text. What RE2 cannot match (lookaround, backreferences, a repetition count above
1,000 or a pattern whose program is too large) raises ``PatternNotEvaluable`` with the reason: the
linter reports such a pattern with its file and pointer, and a record that reaches it is UNCHECKABLE.

ECMA-262 meanings kept (where Python's ``re`` differs): ``\\d``, ``\\w`` and ``\\b`` are ASCII; ``\\s`` is
ECMA-262's white space and line terminators; ``.`` matches anything but ``\\n``, ``\\r``, U+2028 and
U+2029; ``$`` is the end of the text only; ``\\uXXXX`` (a surrogate pair too), ``\\xHH``, ``\\cX``, ``\\0``
and ``(?<name>...)`` are read; ``[^]`` is any character and ``[]`` none. Text is matched as UTF-8, a
lone surrogate (JSON text may hold one) as one character that only ``.`` and negated classes match.

::

    compile_pattern("^[a-z]+$").search("abc")   -> True
    compile_pattern("(?=a)")                    -> PatternNotEvaluable: "a lookahead (?=...) is not supported ..."
    pattern_problem("a{99999999999}")           -> "a repetition count of 99999999999 ..."
    is_regex("[")                               -> False  (format: regex)
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

import re2

from contract_platform.errors import PatternInvalid, PatternNotEvaluable
from contract_platform.limits import MAX_PATTERN_MEMORY, MAX_PATTERN_REPETITION

__all__ = [
    "MAX_REPETITION",
    "CompiledPattern",
    "PatternInvalid",
    "PatternNotEvaluable",
    "compile_pattern",
    "is_regex",
    "pattern_problem",
    "reads_alike",
    "search",
]

MAX_REPETITION: Final = MAX_PATTERN_REPETITION

# ECMA-262 WhiteSpace and LineTerminator code points, as RE2 class ranges.
_SPACE: Final = r"\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}"
_NOT_SPACE: Final = (
    r"\x{0}-\x{8}\x{E}-\x{1F}!-\x{9F}\x{A1}-\x{167F}\x{1681}-\x{1FFF}\x{200B}-\x{2027}\x{202A}-\x{202E}"
    r"\x{2030}-\x{205E}\x{2060}-\x{2FFF}\x{3001}-\x{FEFE}\x{FF00}-\x{10FFFF}"
)
_DOT: Final = r"[^\n\r\x{2028}\x{2029}]"
_SIMPLE_ESCAPES: Final = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}
_HEX: Final = frozenset("0123456789abcdefABCDEF")


def _code(point: int) -> str:
    return f"\\x{{{point:X}}}"


class _Translation:
    """One pass over an ECMA-262 pattern, writing RE2 syntax. ``strict`` False replaces what RE2 cannot match
    by something of the same shape, to judge syntax alone (``format: regex``)."""

    def __init__(self, source: str, strict: bool) -> None:
        self.source, self.strict = source, strict
        self.at = 0
        self.out: list[str] = []
        self.groups = 0
        self.depth = 0

    def unsupported(self, reason: str) -> None:
        if self.strict:
            raise PatternNotEvaluable(self.source, reason)

    def invalid(self, reason: str) -> PatternInvalid:
        return PatternInvalid(self.source, f"not a regular expression: {reason} (at character {self.at + 1})")

    def peek(self, offset: int = 0) -> str:
        index = self.at + offset
        return self.source[index] if index < len(self.source) else ""

    def run(self) -> str:
        text = self.source
        while self.at < len(text):
            char = text[self.at]
            if char == "\\":
                self.out.append(self.escape(in_class=False))
                continue
            self.at += 1
            if char == ".":
                self.out.append(_DOT)
            elif char == "[":
                self.out.append(self.character_class())
            elif char == "(":
                self.open_group()
            elif char == ")":
                if self.depth == 0:
                    raise self.invalid("a ')' closes no group")
                self.depth -= 1
                self.out.append(")")
            elif char == "{":
                self.out.append(self.braces())
            elif char in "}]":
                self.out.append("\\" + char)  # a literal, as ECMA-262 reads one without its opener
            elif char in "^$|*+?":
                self.out.append(char)
            elif 0xD800 <= ord(char) <= 0xDFFF:
                self.out.append(self.surrogate(ord(char)))
            else:
                self.out.append(char)
        if self.depth:
            raise self.invalid("a '(' is never closed")
        return "".join(self.out)

    def surrogate(self, high: int) -> str:
        """A UTF-16 surrogate written in the pattern string itself: a pair is one character, alone none."""
        if 0xD800 <= high <= 0xDBFF:
            low = self.peek()
            if low and 0xDC00 <= ord(low) <= 0xDFFF:
                self.at += 1
                return _code(0x10000 + ((high - 0xD800) << 10) + (ord(low) - 0xDC00))
        self.unsupported(f"a lone surrogate ({_code(high)}) is not a character the platform can match")
        return "a"

    def open_group(self) -> None:
        self.depth += 1
        if self.peek() != "?":
            self.groups += 1
            self.out.append("(")
            return
        ahead = self.source[self.at : self.at + 3]
        if ahead.startswith("?:"):
            self.at += 2
            self.out.append("(?:")
        elif ahead[:2] in ("?=", "?!") or ahead in ("?<=", "?<!"):
            token = ahead if ahead.startswith("?<") else ahead[:2]
            self.at += len(token)
            kind = "lookbehind" if ahead.startswith("?<") else "lookahead"
            self.unsupported(f"a {kind} {token.replace('?', '(?', 1)}...) is not supported: RE2 has no lookaround")
            self.out.append("(?:")
        elif ahead.startswith("?<"):
            end = self.source.find(">", self.at)
            name = self.source[self.at + 2 : end] if end > 0 else ""
            if (
                not name
                or not (name[0].isalpha() or name[0] in "_$")
                or not all(c.isalnum() or c in "_$" for c in name)
            ):
                raise self.invalid("a group name must be an identifier, as in (?<name>...)")
            self.at = end + 1
            self.groups += 1
            self.out.append(f"(?P<{name}>" if name.isascii() and "$" not in name else "(")
        else:
            raise self.invalid("'(?' starts no group ECMA-262 knows")

    def braces(self) -> str:
        """``{n}``, ``{n,}`` or ``{n,m}`` after an atom is a quantifier; any other ``{`` is a literal."""
        close = self.source.find("}", self.at)
        body = self.source[self.at : close] if close >= 0 else ""
        low, comma, high = body.partition(",")
        if not low.isdigit() or not low.isascii() or (high and not (high.isdigit() and high.isascii())):
            return "\\{"
        self.at = close + 1
        counts = [int(low)] + ([int(high)] if high else [])
        if high and counts[1] < counts[0]:
            raise self.invalid(f"the repetition {{{body}}} has its numbers out of order")
        if max(counts) > MAX_REPETITION:
            self.unsupported(
                f"a repetition count of {max(counts)} is more than the platform evaluates (at most {MAX_REPETITION})"
            )
        if not self.strict:
            return "{1" + (",2}" if high else ",}" if comma else "}")
        return "{" + body + "}"

    def escape(self, in_class: bool) -> str:
        """The escape at ``self.at`` (a backslash), translated; ``in_class`` for one inside ``[...]``."""
        self.at += 1
        char = self.peek()
        if not char:
            raise self.invalid("the pattern ends with a lone backslash")
        self.at += 1
        if char in "dDwW":
            return "\\" + char
        if char == "s":
            return _SPACE if in_class else f"[{_SPACE}]"
        if char == "S":
            return _NOT_SPACE if in_class else f"[^{_SPACE}]"
        if char in "bB":
            return _code(8) if in_class and char == "b" else ("\\" + char if not in_class else "B")
        if char in _SIMPLE_ESCAPES:
            return _code(_SIMPLE_ESCAPES[char])
        if char == "0" and not ("0" <= self.peek() <= "9"):
            return _code(0)
        if char in "123456789":
            if in_class:
                return _code(ord(char))
            self.at -= 1
            while self.peek() in ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9"):
                self.at += 1
            self.unsupported("a backreference (\\1 ...) is not supported: RE2 matches no backreferences")
            return "(?:)"
        if char == "k" and self.peek() == "<" and not in_class:
            end = self.source.find(">", self.at)
            self.at = end + 1 if end > 0 else len(self.source)
            self.unsupported("a named backreference (\\k<name>) is not supported: RE2 matches no backreferences")
            return "(?:)"
        if char == "c" and self.peek().isascii() and self.peek().isalpha():
            self.at += 1
            return _code(ord(self.source[self.at - 1]) % 32)
        if (
            char == "x"
            and all(c in _HEX for c in self.source[self.at : self.at + 2])
            and self.at + 2 <= len(self.source)
        ):
            self.at += 2
            return _code(int(self.source[self.at - 2 : self.at], 16))
        if char == "u":
            return self.unicode_escape()
        if char in "pP" and self.peek() == "{":
            end = self.source.find("}", self.at)
            if end < 0:
                raise self.invalid("a \\p{...} property is never closed")
            name = self.source[self.at + 1 : end]
            self.at = end + 1
            if not name.replace("_", "").isalnum() or not name.isascii():
                raise self.invalid(f"\\{char}{{{name}}} names no Unicode property")
            return f"\\{char}{{{name}}}"
        if char.isascii() and char.isalnum():
            return _code(ord(char))  # an identity escape: ECMA-262 reads \a as the letter a
        if char.isascii():
            return "\\" + char
        if 0xD800 <= ord(char) <= 0xDFFF:
            return self.surrogate(ord(char))
        return char

    def unicode_escape(self) -> str:
        text = self.source
        if self.peek() == "{":
            end = text.find("}", self.at)
            digits = text[self.at + 1 : end] if end > 0 else ""
            if digits and len(digits) <= 6 and all(c in _HEX for c in digits) and int(digits, 16) <= 0x10FFFF:
                self.at = end + 1
                point = int(digits, 16)
                if 0xD800 <= point <= 0xDFFF:
                    return self.surrogate(point)
                return _code(point)
            return _code(ord("u"))
        digits = text[self.at : self.at + 4]
        if len(digits) < 4 or not all(c in _HEX for c in digits):
            return _code(ord("u"))
        self.at += 4
        point = int(digits, 16)
        if 0xD800 <= point <= 0xDBFF and text[self.at : self.at + 2] == "\\u":
            low = text[self.at + 2 : self.at + 6]
            if len(low) == 4 and all(c in _HEX for c in low) and 0xDC00 <= int(low, 16) <= 0xDFFF:
                self.at += 6
                return _code(0x10000 + ((point - 0xD800) << 10) + (int(low, 16) - 0xDC00))
        if 0xD800 <= point <= 0xDFFF:
            self.unsupported(f"a lone surrogate ({_code(point)}) is not a character the platform can match")
            return "a"
        return _code(point)

    def character_class(self) -> str:
        negated = self.peek() == "^"
        if negated:
            self.at += 1
        items: list[str] = []
        while True:
            char = self.peek()
            if not char:
                raise self.invalid("a '[' is never closed")
            if char == "]":
                self.at += 1
                break
            if char == "\\":
                items.append(self.escape(in_class=True))
                continue
            self.at += 1
            if char == "-":
                items.append("-" if items and self.peek() not in ("]", "") else "\\-")
            elif 0xD800 <= ord(char) <= 0xDFFF:
                items.append(self.surrogate(ord(char)))
            elif char.isascii() and not char.isalnum():
                items.append("\\" + char)
            else:
                items.append(char)
        if not items:
            return r"[\x{0}-\x{10FFFF}]" if negated else r"[^\x{0}-\x{10FFFF}]"
        return ("[^" if negated else "[") + "".join(items) + "]"


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_PATTERN_MEMORY
    options.encoding = re2.Options.Encoding.UTF8
    return options


_OPTIONS: Final = _options()


class CompiledPattern:
    """One ECMA-262 pattern compiled for RE2; ``search`` answers in time linear in the text."""

    __slots__ = ("_regexp", "source")

    def __init__(self, source: str, regexp: re2._Regexp) -> None:
        self.source = source
        self._regexp = regexp

    def search(self, text: str) -> bool:
        """True when the pattern matches somewhere in ``text`` (JSON Schema patterns are not anchored)."""
        return self._regexp.search(text.encode("utf-8", "surrogatepass")) is not None


def _re2_error(source: str, exc: Exception) -> PatternNotEvaluable:
    detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    if "too large" in detail or "memory" in detail or "repetition size" in detail:
        return PatternNotEvaluable(source, f"too large to evaluate in bounded memory ({detail})")
    return PatternInvalid(source, f"not a regular expression the platform reads: {detail}")


@lru_cache(maxsize=2048)
def compile_pattern(source: str) -> CompiledPattern:
    """``source`` compiled for linear-time matching; ``PatternNotEvaluable`` (or ``PatternInvalid``) if it cannot be."""
    translated = _Translation(source, strict=True).run()
    try:
        regexp = re2.compile(translated.encode("utf-8"), _OPTIONS)
    except re2.error as exc:
        raise _re2_error(source, exc) from None
    return CompiledPattern(source, regexp)


def search(source: str, text: str) -> bool:
    """``compile_pattern(source).search(text)``: the ``pattern`` keyword's test."""
    return compile_pattern(source).search(text)


def pattern_problem(source: str) -> str | None:
    """Why the platform will not evaluate ``source`` (a sentence), or None when it will."""
    try:
        compile_pattern(source)
    except PatternNotEvaluable as exc:
        return exc.reason
    return None


_PLAIN_ESCAPES: Final = frozenset("dDwW")
_QUANTIFIER: Final = re2.compile(rb"\{[0-9]+(,[0-9]*)?\}", _options())


@lru_cache(maxsize=2048)
def reads_alike(source: str) -> bool:
    """True when ``source`` means the same to every linear ECMA-262 engine (this module's and jsonschema-rs's):
    printable ASCII without the constructs engines read differently: ``.`` (line separators), ``\\b`` and
    ``\\s`` (Unicode), escapes other than of punctuation and ``\\d \\w \\D \\W``, groups other than ``(...)``
    and ``(?:...)``, a ``{`` that is no ``{n}``/``{n,}``/``{n,m}``, a lone ``]`` or ``}``, and in a class ``[``,
    ``&&``, ``--`` or ``~~`` (set operations elsewhere) or nothing at all. Only a pattern the platform evaluates."""
    if not source.isascii() or not source.isprintable():
        return False
    index, in_class = 0, False
    while index < len(source):
        char = source[index]
        if char == "\\":
            following = source[index + 1 : index + 2]
            if not following or not (following in _PLAIN_ESCAPES or not following.isalnum()):
                return False
            index += 2
            continue
        if in_class:
            if char == "[" or source[index : index + 2] in ("&&", "--", "~~"):
                return False
            in_class = char != "]"
        elif char == "[":
            if source[index + 1 : index + 2] == "]" or source[index + 1 : index + 3] == "^]":
                return False
            in_class = True
            if source[index + 1 : index + 2] == "^":
                index += 1
        elif char == "{":
            found = _QUANTIFIER.match(source[index:].encode("ascii"))
            if found is None or index == 0:
                return False
            index += len(found.group(0))
            continue
        elif char in ".}]" or (source.startswith("(?", index) and not source.startswith("(?:", index)):
            return False
        index += 1
    return pattern_problem(source) is None


@lru_cache(maxsize=2048)
def is_regex(value: str) -> bool:
    """``format: regex``: is ``value`` an ECMA-262 regular expression? Judged on its syntax, so a lookahead
    or a large repetition count is a regular expression even though the platform would not evaluate it."""
    try:
        translated = _Translation(value, strict=False).run()
        re2.compile(translated.encode("utf-8", "surrogatepass"), _OPTIONS)
    except PatternInvalid:
        return False
    except re2.error as exc:
        return not isinstance(_re2_error(value, exc), PatternInvalid)
    return True
