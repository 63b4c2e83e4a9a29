"""``contractctl bridge``: exit 2 for bad input (with file and pointer), 3 when the broker is unreachable."""

from __future__ import annotations

from pathlib import Path

import pytest

from contract_platform.cli.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def test_a_broken_spec_exits_2_naming_file_and_pointer(catalog_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = catalog_copy / "billing/invoice-issued/v2/migration.yaml"
    spec.write_text(spec.read_text().replace("op: decimalToMinorUnits", "op: decimalToCents"))
    code, err = run(["bridge", str(spec), "--catalog", str(catalog_copy)], capsys)
    assert code == 2
    assert f"{spec}#/payload/3/op" in err


def test_an_unknown_type_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["bridge", "billing.nothing.v2"], capsys)[0] == 2


def test_a_bad_limit_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(["bridge", "billing.invoice-issued.v2", "--max-messages", "0"], capsys)
    assert code == 2 and "max-messages must be positive" in err


def test_an_unreachable_broker_exits_3_without_the_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], closed_port: int
) -> None:
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", f"amqp://guest:s3cret@127.0.0.1:{closed_port}/%2F")
    code, err = run(["bridge", "billing.invoice-issued.v2", "--idle-timeout", "1"], capsys)
    assert code == 3
    assert "cannot reach the broker" in err and "s3cret" not in err
