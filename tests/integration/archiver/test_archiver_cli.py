"""``contractctl archive`` against the real broker: JSON report, catalogue default, exit codes."""

from __future__ import annotations

import json
import re
import shutil
import uuid
from pathlib import Path

import pytest
from tests.integration.archiver.archiver_support import Topic, archive_files, publish_raw, records_of
from tests.support.broker import ready

from contract_platform.cli.main import main

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def contractctl(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_archive_drains_an_exchange_and_reports_counts_as_json(
    topic: Topic, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", topic.url)
    ids = publish_raw(topic, 25)

    argv = ["archive", "--exchange", topic.exchange, "--root", str(tmp_path), "--idle-timeout", "0.3"]
    code, out, err = contractctl(capsys, *argv, "--format", "json")

    assert code == 0, err
    report = json.loads(out)
    assert (report["records"], report["total"], report["stoppedBy"]) == ({topic.exchange: 25}, 25, "idle")
    assert report["files"] == [str(p) for p in archive_files(tmp_path, topic.exchange)]
    archived = [r["properties"]["messageId"] for r in records_of(archive_files(tmp_path, topic.exchange))]
    assert sorted(archived) == sorted(ids)
    assert ready(topic.url, topic.queue) == 0


def test_archive_defaults_to_every_exchange_of_the_catalogue(
    topic: Topic,
    tmp_path: Path,
    catalog_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalogue = tmp_path / "contracts"
    shutil.copytree(catalog_dir, catalogue)
    for contract_yaml in catalogue.glob("*/*/v*/contract.yaml"):  # every contract publishes to the test exchange
        text = contract_yaml.read_text()
        contract_yaml.write_text(re.sub(r"exchange: [^,}\s]+", f"exchange: {topic.exchange}", text))
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", topic.url)
    monkeypatch.setenv("CONTRACT_ARCHIVE_DIR", str(tmp_path / "archive"))
    publish_raw(topic, 3)

    code, out, err = contractctl(capsys, "archive", "--catalog", str(catalogue), "--idle-timeout", "0.3")

    assert code == 0, err
    assert "archived 3 records" in out
    assert len(archive_files(tmp_path / "archive", topic.exchange)) == 1  # default root: $CONTRACT_ARCHIVE_DIR


def test_unreachable_broker_exits_3_with_one_line_and_no_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", "amqp://guest:secret@127.0.0.1:1/%2F")

    code, out, err = contractctl(capsys, "archive", "--exchange", "billing.events", "--root", str(tmp_path))

    assert code == 3
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "secret" not in err and "guest:***@127.0.0.1:1" in err and "cannot reach the broker" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--exchange", "../etc"],
        ["--exchange", "billing.events", "--idle-timeout", "-1"],
        ["--exchange", f"t-{uuid.uuid4().hex[:8]}.never-provisioned"],  # no archive queue on the broker
    ],
    ids=["bad-name", "negative-idle-timeout", "no-archive-queue"],
)
def test_bad_input_exits_2_and_says_what(
    argv: list[str], rabbitmq_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", rabbitmq_url)

    code, out, err = contractctl(capsys, "archive", "--root", str(tmp_path), *argv)

    assert code == 2
    assert err.startswith("contractctl: ") and ("exchange" in err or "idle_timeout" in err)
    assert not any(tmp_path.iterdir())
