"""Reading YAML and JSON documents with problems a user can act on (file, line, pointer).

PyYAML and json errors are mapped here, once, to ``Problem``; nothing else parses contract files.

Reading is bounded, since contracts come from pull requests: a YAML document is measured from its event
stream before anything is built, so nesting past ``limits.depth_limit()``, aliases that would expand to
more than ``MAX_YAML_NODES`` nodes (an alias bomb) and integers longer than ``limits.MAX_INTEGER_DIGITS``
are refused with the file and the pointer; JSON gets the same depth and integer bounds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import date, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from contract_platform.errors import Problem
from contract_platform.limits import (
    MAX_INTEGER_DIGITS,
    depth_limit,
    may_nest_beyond,
    nesting_beyond,
    nesting_beyond_text,
)

__all__ = [
    "MAX_YAML_NODES",
    "MISSING",
    "DocumentProblem",
    "parse_json_document",
    "parse_yaml_document",
    "pointer_from_path",
    "pointer_reader",
    "read_json",
    "read_yaml",
    "resolve_pointer",
]


class DocumentProblem(Exception):
    """Internal: a file that could not be parsed; carries the Problem to report."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        super().__init__(str(problem))


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys instead of silently keeping the last one."""


_STR_TAG = "tag:yaml.org,2002:str"


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag == _STR_TAG:
            key = key_node.value  # what constructing a plain text key gives, without building it twice
        else:
            key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

_CSafeLoader: Any = getattr(yaml, "CSafeLoader", None)  # libyaml's parser, when PyYAML was built with it
_FastUniqueKeyLoader: Any = None
if _CSafeLoader is not None:
    # libyaml's loader is looked up at run time, so mypy sees Any
    class _FastUniqueKeyLoader(_CSafeLoader):  # type: ignore[no-redef, misc]
        """The same loader over libyaml's parser: a catalogue of thousands of contracts loads in seconds."""

    _FastUniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _plain(value: Any) -> Any:
    """YAML dates become ISO strings so one schema describes YAML and JSON alike."""
    if isinstance(value, dict):
        return {str(k) if isinstance(k, date | datetime) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise DocumentProblem(Problem(str(path), "", "file is missing")) from exc
    except UnicodeDecodeError as exc:
        raise DocumentProblem(Problem(str(path), "", f"not UTF-8 text (byte {exc.start})")) from exc
    except OSError as exc:
        raise DocumentProblem(Problem(str(path), "", f"cannot be read: {exc.strerror}")) from exc


MAX_YAML_NODES = 100_000  # nodes a YAML document may hold once its aliases are expanded
# PyYAML's own int forms (YAML 1.1): binary, octal, decimal, hexadecimal, sexagesimal
_YAML_INT = re.compile(r"[-+]?(?:0b[01_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+|[1-9][0-9_]*(?::[0-5]?[0-9])+)")
_LOG10_2 = 0.30103
_SHORTEST_LONG_INTEGER = 1_000  # a YAML integer written in fewer characters has fewer than 4,300 digits


_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@lru_cache(maxsize=4096)  # versions, durations and dates repeat in every contract.yaml
def _bad_timestamp(text: str) -> str | None:
    """What is wrong with a plain scalar YAML reads as a date or time (``2026-13-45``), or None."""
    node = yaml.ScalarNode(_TIMESTAMP_TAG, text)
    loader = yaml.SafeLoader("")
    # PyYAML's stubs leave Resolver.resolve untyped
    if loader.resolve(yaml.ScalarNode, text, (True, False)) != _TIMESTAMP_TAG:  # type: ignore[no-untyped-call]
        return None
    try:
        loader.construct_yaml_timestamp(node)
    except (ValueError, OverflowError) as exc:
        return f"{text[:40]!r} is not a date or time YAML can read ({exc}); quote it to keep it as text"
    return None


def _integer_digits(text: str) -> int:
    """How many decimal digits the YAML integer ``text`` has (more than ``MAX_INTEGER_DIGITS``: too many to read)."""
    digits = text.lstrip("+-").replace("_", "")
    if digits.isdigit() and not (digits.startswith("0") and len(digits) > 1):
        return len(digits)
    try:
        node = yaml.ScalarNode("tag:yaml.org,2002:int", text)
        value = yaml.SafeLoader("").construct_yaml_int(node)
    except ValueError:  # a decimal part too long to read
        return MAX_INTEGER_DIGITS + 1
    return int(abs(value).bit_length() * _LOG10_2) + 1


class _Open:
    """A collection the YAML event stream has opened and not yet closed."""

    __slots__ = ("anchor", "index", "key", "mapping", "nodes", "wants_key")

    def __init__(self, mapping: bool, anchor: str | None) -> None:
        self.mapping, self.anchor = mapping, anchor
        self.key: Any = None
        self.index = 0
        self.wants_key = True
        self.nodes = 0

    def token(self) -> Any:
        return self.key if self.mapping else self.index


def _yaml_pointer(stack: list[_Open]) -> str:
    return pointer_from_path(opened.token() for opened in stack)


def _measure_yaml(file: str, text: str, loader: Any = _UniqueKeyLoader) -> None:
    """Refuse, before anything is built, YAML nested too deep, expanding past ``MAX_YAML_NODES`` or holding an
    integer too long to read. The event stream is flat (PyYAML's parser keeps its own stack) and aliases
    are counted by the size of what they name, never expanded."""
    limit = depth_limit()
    stack: list[_Open] = []
    sizes: dict[str, int] = {}  # anchor -> nodes under it, aliases counted expanded

    def refuse(message: str) -> DocumentProblem:
        return DocumentProblem(Problem(file, _yaml_pointer(stack), message))

    def completed(size: int, key: Any) -> None:
        if size > MAX_YAML_NODES:
            raise refuse(
                f"expands to more than {MAX_YAML_NODES} nodes through its aliases (*name); write the values out "
                "or use fewer aliases"
            )
        if not stack:
            return
        parent = stack[-1]
        parent.nodes += size
        if not parent.mapping:
            parent.index += 1
        elif parent.wants_key:
            parent.key, parent.wants_key = key, False
        else:
            parent.wants_key = True

    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            if len(stack) >= limit:
                raise refuse(f"nested deeper than {limit} levels; flatten it")
            stack.append(_Open(isinstance(event, yaml.MappingStartEvent), event.anchor))
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            opened = stack.pop()
            if opened.anchor is not None:
                sizes[opened.anchor] = opened.nodes + 1
            completed(opened.nodes + 1, "?")
        elif isinstance(event, yaml.ScalarEvent):
            value = event.value
            if (
                event.implicit[0]
                and len(value) > _SHORTEST_LONG_INTEGER
                and _YAML_INT.fullmatch(value)
                and (digits := _integer_digits(value)) > MAX_INTEGER_DIGITS
            ):
                if stack and stack[-1].mapping and stack[-1].wants_key:
                    raise refuse(f"a key of {digits} digits is too long (at most {MAX_INTEGER_DIGITS})")
                raise refuse(f"an integer of {digits} digits is too long (at most {MAX_INTEGER_DIGITS})")
            if event.implicit[0] and value[:1].isdigit() and (problem := _bad_timestamp(value)) is not None:
                raise refuse(problem)
            if not value.isascii() and not _is_text(value):
                if stack and stack[-1].mapping and stack[-1].wants_key:  # the key itself: name it, escaped
                    stack[-1].key = value.encode("utf-8", "backslashreplace").decode("ascii", "replace")
                raise refuse(
                    'a string holds a surrogate ("\\ud800"...), which is not text (YAML does not join a pair of '
                    'them into one character): write the character itself, or "\\U0001F600" style'
                )
            if event.anchor is not None:
                sizes[event.anchor] = 1
            completed(1, value)
        elif isinstance(event, yaml.AliasEvent):
            if any(opened.anchor == event.anchor for opened in stack):
                raise refuse(f"the alias *{event.anchor} refers to a value that holds it: it never ends")
            completed(sizes.get(event.anchor or "", 1), "?")


def read_yaml(path: Path) -> Any:
    return parse_yaml_document(_read_text(path), str(path))


def parse_yaml_document(text: str, file: str) -> Any:
    """The YAML document ``text`` read from ``file`` (a path, or ``<path> @ <git ref>``), with ``read_yaml``'s bounds."""
    if _FastUniqueKeyLoader is not None:
        try:
            _measure_yaml(file, text, _FastUniqueKeyLoader)
            return _plain(yaml.load(text, Loader=_FastUniqueKeyLoader))
        except yaml.YAMLError:
            pass  # read again below: PyYAML's own reader says what is wrong and where, in its words
    try:
        _measure_yaml(file, text)
        return _plain(yaml.load(text, Loader=_UniqueKeyLoader))  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = " ".join(str(exc.problem).split())  # one line
        raise DocumentProblem(Problem(file, "", f"not valid YAML: {where}{problem}")) from exc
    except yaml.YAMLError as exc:  # e.g. a character YAML does not allow: PyYAML says where on a second line
        raise DocumentProblem(Problem(file, "", f"not valid YAML: {' '.join(str(exc).split())}")) from exc


class _LongInteger(str):
    """Where JSON text held an integer too long to read: found and reported by ``_long_integer``."""


def _read_integer(text: str) -> int | _LongInteger:
    return int(text) if len(text) <= MAX_INTEGER_DIGITS else _LongInteger(text)


def _long_integer(document: Any) -> tuple[str, _LongInteger] | None:
    """(pointer, text) of the first integer ``_read_integer`` could not read (iterative walk)."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(document, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _LongInteger):
            return pointer_from_path(path), value
        if isinstance(value, dict):
            stack.extend((item, (*path, key)) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((item, (*path, index)) for index, item in enumerate(value))
    return None


def read_json(path: Path) -> Any:
    """The JSON document in ``path``; nesting past ``limits.depth_limit()`` and integers longer than
    ``limits.MAX_INTEGER_DIGITS`` are problems at their pointer."""
    return parse_json_document(_read_text(path), str(path))


def parse_json_document(text: str, file: str) -> Any:
    """The JSON document ``text`` read from ``file`` (a path, or ``<path> @ <git ref>``), with ``read_json``'s
    bounds: the one reader of catalogue JSON, for the working tree and for every git ref alike."""
    limit = depth_limit()
    try:
        document = json.loads(text, parse_int=_read_integer)
    except json.JSONDecodeError as exc:
        raise DocumentProblem(
            Problem(file, "", f"not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}")
        ) from exc
    except RecursionError as exc:
        where = nesting_beyond_text(text, limit) or ""
        raise DocumentProblem(Problem(file, where, f"nested deeper than {limit} levels; flatten it")) from exc
    pointer = nesting_beyond(document, limit) if may_nest_beyond(text, limit) else None
    if pointer is not None:
        raise DocumentProblem(Problem(file, pointer, f"nested deeper than {limit} levels; flatten it"))
    if len(text) > MAX_INTEGER_DIGITS and (found := _long_integer(document)) is not None:
        pointer, digits = found
        message = f"an integer of {len(digits.lstrip('-'))} digits is too long (at most {MAX_INTEGER_DIGITS})"
        raise DocumentProblem(Problem(file, pointer, message))
    if "\\u" in text and (pointer := _lone_surrogate(document)) is not None:
        raise DocumentProblem(
            Problem(
                file,
                pointer,
                'a string holds a lone surrogate ("\\ud800"...), which is not text: write the character itself, '
                'or both halves of its pair ("\\ud83d\\ude00")',
            )
        )
    return document


def _lone_surrogate(document: Any) -> str | None:
    """Pointer of the first key or string JSON text gave a lone surrogate escape (not UTF-8 text), or None."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(document, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if not value.isascii() and not _is_text(value):
                return pointer_from_path(path)
        elif isinstance(value, dict):
            for key, item in value.items():
                if not key.isascii() and not _is_text(key):
                    return pointer_from_path((*path, key))
                stack.append((item, (*path, key)))
        elif isinstance(value, list):
            stack.extend((item, (*path, index)) for index, item in enumerate(value))
    return None


def pointer_from_path(parts: Any) -> str:
    """A JSON pointer (RFC 6901) from a sequence of keys and indexes."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


MISSING: Any = object()  # what a ``pointer_reader`` returns where ``resolve_pointer`` raises KeyError


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at ``pointer``; raises KeyError when it does not exist."""
    if pointer in ("", "#"):
        return document
    if pointer.startswith("#"):
        pointer = pointer[1:]
    if not pointer.startswith("/"):
        raise KeyError(pointer)
    current = document
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, dict) and token in current:
            current = current[token]
        elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
            current = current[int(token)]
        else:
            raise KeyError(pointer)
    return current


def pointer_reader(pointer: str) -> Callable[[Any], Any]:
    """``resolve_pointer`` for one pointer, split once: the reader returns the value, or ``MISSING``.

    For a pointer read in every record of an archive, where splitting it again each time shows.
    """
    if pointer in ("", "#"):
        return lambda document: document
    text = pointer[1:] if pointer.startswith("#") else pointer
    if not text.startswith("/"):
        return lambda document: MISSING
    tokens = tuple(raw.replace("~1", "/").replace("~0", "~") for raw in text[1:].split("/"))

    def read(document: Any) -> Any:
        current = document
        for token in tokens:
            if isinstance(current, dict) and token in current:
                current = current[token]
            elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
                current = current[int(token)]
            else:
                return MISSING
        return current

    return read
