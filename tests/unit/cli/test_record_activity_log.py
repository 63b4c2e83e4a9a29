"""``contractctl record-activity --log-file``: the recorder's log is rotated, so a recorder left running for months
(``scripts/airflow-local`` runs one beside Airflow) keeps a bounded log."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.cli import run_cli

from contract_platform.cli.record_activity import log_to


@pytest.fixture
def root_handlers() -> Iterator[None]:
    """The root logger's handlers as they were: log_to adds one for the rest of the process."""
    root = logging.getLogger()
    before = list(root.handlers)
    yield
    for handler in [h for h in root.handlers if h not in before]:
        root.removeHandler(handler)
        handler.close()


def test_the_log_is_rotated_and_the_older_files_are_bounded(tmp_path: Path, root_handlers: None) -> None:
    log = tmp_path / "logs" / "activity-recorder.log"
    log_to(log, max_bytes=2_000, kept=2)
    recorder = logging.getLogger("contract_platform.activity.recorder")
    for n in range(500):
        recorder.warning("gap %d: the broker went away", n)

    assert sorted(p.name for p in log.parent.iterdir()) == [
        "activity-recorder.log", "activity-recorder.log.1", "activity-recorder.log.2",
    ]  # fmt: skip
    assert all(p.stat().st_size <= 2_000 for p in log.parent.iterdir())
    assert "gap 499: the broker went away" in log.read_text()  # the newest is in the file named


def test_an_unwritable_log_file_is_refused_with_what_to_do(tmp_path: Path, capsys, root_handlers: None) -> None:
    (tmp_path / "a-file").write_text("")
    code, _, err = run_cli(capsys, "record-activity", "--log-file", str(tmp_path / "a-file" / "recorder.log"))

    assert code == 2
    assert "cannot write the log file" in err and "--log-file in a writable folder" in err
