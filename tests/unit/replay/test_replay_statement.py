"""What a check says of a changed version (``replay.statement``): which evidence decided, and what the static
impact and replay each found of the consumers, said once for the text, JSON, GitHub and JUnit formats.

order.order-created.v1 at 1.3.0 makes its orderId pattern stricter; billing-service and fulfillment-service
both read /payload/orderId, so the schemas alone say the change breaks both."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import catalogue_repo, run_cli
from tests.support.replay import NOW, ORDER, tighten, write_archive
from tests.support.scripts import load_script

from contract_platform.catalog import load_catalog
from contract_platform.checks import CompatibilityResult, compatibility_of
from contract_platform.replay.decision import Decision
from contract_platform.replay.local import replay_locally
from contract_platform.replay.run import ReplayResult, replay_targets
from contract_platform.replay.statement import DecidedBy, Reach, statement_of

EVIDENCE = {"mode": "BACKWARD", "tightening": "evidence", "minMessages": 5}
VALID = [10_001, 10_002, 10_003, 10_004, 10_005]  # five digits or more: the stricter pattern accepts them
BOTH = ["billing-service", "fulfillment-service"]


# whom the change breaks, with their owners and contacts
BROKEN_BOTH = (
    "consumers: 2 of 2 broken by the change: billing-service (billing-platform, billing-platform@example.com), "
    "fulfillment-service (fulfillment-ops, fulfillment-ops@example.com)"
)


def _judged(
    tmp_path: Path, catalog_dir: Path, numbers: list[int] | None, compatibility: Any = EVIDENCE
) -> tuple[CompatibilityResult, ReplayResult | None]:
    """The compatibility result of the stricter 1.3.0 against 1.2.0, and its replay over ``numbers`` (None: no
    replay), archived today in the window of ``NOW``, judged in this process without the broker."""
    catalogue, old = tighten(Path(shutil.copytree(catalog_dir, tmp_path / "contracts")), compatibility=compatibility)
    catalog = load_catalog(catalogue)
    result = compatibility_of(catalog.contracts[ORDER], [("1.2.0", old)], catalog=catalog)
    assert result is not None
    if numbers is None:
        return result, None
    archive = write_archive(tmp_path / "archive", catalogue, numbers, NOW)
    targets = replay_targets(catalog, lambda c: [("1.2.0", old)] if c.message_type == ORDER else [], [ORDER])
    [replayed] = replay_locally(targets, str(archive), str(catalogue), in_flight=False, now=NOW)
    return result, replayed


def test_without_replay_the_static_verdict_decides_and_names_the_broken_consumers(tmp_path, catalog_dir):
    result, _ = _judged(tmp_path, catalog_dir, None)

    said = statement_of(result)

    assert (said.decided_by, said.ok, said.replay) == (DecidedBy.STATIC, False, None)
    assert [c.service for c in said.broken] == BOTH
    assert said.headline == BROKEN_BOTH + "; refused (static verdict decided; no replay)"
    assert said.lines()[1].startswith("  breaks billing-service (")
    assert "pattern-changed at /payload/orderId" in said.lines()[1]


def test_replay_accepts_on_evidence_a_narrowing_its_readers_received_no_violation_of(tmp_path, catalog_dir):
    result, replayed = _judged(tmp_path, catalog_dir, VALID)
    assert replayed is not None and replayed.decision.decision is Decision.ACCEPTED_ON_EVIDENCE

    said = statement_of(result, replayed)

    assert (said.decided_by, said.ok, said.static_compatible) == (DecidedBy.REPLAY, True, False)
    assert said.headline == (
        "2 consumers read the narrowed field (billing-service, fulfillment-service); "
        "none of their 5 archived messages violates it: accepted on evidence (replay decided)"
    )
    assert [(c.service, c.reach, c.archived_rejected, c.in_flight_rejected) for c in said.consumers] == [
        ("billing-service", Reach.BROKEN, 0, None),
        ("fulfillment-service", Reach.BROKEN, 0, None),
    ]
    assert not any(line.strip().startswith("breaks") for line in said.lines())  # the schemas' word is not the verdict


def test_replay_refuses_a_narrowing_some_of_their_messages_violate(tmp_path, catalog_dir):
    result, replayed = _judged(tmp_path, catalog_dir, [*VALID, 7, 8])  # two order numbers too short

    said = statement_of(result, replayed)

    assert (said.decided_by, said.ok, said.replay) == (DecidedBy.REPLAY, False, Decision.REFUSED)
    assert said.headline.endswith("2 of their 7 archived messages violate it: refused (replay decided)")
    assert {c.service: c.archived_rejected for c in said.consumers} == dict.fromkeys(BOTH, 2)


@pytest.mark.parametrize(
    ("numbers", "compatibility", "decision", "why"),
    [
        (
            [10_001, 10_002],
            EVIDENCE,
            Decision.UNKNOWN,
            "replay could not decide: no evidence (2 of 5 messages); breaking stands",
        ),
        (VALID, "BACKWARD", Decision.NOT_APPLICABLE, "replay does not decide: breaking stands: tightening is static"),
    ],
)
def test_a_replay_that_does_not_decide_leaves_the_static_verdict_and_says_why(
    tmp_path, catalog_dir, numbers, compatibility, decision, why
):
    result, replayed = _judged(tmp_path, catalog_dir, numbers, compatibility)

    said = statement_of(result, replayed)

    assert (said.decided_by, said.ok, said.replay) == (DecidedBy.STATIC, False, decision)
    assert said.headline == BROKEN_BOTH + f"; refused (static verdict decided; {why})"


def test_check_text_json_github_and_the_main_job_say_the_same_thing(capsys, tmp_path, catalog_dir):
    """The main job's pull request: a stricter orderId, accepted because none of the archived orders violates it."""
    catalogue = catalogue_repo(tmp_path / "repo", catalog_dir)
    tighten(catalogue, compatibility=EVIDENCE)
    archive = write_archive(tmp_path / "archive", catalogue, VALID, datetime.now(UTC))
    argv = ["check", str(catalogue), "--against", "main", "--replay", str(archive), "--no-in-flight"]
    headline = (
        "2 consumers read the narrowed field (billing-service, fulfillment-service); "
        "none of their 5 archived messages violates it: accepted on evidence (replay decided)"
    )

    text_code, text, _ = run_cli(capsys, *argv, "--engine", "local")
    json_code, out, _ = run_cli(capsys, *argv, "--engine", "local", "--format", "json")
    github_code, github, _ = run_cli(capsys, *argv, "--engine", "local", "--format", "github")

    assert text_code == json_code == github_code == 0
    assert f"     {headline}" in text.splitlines()
    assert f"ok {ORDER}: BACKWARD against 1.2.0 @ main" in text.splitlines()
    assert text.splitlines()[-1].endswith("0 compatibility failures — OK")
    report = json.loads(out)
    [entry] = [c for c in report["compatibility"] if c["messageType"] == ORDER]
    assert (entry["decidedBy"], entry["statement"]["ok"], entry["statement"]["headline"]) == ("replay", True, headline)
    assert entry["ok"] is False and entry["impact"]["broken"] == BOTH  # the existing keys keep their meaning
    assert all(f"     {line}" in text.splitlines() for line in entry["statement"]["lines"])
    [consumers] = [line for line in github.splitlines() if "title=consumers" in line]
    assert consumers.startswith("::warning ") and headline in consumers.replace("%0A", "\n").splitlines()[0]
    main_job = load_script("main_job")
    assert main_job.pull_request_statement(report) == f"{ORDER} 1.3.0: {headline}"


def test_check_against_with_replay_compares_each_changed_version_once(capsys, tmp_path, catalog_dir, monkeypatch):
    """The replay takes the check's verdicts: the changed version is diffed against its earlier one once in the
    whole run, not again for the replay's targets and its narrowing (one walk, going one way)."""
    import contract_platform.compat as compat
    from contract_platform.compat import verdict

    catalogue = catalogue_repo(tmp_path / "repo", catalog_dir)
    tighten(catalogue, compatibility=EVIDENCE)
    archive = write_archive(tmp_path / "archive", catalogue, VALID, datetime.now(UTC))
    diffed: list[str] = []
    real = verdict.diff_schemas

    def counted(old: Any, new: Any, **options: Any) -> Any:
        diffed.append(str(new.get("title") if isinstance(new, dict) else new))
        return real(old, new, **options)

    monkeypatch.setattr(verdict, "diff_schemas", counted)  # what check_history calls
    monkeypatch.setattr(compat, "diff_schemas", counted)  # what any other caller imports
    argv = ["check", str(catalogue), "--against", "main", "--replay", str(archive), "--no-in-flight"]

    code, _, _ = run_cli(capsys, *argv, "--engine", "local")

    changed = load_catalog(catalogue).contracts[ORDER].payload_schema
    assert code == 0
    assert diffed.count(str(changed.get("title"))) == 1
