"""Archive files read as lines, in splits: every line exactly once, whatever the split size or compression."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contract_platform.errors import ArchiveError
from contract_platform.validation.reading import Split, plan_splits, read_lines

LINE = st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b""))


def lines_of(path: Path, split_bytes: int) -> list[bytes]:
    splits = plan_splits([(str(path), path.stat().st_size)], split_bytes)
    return [line for split in splits for line in read_lines(split)]


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(LINE, max_size=40), split_bytes=st.integers(1, 200), final_newline=st.booleans())
def test_plain_splits_of_any_size_read_every_line_once_in_order(tmp_path_factory, lines, split_bytes, final_newline):
    path = tmp_path_factory.mktemp("plain") / "part.jsonl"
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    path.write_bytes(data)
    expected = data.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()  # a final newline ends the last line, it starts none
    assert lines_of(path, split_bytes) == expected


def test_crlf_line_ends_and_empty_lines(tmp_path: Path):
    path = tmp_path / "part.jsonl"
    path.write_bytes(b'{"a":1}\r\n\r\n\n{"b":2}\r\n{"c":3}')
    for split_bytes in (1, 3, 9, 10, 11, 1000):
        assert lines_of(path, split_bytes) == [b'{"a":1}', b"", b"", b'{"b":2}', b'{"c":3}']


def test_a_gzipped_file_is_one_split_and_concatenated_members_are_all_read(tmp_path: Path):
    path = tmp_path / "part.jsonl.gz"
    path.write_bytes(gzip.compress(b"a\nb\n") + gzip.compress(b"c\nd\n") + b"\0" * 8)
    [split] = plan_splits([(path.as_uri(), path.stat().st_size)], 1)
    assert split.compressed and (split.start, split.length) == (0, path.stat().st_size)
    assert list(read_lines(split)) == [b"a", b"b", b"c", b"d"]


def test_a_gzip_file_cut_short_yields_what_it_holds_its_partial_last_line_and_says_it_was_cut(tmp_path: Path):
    path = tmp_path / "part.jsonl.gz"
    whole = gzip.compress(b"".join(b'{"n":%d}\n' % n for n in range(5000)))
    path.write_bytes(whole[: len(whole) // 2])
    lines = lines_of(path, 2**20)
    assert 0 < len(lines) < 5000
    assert lines[:-2] == [b'{"n":%d}' % n for n in range(len(lines) - 2)]
    assert lines[-2].startswith(b'{"n":')  # whole or cut: either way a line the record rules will judge
    assert lines[-1] == b"<archive file damaged: it ends at byte %d inside a gzip member (cut short)>" % (
        len(whole) // 2
    )


def test_data_after_the_last_gzip_member_that_is_not_gzip_is_one_line_naming_its_bytes(tmp_path: Path):
    path = tmp_path / "part.jsonl.gz"
    members = gzip.compress(b"a\nb") + gzip.compress(b"\n")
    path.write_bytes(members + b"not gzip")
    *read, damaged = lines_of(path, 2**20)
    assert read == [b"a", b"b"]
    assert damaged.startswith(
        b"<archive file damaged: bytes %d to %d cannot be inflated" % (len(members), len(members) + 8)
    )
    assert damaged.endswith(b"not gzip data, or damaged; not read>")


def test_a_line_cut_by_damage_is_kept_apart_from_the_line_that_reports_it(tmp_path: Path):
    path = tmp_path / "part.jsonl.gz"
    path.write_bytes(gzip.compress(b"a\npartial") + b"\x1f\x8b\x08\x00damaged")
    lines = lines_of(path, 2**20)
    assert lines[:2] == [b"a", b"partial"] and lines[2].startswith(b"<archive file damaged: ")
    assert len(lines) == 3


def test_file_uris_with_escaped_characters_are_read(tmp_path: Path):
    folder = tmp_path / "odd name" / "date=2026-07-01"
    folder.mkdir(parents=True)
    path = folder / "part 100%.jsonl"
    path.write_bytes(b"a\nb\n")
    uri = path.as_uri()
    assert "%20" in uri and "%25" in uri
    assert lines_of(path, 1) == [b"a", b"b"]
    assert list(read_lines(Split(0, uri, 0, 4, False))) == [b"a", b"b"]


def test_empty_files_have_one_empty_split(tmp_path: Path):
    plain, packed = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    plain.write_bytes(b"")
    with gzip.open(packed, "wb"):
        pass
    splits = plan_splits([(str(plain), 0), (str(packed), packed.stat().st_size)])
    assert [s.index for s in splits] == [0, 1]
    assert [list(read_lines(s)) for s in splits] == [[], []]


def test_record_ids_name_a_split_and_a_line():
    split = Split(5, "file:///a.jsonl", 0, 10, False)
    assert Split.of_record(split.record_id(7)) == (5, 7)
    assert split.record_id(0) < split.record_id(1) < Split(6, "x", 0, 1, False).record_id(0)


def test_a_file_that_cannot_be_opened_is_an_archive_error(tmp_path: Path):
    with pytest.raises(ArchiveError, match="cannot open"):
        list(read_lines(Split(0, (tmp_path / "gone.jsonl").as_uri(), 0, 1, False)))


def test_bad_split_size_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        plan_splits([("a.jsonl", 1)], 0)
