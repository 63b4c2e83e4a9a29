"""Where a JSON pointer lands in the YAML or JSON file it came from: line and column, for CI annotations.

A lint finding or a compatibility change names its place as a file and a JSON pointer
(``contract.yaml#/retention/queue``); a CI system shows an annotation at a line. ``Locator.locate``
maps one to the other, reading the file as text (never through the catalogue loader, which refuses
files this module must still point into):

* YAML (``.yaml``/``.yml``): PyYAML's event stream, with the start mark of each node; a mapping
  member is placed at its key (``queue:``), a sequence item at its start (``- ...``). The stream is
  flat (no recursion, however deep the file) and an alias is never expanded: a pointer through one
  lands on the alias.
* JSON (anything else): a scan along the pointer only, with the positions of the text: each member
  skipped is decoded by the standard library's decoder, so a file is read at most once per pointer.
  A key that appears twice resolves to the last one, as ``json.loads`` keeps it.

A pointer that does not resolve lands on the nearest member of it that does (``exact`` False): a
property a change removed is shown at the object it was removed from. A file that cannot be read,
is larger than ``MAX_BYTES``, or breaks before anything of the pointer is found gives None: the
caller annotates the whole file. Nothing here raises on a file's content.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["MAX_BYTES", "MAX_YAML_BYTES", "Location", "Locator", "locate_in_text", "split_pointer"]

MAX_BYTES = 32 * 2**20  # a JSON file past this is annotated as a whole
MAX_YAML_BYTES = 2 * 2**20  # PyYAML is pure Python: past this, the whole file


@dataclass(frozen=True)
class Location:
    line: int  # 1-based, as CI systems count
    column: int  # 1-based
    exact: bool  # False: the pointer did not resolve; this is its nearest part that does


def split_pointer(pointer: str) -> list[str] | None:
    """The reference tokens of a JSON pointer (RFC 6901, ``~1`` is ``/``, ``~0`` is ``~``); None if it is not one."""
    if pointer.startswith("#"):
        pointer = pointer[1:]
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        return None
    return [raw.replace("~1", "/").replace("~0", "~") for raw in pointer[1:].split("/")]


class Locator:
    """Locates pointers in files, reading each file once (the text is kept for the next pointer)."""

    def __init__(self) -> None:
        self._texts: dict[str, str | None] = {}

    def text_of(self, file: str) -> str | None:
        if file not in self._texts:
            self._texts[file] = _read(Path(file))
        return self._texts[file]

    def locate(self, file: str, pointer: str) -> Location | None:
        text = self.text_of(file)
        if text is None:
            return None
        return locate_in_text(text, pointer, yaml_file=Path(file).suffix.lower() in (".yaml", ".yml"))


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def locate_in_text(text: str, pointer: str, *, yaml_file: bool) -> Location | None:
    """Where ``pointer`` lands in ``text`` (YAML or JSON), its nearest resolving part, or None."""
    tokens = split_pointer(pointer)
    if tokens is None:
        return None
    try:
        if yaml_file:
            if len(text) > MAX_YAML_BYTES:
                return None
            return _in_yaml(text, tokens)
        return _in_json(text, tokens)
    except (ValueError, IndexError, RecursionError, MemoryError, yaml.YAMLError):  # defensive: never raise
        return None


# -- YAML ------------------------------------------------------------------------------------------


class _Frame:
    __slots__ = ("index", "is_key", "key", "key_mark", "mapping", "on_path", "wants_key")

    def __init__(self, mapping: bool, on_path: bool, is_key: bool = False) -> None:
        self.mapping = mapping
        self.on_path = on_path  # this collection is the node at tokens[:depth]
        self.is_key = is_key  # a collection used as a mapping key (never on a pointer's path)
        self.index = 0
        self.wants_key = True
        self.key: str | None = None
        self.key_mark: Any = None


def _in_yaml(text: str, tokens: list[str]) -> Location | None:
    best: Location | None = None
    stack: list[_Frame] = []

    def enter(event: Any) -> bool:
        """A node starts in value position: is it on the pointer's path? If so it is the best so far."""
        nonlocal best
        if not stack:
            on_path, mark = True, event.start_mark
        else:
            parent = stack[-1]
            depth = len(stack)
            token = parent.key if parent.mapping else str(parent.index)
            on_path = parent.on_path and depth <= len(tokens) and token == tokens[depth - 1]
            mark = parent.key_mark if parent.mapping else event.start_mark
        if on_path:
            best = Location(mark.line + 1, mark.column + 1, len(stack) == len(tokens))
        return on_path

    def completed() -> None:
        if stack:
            if stack[-1].mapping:
                stack[-1].wants_key = True
            else:
                stack[-1].index += 1

    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            key_position = bool(stack) and stack[-1].mapping and stack[-1].wants_key
            if isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
                if key_position:
                    parent = stack[-1]
                    parent.key = event.value if isinstance(event, yaml.ScalarEvent) else None
                    parent.key_mark, parent.wants_key = event.start_mark, False
                elif enter(event):
                    return best  # a scalar (or an alias, never expanded) on the path: nothing lies deeper
                else:
                    completed()
            elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                mapping = isinstance(event, yaml.MappingStartEvent)
                if key_position:
                    parent = stack[-1]
                    parent.key, parent.key_mark, parent.wants_key = None, event.start_mark, False
                    stack.append(_Frame(mapping, on_path=False, is_key=True))
                    continue
                on_path = enter(event)
                if best is not None and best.exact:
                    return best
                stack.append(_Frame(mapping, on_path))
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                closed = stack.pop()
                if closed.on_path:
                    return best  # the path's collection ended without the next token: its nearest part
                if not closed.is_key:  # after a key, its value comes next
                    completed()
            elif isinstance(event, yaml.DocumentEndEvent):
                return best  # the first document only, as the loader reads it
    except yaml.YAMLError:
        return best
    return best


# -- JSON ------------------------------------------------------------------------------------------

_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WHITESPACE:
        pos += 1
    return pos


def _position(text: str, pos: int, exact: bool) -> Location:
    line_start = text.rfind("\n", 0, pos) + 1
    return Location(text.count("\n", 0, pos) + 1, pos - line_start + 1, exact)


def _in_json(text: str, tokens: list[str]) -> Location | None:
    start = _skip(text, 1 if text.startswith("\ufeff") else 0)
    if start >= len(text):
        return None
    best = _position(text, start, not tokens)
    pos = start  # the value on the path so far
    for depth, token in enumerate(tokens, start=1):
        found = _member(text, pos, token)
        if found is None:
            return best
        mark, pos = found
        best = _position(text, mark, depth == len(tokens))
    return best


def _member(text: str, pos: int, token: str) -> tuple[int, int] | None:
    """(where to show it, where its value starts) of member ``token`` of the value at ``pos``, or None."""
    try:
        opener = text[pos]
        if opener == "{":
            return _object_member(text, pos, token)
        if opener == "[":
            return _array_item(text, pos, token)
    except (ValueError, IndexError, RecursionError):  # broken or too deep: stop where we are
        return None
    return None


def _object_member(text: str, pos: int, token: str) -> tuple[int, int] | None:
    found: tuple[int, int] | None = None
    pos = _skip(text, pos + 1)
    if text[pos] == "}":
        return None
    while True:
        if text[pos] != '"':
            return found
        key_at = pos
        key, pos = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]
        pos = _skip(text, pos)
        if text[pos] != ":":
            return found
        value_at = _skip(text, pos + 1)
        if key == token:
            found = (key_at, value_at)  # the last one wins, as json.loads keeps it
        _, pos = _DECODER.raw_decode(text, value_at)
        pos = _skip(text, pos)
        if text[pos] == "}":
            return found
        if text[pos] != ",":
            return found
        pos = _skip(text, pos + 1)


def _array_item(text: str, pos: int, token: str) -> tuple[int, int] | None:
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        return None
    wanted = int(token)
    pos = _skip(text, pos + 1)
    if text[pos] == "]":
        return None
    index = 0
    while True:
        if index == wanted:
            return (pos, pos)
        _, pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text[pos] != ",":
            return None
        pos = _skip(text, pos + 1)
        index += 1
