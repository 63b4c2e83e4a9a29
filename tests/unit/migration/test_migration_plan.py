"""The dual-publish migration's plan: the trigger form checked with a message that says the fix, run ids made
safe for the report's file name, and the plan read back from XCom as it was written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract_platform.catalog.model import Catalog
from contract_platform.errors import UsageError
from contract_platform.migration.parity import ParityMode
from contract_platform.migration.plan import MigrationPlan, plan_migration
from contract_platform.runs import run_file_name

V1 = "billing.invoice-issued.v1"
V2 = "billing.invoice-issued.v2"


def plan_of(catalog: Catalog, **form: str | None) -> MigrationPlan:
    return plan_migration(catalog, catalog.contracts[V1], catalog.contracts[V2], **form)


def test_an_empty_form_plans_a_bridge_over_the_whole_archive(catalog: Catalog, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp_path))
    monkeypatch.delenv("CONTRACT_ARCHIVE_DIR", raising=False)

    plan = plan_of(catalog, run_id="scheduled__2026-07-01T10:30:00+00:00")

    assert plan.mode is ParityMode.BRIDGE and plan.bridged
    assert plan.tap_queue == f"bridge.{V1}"
    assert plan.since == ""
    assert (plan.source, plan.target, plan.catalog) == (V1, V2, str(catalog.root))
    v1, v2 = catalog.contracts[V1], catalog.contracts[V2]
    assert plan.exchanges == tuple(sorted({v1.transport.exchange, v2.transport.exchange}))
    assert Path(plan.report) == tmp_path / "migrations" / V1 / "parity-scheduled__2026-07-01T10_30_00_00_00.json"
    assert Path(plan.archive) == tmp_path / "archive"


def test_the_form_values_are_taken_as_given(catalog: Catalog) -> None:
    plan = plan_of(
        catalog, mode="dual-publish", parity_since="2026-07-01T00:00:00Z", tap_queue="team-a.bridge.tap", run_id="r1"
    )

    assert plan.mode is ParityMode.DUAL_PUBLISH and not plan.bridged
    assert (plan.since, plan.tap_queue) == ("2026-07-01T00:00:00Z", "team-a.bridge.tap")


def refusal(catalog: Catalog, **form: str) -> str:
    """The message of the ``UsageError`` the trigger form's values ``form`` are refused with."""
    with pytest.raises(UsageError) as raised:
        plan_of(catalog, **form)
    return str(raised.value)


@pytest.mark.parametrize("mode", ["bridged", "BRIDGE", "dual_publish"])
def test_an_unknown_mode_names_the_choices(catalog: Catalog, mode: str) -> None:
    message = refusal(catalog, mode=mode)
    assert repr(mode) in message and "bridge or dual-publish" in message and "trigger form" in message


@pytest.mark.parametrize("since", ["yesterday", "2026-13-01", "01/07/2026"])
def test_a_parity_window_that_is_not_a_moment_says_what_to_write(catalog: Catalog, since: str) -> None:
    message = refusal(catalog, parity_since=since)
    assert repr(since) in message and "ISO 8601" in message and "2026-07-01T00:00:00Z" in message
    assert "empty" in message


def test_run_ids_become_file_names() -> None:
    assert run_file_name("manual__2026-07-01T10:30:00.123+00:00") == "manual__2026-07-01T10_30_00.123_00_00"
    assert run_file_name("a/../b c") == "a_.._b_c"
    assert run_file_name(None) == run_file_name("") == "manual"


def test_the_plan_survives_xcom(catalog: Catalog) -> None:
    plan = plan_of(catalog, mode="dual-publish", parity_since="2026-07-01T00:00:00+00:00", run_id="r1")

    pulled = json.loads(json.dumps(plan.to_dict()))

    assert MigrationPlan.from_dict(pulled) == plan
    assert all(key == key.lower() for key in pulled), "XCom keys are snake_case"


def test_a_retired_source_is_a_finished_migration_and_the_plan_says_why(catalog: Catalog) -> None:
    from datetime import UTC, datetime

    from contract_platform.catalog.model import Status
    from contract_platform.evidence.records import VersionState

    retired_at = datetime(2026, 11, 24, 6, 0, tzinfo=UTC)
    retired = VersionState(V1, Status.RETIRED, "1.3.0", revision=6, updated_at=retired_at)
    deprecated = VersionState(V1, Status.DEPRECATED, "1.3.0", revision=5, updated_at=retired_at)

    plan = plan_migration(catalog, catalog.contracts[V1], catalog.contracts[V2], source_state=retired)

    assert not plan.proceeds
    assert f"{V1} was retired at 2026-11-24T06:00:00+00:00" in plan.skipped and "no parity" in plan.skipped
    assert MigrationPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    assert plan_migration(catalog, catalog.contracts[V1], catalog.contracts[V2], source_state=deprecated).proceeds
