"""contractctl status and transition against a real (SQLite) registry store."""

from __future__ import annotations

import json

from tests.support.cli import run_cli

from contract_platform.store import SqlRegistry

INV1 = "billing.invoice-issued.v1"


def evidence(registry: SqlRegistry, kind: str, version: str = "1.3.0") -> None:
    registry.add_evidence(INV1, contract_version=version, kind=kind, verdict="pass", figures={"errors": 0})


def test_status_before_anything_ran_shows_declared_only(capsys, catalog_dir, registry_url):
    code, out, _ = run_cli(capsys, "status", "--catalog", str(catalog_dir), "--format", "json")
    assert code == 0
    rows = {r["messageType"]: r for r in json.loads(out)["contracts"]}
    assert rows[INV1]["declared"] == "deprecated" and rows[INV1]["effective"] is None and not rows[INV1]["inSync"]


def test_transition_through_the_guards_and_status_shows_the_history(capsys, catalog, catalog_dir, registry_url):
    code, _, err = run_cli(
        capsys, "transition", INV1, "experimental", "--reason", "try", "--catalog", str(catalog_dir), "--actor", "alice"
    )
    assert code == 1
    assert "lint" in err and "refused" in err  # no evidence yet: every guard names what is missing

    registry = SqlRegistry.open(registry_url)
    for kind in ("lint", "fixtures", "topology"):
        evidence(registry, kind, catalog.get(INV1).version)
    registry.close()
    code, out, _ = run_cli(
        capsys,
        "transition",
        INV1,
        "experimental",
        "--reason",
        "evidence is in",
        "--catalog",
        str(catalog_dir),
        "--actor",
        "alice",
        "--format",
        "json",
    )
    assert code == 0 and json.loads(out) == {"messageType": INV1, "from": "proposed", "to": "experimental"}

    code, _, err = run_cli(capsys, "transition", INV1, "retired", "--reason", "skip", "--catalog", str(catalog_dir))
    assert code == 1 and "active" in err  # illegal jump: names the allowed next step

    code, out, _ = run_cli(capsys, "status", INV1, "--catalog", str(catalog_dir), "--format", "json")
    detail = json.loads(out)
    assert detail["effective"] == "experimental"
    assert [(h["from"], h["to"], h["actor"]) for h in detail["history"]] == [
        (None, "proposed", "alice"),
        ("proposed", "experimental", "alice"),
    ]
    assert detail["history"][-1]["reason"] == "evidence is in"
    assert set(detail["evidence"]) == {"lint", "fixtures", "topology"}
    assert detail["refusals"][0]["to"] == "retired"


def test_transition_bad_input_exits_2(capsys, catalog_dir, registry_url):
    code, _, err = run_cli(capsys, "transition", INV1, "shipped", "--reason", "x", "--catalog", str(catalog_dir))
    assert code == 2 and "not a status" in err
    code, _, err = run_cli(
        capsys, "transition", "no.such-thing.v1", "active", "--reason", "x", "--catalog", str(catalog_dir)
    )
    assert code == 2 and "not a messageType" in err
    code, _, err = run_cli(capsys, "status", "no.such-thing.v1", "--catalog", str(catalog_dir))
    assert code == 2


def test_unreachable_store_exits_3_without_the_password(capsys, catalog_dir, monkeypatch):
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", "postgresql+psycopg2://app:s3cret@127.0.0.1:1/registry")
    code, _, err = run_cli(capsys, "status", "--catalog", str(catalog_dir))
    assert code == 3 and "s3cret" not in err and "***" in err
