"""Archive files: crash repair, rotation, unique names, and acknowledgement only after fsync."""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
from datetime import date
from pathlib import Path

import pika
import pytest
from pika.spec import Basic

from contract_platform.archiver import ArchiverConfig, repair_partial_files
from contract_platform.archiver.files import PartitionWriter
from contract_platform.archiver.service import _Sink
from contract_platform.errors import UsageError

LINE = b'{"n":1}\n'


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_repair_truncates_only_a_trailing_partial_line(tmp_path: Path) -> None:
    torn = write(tmp_path / "ex" / "date=2026-07-01" / "a.jsonl", LINE * 3 + b'{"n":')
    whole = write(tmp_path / "ex" / "date=2026-07-01" / "b.jsonl", LINE * 3)
    only_partial = write(tmp_path / "ex" / "date=2026-07-02" / "c.jsonl", b'{"n":1, "bo')
    empty = write(tmp_path / "ex" / "date=2026-07-02" / "d.jsonl", b"")
    gzipped = write(tmp_path / "ex" / "date=2026-07-02" / "e.jsonl.gz", b"\x1f\x8b not a line")
    other = write(tmp_path / "ex" / "date=2026-07-02" / "notes.txt", b"no newline")

    repaired = repair_partial_files(tmp_path)

    assert repaired == [torn, only_partial]
    assert torn.read_bytes() == LINE * 3
    assert only_partial.read_bytes() == b""
    assert whole.read_bytes() == LINE * 3
    assert empty.read_bytes() == b""
    assert gzipped.read_bytes() == b"\x1f\x8b not a line"
    assert other.read_bytes() == b"no newline"
    assert repair_partial_files(tmp_path) == []  # idempotent


def test_repair_finds_the_last_newline_far_back_in_a_long_partial_line(tmp_path: Path) -> None:
    torn = write(tmp_path / "a.jsonl", LINE + b"x" * (3 * 1024 * 1024 + 17))

    assert repair_partial_files(tmp_path) == [torn]
    assert torn.read_bytes() == LINE


def test_repair_leaves_a_file_a_live_archiver_holds_alone(tmp_path: Path) -> None:
    busy = write(tmp_path / "a.jsonl", LINE + b'{"half')
    fd = os.open(busy, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert repair_partial_files(tmp_path) == []
        assert busy.read_bytes() == LINE + b'{"half'
    finally:
        os.close(fd)


def test_repair_of_a_missing_root_is_nothing(tmp_path: Path) -> None:
    assert repair_partial_files(tmp_path / "absent") == []


def test_writer_rotates_by_size_without_splitting_a_line(tmp_path: Path) -> None:
    writer = PartitionWriter(tmp_path / "ex", max_file_bytes=100)
    lines = [json.dumps({"n": n, "pad": "x" * 20}).encode() + b"\n" for n in range(12)]  # 40-ish bytes each
    for line in lines:
        writer.write(line, date(2026, 7, 1))
    writer.write(b'{"big":"' + b"y" * 300 + b'"}\n', date(2026, 7, 1))  # larger than a file: alone in one
    writer.close()

    assert len(writer.files) > 3
    contents = [path.read_bytes() for path in writer.files]
    assert all(c.endswith(b"\n") for c in contents)
    assert all(len(c) <= 100 for c in contents[:-1]) and contents[-1].count(b"\n") == 1
    assert b"".join(contents) == b"".join(lines) + b'{"big":"' + b"y" * 300 + b'"}\n'
    assert writer.bytes == sum(len(c) for c in contents)


def test_writer_rotates_on_date_change_into_the_date_partition(tmp_path: Path) -> None:
    writer = PartitionWriter(tmp_path / "ex", max_file_bytes=1 << 20)
    writer.write(LINE, date(2026, 6, 30))
    writer.write(LINE, date(2026, 6, 30))
    writer.write(LINE, date(2026, 7, 1))
    writer.close()

    first, second = writer.files
    assert first.parent == tmp_path / "ex" / "date=2026-06-30"
    assert second.parent == tmp_path / "ex" / "date=2026-07-01"
    assert (first.read_bytes(), second.read_bytes()) == (LINE * 2, LINE)


def test_file_names_are_unique_per_process_and_never_reused(tmp_path: Path) -> None:
    one = PartitionWriter(tmp_path / "ex", max_file_bytes=1 << 20)
    two = PartitionWriter(tmp_path / "ex", max_file_bytes=1 << 20)
    one.write(LINE, date(2026, 7, 1))
    two.write(LINE, date(2026, 7, 1))
    one.close()
    two.close()

    (a,), (b,) = one.files, two.files
    assert a != b and a.parent == b.parent
    host = re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname())
    assert re.fullmatch(rf"{re.escape(host)}-{os.getpid()}-\d{{8}}T\d{{12}}Z-\d{{6}}\.jsonl", a.name), a.name
    assert a.read_bytes() == b.read_bytes() == LINE


class FakeChannel:
    """Records acknowledgements, and how many lines the archive file held when each was sent."""

    def __init__(self, events: list[tuple], files: list[Path]) -> None:
        self.events = events
        self.files = files

    def basic_ack(self, delivery_tag: int, multiple: bool) -> None:
        on_disk = sum(p.read_bytes().count(b"\n") for p in self.files)
        self.events.append(("ack", delivery_tag, multiple, on_disk))


def test_a_batch_is_acknowledged_once_after_its_file_is_fsynced(tmp_path: Path, monkeypatch) -> None:
    events: list[tuple] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        events.append(("fsync", Path(os.readlink(f"/proc/self/fd/{fd}"))))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    config = ArchiverConfig(root=tmp_path, exchanges=("ex",), prefetch=10, batch_size=3, batch_ms=60_000)
    sink = _Sink("ex", config)
    sink.channel = FakeChannel(events, sink.writer.files)
    props = pika.BasicProperties(message_id="m")

    for tag in range(1, 6):
        sink.on_message(sink.channel, Basic.Deliver("c", tag, False, "ex", "k"), props, b"{}")
    assert sink.deadline is not None  # two deliveries wait for the batch time (or the next commit)
    sink.commit()
    sink.writer.close()

    (file,) = sink.writer.files
    assert [e for e in events if e[0] == "ack"] == [("ack", 3, True, 3), ("ack", 5, True, 5)]
    created = [e[1] for e in events[:3]]
    assert created == [file.parent, tmp_path / "ex", tmp_path]  # the new name is durable before any ack
    first_ack = events.index(("ack", 3, True, 3))
    assert events[first_ack - 1] == ("fsync", file)
    second_ack = events.index(("ack", 5, True, 5))
    assert events[second_ack - 1] == ("fsync", file)
    assert sink.records == 5 and sink.deadline is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"exchanges": ()}, "no exchange"),
        ({"exchanges": ("../etc",)}, "cannot be archived"),
        ({"exchanges": ("..",)}, "cannot be archived"),
        ({"exchanges": ("a/b",)}, "cannot be archived"),
        ({"exchanges": ("",)}, "cannot be archived"),
        ({"prefetch": 0}, "prefetch must be"),
        ({"prefetch": 70000}, "prefetch must be"),
        ({"batch_size": 600, "prefetch": 500}, "batch_size must be an integer from 1 to 500"),
        ({"batch_ms": 0}, "batch_ms"),
        ({"max_file_bytes": 0}, "max_file_bytes"),
        ({"idle_timeout": -1}, "idle_timeout"),
        ({"idle_timeout": float("inf")}, "idle_timeout"),
        ({"batch_size": True}, "batch_size"),
    ],
)
def test_config_refuses_what_cannot_work(tmp_path: Path, options: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        ArchiverConfig(**({"root": tmp_path, "exchanges": ("billing.events",)} | options))


def test_config_normalises_root_and_exchanges(tmp_path: Path) -> None:
    config = ArchiverConfig(root=str(tmp_path), exchanges=["a.events", "b.events", "a.events"])  # type: ignore[arg-type]

    assert config.root == tmp_path
    assert config.exchanges == ("a.events", "b.events")
    assert (config.prefetch, config.batch_size, config.batch_ms, config.max_file_bytes, config.idle_timeout) == (
        500,
        200,
        500,
        64 * 1024 * 1024,
        2.0,
    )
