"""Reading archive files (docs/design.md#archive-record) as lines, in splits, in bounded memory.

The Spark job lists the archive's files on the driver (Hadoop's listing: the same globs and
recursion as ``spark.read.text``) and cuts them into ``Split``s; each Python worker then reads its
split here, so the lines go from the file straight to the record-level rules instead of through
the JVM and back. Files are opened with Arrow's file systems (local paths and ``file:``, ``hdfs:``,
``s3:``/``s3a:``, ``gs:`` URIs), as every executor of a cluster sees them.

* A gzipped file (``.gz``) is one split, read as a stream: concatenated gzip members are read one
  after the other. A file that ends inside a member, or holds data that cannot be inflated, yields
  what could be decompressed (a last, partial line is a line like any other), then one line that
  says which bytes could not be read: the record rules call both MALFORMED, so nothing in the file
  goes uncounted. Zero padding after the last member is not data.
* A plain file is cut into splits of about ``split_bytes``; a line belongs to the split that holds
  its first byte, so every line is read exactly once whatever the split size.
* Lines end at ``\\n`` (a ``\\r`` before it is dropped); a last line without one is still a line;
  an empty line is a line (a record that is not JSON), as in Spark's text source.

``Split.record_id(n)`` numbers the n-th line of a split: ids grow in archive order (files in
listing order, then bytes), and reading the same split again finds the same line under the same id.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from contract_platform.errors import ArchiveError

__all__ = [
    "DEFAULT_SPLIT_BYTES",
    "LINE_BITS",
    "Split",
    "file_sizes",
    "line_batches",
    "open_file",
    "plan_splits",
    "read_lines",
]

DEFAULT_SPLIT_BYTES = 128 * 2**20  # Spark's spark.sql.files.maxPartitionBytes default
LINE_BITS = 32  # record_id = split index << LINE_BITS | line number within the split
_CHUNK = 4 * 2**20
_MAX_OUT = 8 * _CHUNK
_GZIP = 16 + zlib.MAX_WBITS


@dataclass(frozen=True)
class Split:
    """A byte range of one archive file: ``start`` and ``length`` of a plain file, all of a gzipped one."""

    index: int
    uri: str
    start: int
    length: int
    compressed: bool

    @property
    def end(self) -> int:
        return self.start + self.length

    def record_id(self, line_number: int) -> int:
        return (self.index << LINE_BITS) | line_number

    @staticmethod
    def of_record(record_id: int) -> tuple[int, int]:
        """(split index, line number) of a ``record_id``."""
        return record_id >> LINE_BITS, record_id & ((1 << LINE_BITS) - 1)


def plan_splits(files: Iterable[tuple[str, int]], split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[Split]:
    """The splits of ``(uri, size)`` files, in the files' order; an empty file still has one (empty) split."""
    if split_bytes < 1:
        raise ValueError(f"split_bytes must be at least 1, not {split_bytes}")
    splits: list[Split] = []
    for uri, size in files:
        compressed = uri.endswith(".gz")
        if compressed or size <= split_bytes:
            splits.append(Split(len(splits), uri, 0, size, compressed))
            continue
        for start in range(0, size, split_bytes):
            splits.append(Split(len(splits), uri, start, min(split_bytes, size - start), False))
    return splits


def _filesystem(uri: str) -> tuple[Any, str]:
    """(Arrow file system, path in it) for a URI or local path; ``ArchiveError`` for a scheme Arrow cannot read."""
    from pyarrow import fs

    parts = urlsplit(uri)
    if parts.scheme in ("", "file"):
        return fs.LocalFileSystem(), (unquote(parts.path) if parts.scheme else uri)  # URIs escape "%", " "...
    location = uri.replace("s3a://", "s3://", 1).replace("s3n://", "s3://", 1)
    try:
        found: tuple[Any, str] = fs.FileSystem.from_uri(location)  # pyarrow is untyped: (file system, path)
        return found
    except (OSError, ValueError) as exc:
        raise ArchiveError(
            f"{uri}: cannot read archive files there: {exc}; use a path the Spark workers can read (see README, Operating)"
        ) from exc


def open_file(uri: str) -> Any:
    """A binary input stream for an archive file's URI (or local path); ``ArchiveError`` if it cannot be opened."""
    filesystem, path = _filesystem(uri)
    try:
        return filesystem.open_input_file(path)
    except (OSError, ValueError) as exc:
        raise ArchiveError(
            f"{uri}: cannot open the archive file: {exc}; check that every Spark worker can read it, or run again "
            "if it was moved away during the run"
        ) from exc


def file_sizes(uris: Sequence[str]) -> list[int]:
    """The size in bytes of each file, in one request per file system; ``ArchiveError`` for one that is gone."""
    sizes: dict[str, int] = {}
    grouped: dict[tuple[str, str], tuple[Any, list[tuple[str, str]]]] = {}
    for uri in uris:
        place = urlsplit(uri)[:2]  # (scheme, host): one file system, asked once
        if place in grouped:
            grouped[place][1].append((uri, _filesystem(uri)[1]))
        else:
            filesystem, path = _filesystem(uri)
            grouped[place] = (filesystem, [(uri, path)])
    for filesystem, members in grouped.values():
        try:
            infos = filesystem.get_file_info([path for _, path in members])
        except (OSError, ValueError) as exc:
            raise ArchiveError(
                f"cannot read the sizes of the archive files: {exc}; check the archive is readable"
            ) from exc
        for (uri, _), info in zip(members, infos, strict=True):
            if info.size is None:
                raise ArchiveError(f"{uri}: the archive file is gone (listed, then not found); run again")
            sizes[uri] = int(info.size)
    return [sizes[uri] for uri in uris]


def read_lines(split: Split, stream: Any | None = None) -> Iterator[bytes]:
    """Every line of ``split``, without its line end, as bytes (``stream``: an already open file)."""
    for lines in line_batches(split, stream):
        yield from lines


def line_batches(split: Split, stream: Any | None = None) -> Iterator[list[bytes]]:
    """``read_lines`` a few megabytes at a time: lists of consecutive lines, in order."""
    source = stream if stream is not None else open_file(split.uri)
    try:
        batches = _lines(_inflated(source)) if split.compressed else _plain_lines(source, split.start, split.end)
        for lines in batches:
            if any(line.endswith(b"\r") for line in lines):
                lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
            yield lines
    finally:
        if stream is None:
            source.close()


class _Damaged(bytes):
    """What stands for the part of a gzipped file that could not be inflated: one line of its own."""


def _inflated(source: Any) -> Iterator[bytes]:
    """The decompressed bytes of every gzip member in ``source``; then, if some of it could not be
    inflated (damaged, not gzip, or cut short inside a member), a ``_Damaged`` line that says so."""
    inflater = zlib.decompressobj(_GZIP)
    fed = False  # has the current member been given any input?
    pending = b""
    read = 0  # compressed bytes read from the file so far
    while True:
        if not pending:
            pending = source.read(_CHUNK)
            read += len(pending)
            if not pending:
                break
        try:
            data = inflater.decompress(pending, _MAX_OUT)  # bounded: a small file may inflate enormously
        except zlib.error as exc:
            yield from _flushed(inflater)
            yield _damage(source, read - len(pending), f"cannot be inflated ({exc}): not gzip data, or damaged")
            return
        fed = True
        if data:
            yield data
        if inflater.eof:
            pending = inflater.unused_data
            if pending and not pending.strip(b"\0"):
                return  # zero padding after the last member
            inflater, fed = zlib.decompressobj(_GZIP), False
        else:
            pending = inflater.unconsumed_tail
    if fed:  # the file ended inside a member
        yield from _flushed(inflater)
        yield _Damaged(f"<archive file damaged: it ends at byte {read} inside a gzip member (cut short)>".encode())


def _flushed(inflater: Any) -> Iterator[bytes]:
    try:
        tail = inflater.flush()  # whatever a damaged or cut-short member still holds
    except zlib.error:
        return
    if tail:
        yield tail


def _damage(source: Any, offset: int, what: str) -> _Damaged:
    try:
        size = int(source.size())
    except (AttributeError, OSError, ValueError):
        size = offset
    where = f"bytes {offset} to {size}" if size > offset else f"what follows byte {offset}"
    return _Damaged(f"<archive file damaged: {where} {what}; not read>".encode())


def _lines(chunks: Iterable[bytes]) -> Iterator[list[bytes]]:
    """The pieces of the concatenated ``chunks`` between newlines (and after the last one, if any), in lists."""
    rest = b""
    for chunk in chunks:
        if isinstance(chunk, _Damaged):  # a line of its own, after whatever line it cut short
            yield [*([rest] if rest else []), bytes(chunk)]
            rest = b""
            continue
        pieces = (rest + chunk if rest else chunk).split(b"\n")
        rest = pieces.pop()
        if pieces:
            yield pieces
    if rest:
        yield [rest]


def _plain_lines(source: Any, start: int, end: int) -> Iterator[list[bytes]]:
    """The lines whose first byte lies in ``[start, end)``."""
    position = 0
    if start > 0:
        source.seek(start - 1)
        position = start - 1
        while True:  # the line running into this split belongs to the one before
            chunk = source.read(_CHUNK)
            if not chunk:
                return
            newline = chunk.find(b"\n")
            if newline >= 0:
                position += newline + 1
                first = chunk[newline + 1 :]
                break
            position += len(chunk)
    else:
        source.seek(0)
        first = b""
    if position >= end:
        return

    def chunks() -> Iterator[bytes]:
        if first:
            yield first
        while True:
            chunk = source.read(_CHUNK)
            if not chunk:
                return
            yield chunk

    for lines in _lines(chunks()):
        taken = 0
        for line in lines:
            if position >= end:
                break
            position += len(line) + 1
            taken += 1
        if taken:
            yield lines if taken == len(lines) else lines[:taken]
        if position >= end:
            return
