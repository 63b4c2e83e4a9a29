"""Reading YAML and JSON documents with problems a user can act on (file, line, pointer).

PyYAML and json errors are mapped here, once, to ``Problem``; nothing else parses contract files.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from contract_platform.errors import Problem

__all__ = [
    "MISSING",
    "DocumentProblem",
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


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


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


def read_yaml(path: Path) -> Any:
    text = _read_text(path)
    try:
        return _plain(yaml.load(text, Loader=_UniqueKeyLoader))  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise DocumentProblem(Problem(str(path), "", f"not valid YAML: {where}{exc.problem}")) from exc
    except yaml.YAMLError as exc:
        raise DocumentProblem(Problem(str(path), "", f"not valid YAML: {exc}")) from exc


def read_json(path: Path) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentProblem(
            Problem(str(path), "", f"not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}")
        ) from exc
    except RecursionError as exc:
        raise DocumentProblem(Problem(str(path), "", "not usable JSON: nested too deeply")) from exc


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
