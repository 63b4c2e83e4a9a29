"""``contractctl audit``: bad input exits 2, an unreachable broker or store exits 3 (no broker needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contract_platform.cli.main import build_parser, main


@pytest.fixture()
def last_seen(tmp_path: Path) -> Path:
    path = tmp_path / "last-seen.json"
    path.write_text('{"billing.invoice-issued.v1": {"lastReceivedAt": "2026-01-01T00:00:00.000Z", "records": 3}}')
    return path


def test_audit_is_a_verb() -> None:
    args = build_parser().parse_args(["audit", "billing.invoice-issued.v1", "--format", "json"])
    assert args.type == "billing.invoice-issued.v1" and args.format == "json" and not args.record


def test_an_unknown_type_is_bad_input(capsys: pytest.CaptureFixture[str], catalog_dir: Path, tmp_path: Path) -> None:
    code = main(["audit", "billing.nope.v1", "--catalog", str(catalog_dir), "--registry", f"sqlite:///{tmp_path}/r.db"])
    assert code == 2
    assert "billing.nope.v1" in capsys.readouterr().err


def test_a_broken_last_seen_file_is_bad_input(catalog_dir: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"billing.invoice-issued.v1": {"records": 1}}')
    argv = ["audit", "billing.invoice-issued.v1", "--catalog", str(catalog_dir), "--last-seen", str(broken)]
    assert main([*argv, "--registry", f"sqlite:///{tmp_path}/r.db"]) == 2


def test_an_unreachable_broker_exits_3(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    catalog_dir: Path,
    tmp_path: Path,
    last_seen: Path,
) -> None:
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", "amqp://guest:secret@127.0.0.1:1/%2F")
    argv = ["audit", "billing.invoice-issued.v1", "--catalog", str(catalog_dir), "--last-seen", str(last_seen)]
    assert main([*argv, "--registry", f"sqlite:///{tmp_path}/r.db"]) == 3
    error = capsys.readouterr().err
    assert "cannot reach the broker" in error and "secret" not in error


def test_an_unreachable_store_exits_3(catalog_dir: Path, tmp_path: Path, last_seen: Path) -> None:
    argv = ["audit", "billing.invoice-issued.v1", "--catalog", str(catalog_dir), "--last-seen", str(last_seen)]
    assert main([*argv, "--registry", "postgresql+psycopg2://nobody:pw@127.0.0.1:1/registry"]) == 3
