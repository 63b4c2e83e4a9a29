"""How the catalogue watch batches changes, and what a contract_change run started by its events checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.estate import generate_catalog

from contract_platform.catalog import load_catalog
from contract_platform.change import (
    MAX_EVENTS,
    affected_contracts,
    change_batches,
    changed_contracts,
    event_extra,
    lint_contracts,
    scope_of_events,
)
from contract_platform.store import SqlRegistry


def changes(n: int) -> list[dict[str, str]]:
    return [{"messageType": f"d.item{i:05d}-created.v1", "fingerprint": f"{i:064x}"} for i in range(n)]


@pytest.mark.parametrize(("n", "events"), [(1, 1), (2_000, 1), (2_501, 2), (20_000, MAX_EVENTS), (200_000, MAX_EVENTS)])
def test_the_number_of_events_stays_bounded_whatever_changed(n, events):
    batches = change_batches(changes(n))

    assert len(batches) == events
    named = [t for batch in batches for t in batch["messageTypes"]]
    assert named == sorted(c["messageType"] for c in changes(n))  # every change once, none lost
    assert all(set(batch["fingerprints"]) == set(batch["messageTypes"]) for batch in batches)


def test_nothing_changed_nothing_to_emit():
    assert change_batches([]) == []


def test_an_event_names_its_versions_and_keeps_the_single_change_keys():
    [one] = change_batches(changes(1))
    [many] = change_batches(changes(3))

    assert event_extra(one) == {
        "messageTypes": ["d.item00000-created.v1"],
        "count": 1,
        "messageType": "d.item00000-created.v1",
        "fingerprint": f"{0:064x}",
    }
    assert event_extra(many) == {"messageTypes": many["messageTypes"], "count": 3}


def test_a_run_checks_what_its_events_name_or_everything_when_one_does_not_say():
    assert scope_of_events([{"messageTypes": ["a.b.v1", "a.c.v1"], "count": 2}, {"messageType": "x.y.v1"}]) == {
        "a.b.v1",
        "a.c.v1",
        "x.y.v1",
    }
    assert scope_of_events([{"messageTypes": ["a.b.v1"]}, {"source": "someone else"}]) is None
    assert scope_of_events([None]) is None
    assert scope_of_events([]) is None


def test_a_change_reaches_the_other_majors_of_its_family(catalog):
    reached = affected_contracts(catalog, {"billing.invoice-issued.v2"})

    assert {"billing.invoice-issued.v1", "billing.invoice-issued.v2"} <= reached
    assert all(t.startswith("billing.invoice-issued.") for t in reached)
    assert affected_contracts(catalog, {"no.such-type.v1"}) == set()


def test_lint_records_evidence_for_the_scope_only_and_each_finding_under_its_own_contract(tmp_path: Path):
    types = generate_catalog(tmp_path / "contracts", 4)
    broken = tmp_path / "contracts" / "estate000" / "item00002-created" / "v1" / "fixtures" / "valid"
    for fixture in broken.glob("*.json"):
        fixture.write_text(fixture.read_text().replace('"orderId": "ord-', '"orderId": "bad-'))
    registry = SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}")
    try:
        assert len(changed_contracts(tmp_path / "contracts", registry)) == 4
        summary = lint_contracts(load_catalog(tmp_path / "contracts"), registry, only=types[1:3])

        assert set(summary.results) == set(types[1:3])
        assert summary.problems and all(types[2] in p or "item00002" in p for p in summary.problems)
        assert registry.latest_evidence(types[0], "fixtures") is None
        assert str(registry.latest_evidence(types[1], "fixtures").verdict) == "pass"
        assert str(registry.latest_evidence(types[2], "fixtures").verdict) == "fail"
    finally:
        registry.close()


def test_a_broker_lost_while_provisioning_says_it_ran_out_of_file_handles(monkeypatch):
    from contract_platform.amqp import management
    from contract_platform.change import _out_of_resources_said
    from contract_platform.errors import BrokerOutOfResources, BrokerUnavailable

    def declared():
        yield "a.b.v1", "report"
        raise BrokerUnavailable("RabbitMQ at amqp://guest:***@127.0.0.1:5672/%2F: handshake timed out")

    shortage = "broker node rabbit@host has used 1,020 of its 1,024 file handles ... Fix: raise ulimit -n"
    monkeypatch.setattr(management, "resource_problem", lambda client: shortage)

    with pytest.raises(BrokerOutOfResources) as raised:
        list(_out_of_resources_said(declared(), object()))
    assert "handshake timed out" in str(raised.value) and "ulimit -n" in str(raised.value)

    monkeypatch.setattr(management, "resource_problem", lambda client: None)  # the API cannot tell: as it was
    with pytest.raises(BrokerUnavailable) as plain:
        list(_out_of_resources_said(declared(), object()))
    assert type(plain.value) is BrokerUnavailable
