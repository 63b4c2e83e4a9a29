"""``contractctl retention apply|hold|release|holds`` as a user runs them, on an archive folder of the test's own:
what the dry run says goes is what the real run deletes, an investigation hold keeps its exchange until it is
released, a catalogue hold keeps its own, and a bad input exits 2 without touching the archive."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.cli import run_cli

from contract_platform.evidence import EvidenceKind
from contract_platform.evidence.figures import ArchiveRetentionFigures
from contract_platform.store import SqlRegistry

TODAY = datetime.now(UTC).date()
OLD = TODAY - timedelta(days=200)  # past every contract's 90-day retention.archive
RECENT = TODAY - timedelta(days=1)
ORDER = "order.order-created.v1"  # alone on order.events
INVOICE = "billing.invoice-issued.v1"  # on billing.events, with v2


def _partition(root: Path, exchange: str, day: object) -> Path:
    folder = root / exchange / f"date={day}"
    folder.mkdir(parents=True)
    (folder / "host-1-a-000001.jsonl").write_text('{"n": 1}\n{"n": 2}\n')
    return folder


@pytest.fixture
def setup(tmp_path: Path, catalog_copy: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    """(archive root, catalogue, registry URL): invoice-issued v1's catalogue hold in force until 2099."""
    contract = catalog_copy / "billing" / "invoice-issued" / "v1" / "contract.yaml"
    contract.write_text(contract.read_text().replace('until: "2026-06-30"', 'until: "2099-12-31"'))
    root = tmp_path / "archive"
    for exchange in ("order.events", "billing.events"):
        _partition(root, exchange, OLD)
        _partition(root, exchange, RECENT)
    registry = f"sqlite:///{tmp_path / 'registry.db'}"
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("CONTRACT_ARCHIVE_DIR", str(root))
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", registry)
    return root, catalog_copy, registry


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    code, out, err = run_cli(capsys, *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def _actions(result: object) -> dict[tuple[str, str], str]:
    assert isinstance(result, dict)
    return {(d["exchange"], d["day"]): d["action"] for d in result["decisions"]}


def test_a_dry_run_says_what_the_run_then_deletes_and_a_catalogue_hold_keeps_its_exchange(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path, str]
) -> None:
    root, catalog, registry = setup

    dry = _json(capsys, "retention", "apply", "--dry-run", "--catalog", str(catalog))

    assert _actions(dry)[("order.events", str(OLD))] == "delete"
    assert _actions(dry)[("billing.events", str(OLD))] == "held"
    assert _actions(dry)[("order.events", str(RECENT))] == "keep"
    assert (root / "order.events" / f"date={OLD}").is_dir()  # a dry run deletes nothing

    done = _json(capsys, "retention", "apply", "--catalog", str(catalog))

    assert isinstance(done, dict)
    assert [(p["exchange"], p["day"], p["records"]) for p in done["deleted"]] == [("order.events", str(OLD), 2)]
    assert not (root / "order.events" / f"date={OLD}").exists()
    assert (root / "billing.events" / f"date={OLD}").is_dir()  # held by the catalogue
    assert (root / "order.events" / f"date={RECENT}").is_dir()
    with SqlRegistry.open(registry) as store:
        evidence = store.latest_evidence(ORDER, EvidenceKind.ARCHIVE_RETENTION)
    assert evidence is not None and ArchiveRetentionFigures.of(evidence).records == 2
    holds = _json(capsys, "retention", "holds", "--catalog", str(catalog))
    assert isinstance(holds, list)
    assert [(h["messageType"], h["source"], h["until"]) for h in holds] == [(INVOICE, "catalogue", "2099-12-31")]


def test_an_investigation_hold_keeps_the_archive_until_it_is_released(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path, str], tmp_path: Path
) -> None:
    root, catalog, _registry = setup

    held = _json(capsys, "retention", "hold", ORDER, "--reason", "INC-7 refund dispute", "--owner", "alice",
                 "--catalog", str(catalog))  # fmt: skip

    assert isinstance(held, dict) and (held["messageType"], held["owner"], held["until"]) == (ORDER, "alice", None)
    assert (tmp_path / "data" / "retention" / "holds.json").is_file()
    listed = _json(capsys, "retention", "holds", "--catalog", str(catalog))
    assert isinstance(listed, list)
    assert {(h["messageType"], h["source"], h["owner"]) for h in listed} == {
        (ORDER, "investigation", "alice"), (INVOICE, "catalogue", None)}  # fmt: skip
    kept = _json(capsys, "retention", "apply", "--catalog", str(catalog))
    assert _actions(kept)[("order.events", str(OLD))] == "held"
    assert (root / "order.events" / f"date={OLD}").is_dir()

    released = _json(capsys, "retention", "release", ORDER, "--catalog", str(catalog))

    assert isinstance(released, list) and [h["owner"] for h in released] == ["alice"]
    listed = _json(capsys, "retention", "holds", "--catalog", str(catalog))
    assert isinstance(listed, list) and [h["source"] for h in listed] == ["catalogue"]
    _json(capsys, "retention", "apply", "--catalog", str(catalog))
    assert not (root / "order.events" / f"date={OLD}").exists()


def test_bad_input_exits_2_and_leaves_the_archive_as_it_was(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path, str], tmp_path: Path
) -> None:
    root, catalog, _registry = setup

    assert run_cli(capsys, "retention", "apply", "--type", "no.such-type.v1", "--catalog", str(catalog))[0] == 2
    assert run_cli(capsys, "retention", "apply", "--archive", str(tmp_path / "nowhere"), "--catalog", str(catalog))[0] == 2
    assert run_cli(capsys, "retention", "hold", ORDER, "--reason", "INC-7", "--catalog", str(catalog))[0] == 2  # no owner
    assert run_cli(capsys, "retention", "hold", ORDER, "--reason", " ", "--owner", "bob", "--catalog", str(catalog))[0] == 2
    assert run_cli(capsys, "retention", "hold", ORDER, "--reason", "INC-7", "--owner", "bob", "--until", "someday",
                   "--catalog", str(catalog))[0] == 2  # fmt: skip

    assert (root / "order.events" / f"date={OLD}").is_dir()
    assert not (tmp_path / "data" / "retention" / "holds.json").exists()
