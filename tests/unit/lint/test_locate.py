"""A finding's JSON pointer as the line and column a CI annotation shows, in YAML and JSON files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract_platform.lint.locate import MAX_YAML_BYTES, Location, Locator, locate_in_text, split_pointer

CONTRACT_YAML = """\
# a comment first
messageType: billing.invoice-issued.v1
retention:
  queue: 7d
  dlq: 0d
consumers:
  - service: accounting-service
    queue: accounting-service.billing.invoice-issued.v1
  - {service: audit-service, "a/b": 1, "c~d": 2}
matrix:
  -
    - first
    - second
after: true
"""


def yaml_at(pointer: str) -> Location | None:
    return locate_in_text(CONTRACT_YAML, pointer, yaml_file=True)


@pytest.mark.parametrize(
    ("pointer", "line", "column"),
    [
        ("/messageType", 2, 1),
        ("/retention/dlq", 5, 3),  # a member is shown at its key
        ("/consumers/0/queue", 8, 5),
        ("/consumers/1/service", 9, 6),  # a flow mapping inside a sequence
        ("/consumers/1/a~1b", 9, 30),  # ~1 is "/"
        ("/consumers/1/c~0d", 9, 40),  # ~0 is "~"
        ("/matrix/0/1", 13, 7),  # arrays in arrays
        ("/after", 14, 1),
    ],
)
def test_yaml_pointer_lands_on_its_line_and_column(pointer: str, line: int, column: int) -> None:
    assert yaml_at(pointer) == Location(line, column, exact=True)


def test_yaml_pointer_that_does_not_resolve_lands_on_its_nearest_part() -> None:
    assert yaml_at("/retention/archive") == Location(3, 1, exact=False)  # the mapping it would be in
    assert yaml_at("/consumers/7") == Location(6, 1, exact=False)  # past the end of the sequence
    assert yaml_at("/after/deeper") == Location(14, 1, exact=False)  # through a scalar
    assert yaml_at("/nothing") == Location(2, 1, exact=False)  # the document itself


SCHEMA_JSON = json.dumps(
    {
        "type": "object",
        "required": ["invoiceId"],
        "properties": {
            "invoiceId": {"type": "string"},
            "lines": {"type": "array", "items": [{"type": "string"}, {"enum": ["a", "b"]}]},
            "odd/name": {"type": "integer"},
            "tilde~name": {"type": "integer"},
        },
    },
    indent=2,
)


def json_line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if needle in line)


@pytest.mark.parametrize(
    ("pointer", "needle", "below"),
    [
        ("/required", '"required"', 0),
        ("/required/0", '"required"', 1),  # the item, on the line after the key
        ("/properties/invoiceId", '"invoiceId": {', 0),
        ("/properties/lines/items/1/enum/1", '"b"', 0),
        ("/properties/odd~1name", '"odd/name"', 0),
        ("/properties/tilde~0name", '"tilde~name"', 0),
    ],
)
def test_json_pointer_lands_on_its_line(pointer: str, needle: str, below: int) -> None:
    location = locate_in_text(SCHEMA_JSON, pointer, yaml_file=False)
    assert location is not None and location.exact
    assert location.line == json_line_of(SCHEMA_JSON, needle) + below
    line_text = SCHEMA_JSON.splitlines()[location.line - 1]
    assert line_text[location.column - 1] == '"'  # the column is where the key or item starts


def test_json_pointer_that_does_not_resolve_lands_on_its_nearest_part() -> None:
    properties = json_line_of(SCHEMA_JSON, '"properties"')
    for pointer in ("/properties/removed", "/properties/removed/type"):
        assert locate_in_text(SCHEMA_JSON, pointer, yaml_file=False) == Location(properties, 3, exact=False)
    lines = locate_in_text(SCHEMA_JSON, "/properties/lines/items/9", yaml_file=False)
    assert lines is not None and not lines.exact and lines.line == json_line_of(SCHEMA_JSON, '"items"')
    leading_zero = locate_in_text(SCHEMA_JSON, "/required/00", yaml_file=False)
    assert leading_zero is not None and not leading_zero.exact  # "00" is not an array index (RFC 6901)


def test_json_duplicate_key_resolves_to_the_last_as_json_loads_keeps_it() -> None:
    text = '{\n"a": {"old": 1},\n"a": {"new": 2}\n}'
    assert locate_in_text(text, "/a/new", yaml_file=False) == Location(3, 7, exact=True)
    assert locate_in_text(text, "/a/old", yaml_file=False) == Location(3, 1, exact=False)


def test_json_with_tabs_and_a_byte_order_mark() -> None:
    text = '\ufeff{\n\t"a":\t[\n\t\t1,\n\t\t{"b": 2}\n\t]\n}'
    assert locate_in_text(text, "/a/1/b", yaml_file=False) == Location(4, 4, exact=True)


def test_a_string_that_is_not_a_pointer_is_annotated_on_the_whole_file() -> None:
    assert split_pointer("properties/a") is None
    assert locate_in_text(SCHEMA_JSON, "properties/a", yaml_file=False) is None
    assert split_pointer("#/a~1b/c~0d") == ["a/b", "c~d"]
    assert split_pointer("") == []


@pytest.mark.parametrize(
    ("text", "yaml_file", "pointer"),
    [
        ("[" * 200_000 + "]" * 200_000, False, "/0/0/0/0"),  # nested far past Python's recursion limit
        ('{"a": ' + "[" * 200_000 + "]" * 200_000 + ', "b": 1}', False, "/b"),
        ("a: " + "[" * 50_000, True, "/a/0/0"),  # deep and never closed
        ("{not json", False, "/a"),
        ('{"a": "unterminated', False, "/a/b"),
        ("", False, "/a"),
        ("", True, "/a"),
        ("key: [unclosed\n\t- tab", True, "/key/0"),
        ("a: &x [1, 2]\nb: *x\n", True, "/b/1"),  # an alias is never expanded
        ("? [a, b]\n: 1\nc: 2\n", True, "/c"),  # a collection as a key
        ('{"\\ud800": 1}', False, "/x"),  # a lone surrogate
    ],
)
def test_hostile_text_never_raises(text: str, yaml_file: bool, pointer: str) -> None:
    location = locate_in_text(text, pointer, yaml_file=yaml_file)
    assert location is None or location.line >= 1


def test_hostile_files_fall_back_to_the_whole_file(tmp_path: Path) -> None:
    locator = Locator()
    huge = tmp_path / "huge.yaml"
    huge.write_text("a: 1\n" * (MAX_YAML_BYTES // 5 + 1))
    binary = tmp_path / "binary.json"
    binary.write_bytes(b'{"a": "\xff\xfe"}')
    assert locator.locate(str(huge), "/a") is None  # too large to compose in pure Python
    assert locator.locate(str(binary), "/a") is None  # not UTF-8
    assert locator.locate(str(tmp_path / "missing.json"), "/a") is None
    ok = tmp_path / "ok.json"
    ok.write_text('{"a": 1}')
    assert locator.locate(str(ok), "/a") == Location(1, 2, exact=True)
    assert locator.locate(str(tmp_path / "b.yaml"), "") is None


def test_yaml_with_a_collection_key_still_places_later_members() -> None:
    assert locate_in_text("? [a, b]\n: 1\nc: 2\n", "/c", yaml_file=True) == Location(3, 1, exact=True)
    assert locate_in_text("a: &x [1, 2]\nb: *x\n", "/b/1", yaml_file=True) == Location(2, 1, exact=False)
