"""``run_job``: the one skeleton of every Spark job (arguments, catalogue, session, exit codes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contract_platform.errors import ArchiveError, StoreError
from spark_jobs import archive_last_seen, dual_publish_parity, envelope_quality, validate_archive
from spark_jobs.jobs import BAD_INPUT, FINDINGS, JobRun, job_parser, run_job

JOBS = (validate_archive, dual_publish_parity, envelope_quality, archive_last_seen)


def run(body, *argv: str) -> int:  # type: ignore[no-untyped-def]
    return run_job("test-job", job_parser("test_job", "a job"), body, list(argv))


def test_findings_exit_1_and_no_fail_on_findings_turns_only_them_into_0(catalog_dir: Path) -> None:
    catalog = ["--catalog", str(catalog_dir)]
    assert run(lambda run: FINDINGS, *catalog) == 1
    assert run(lambda run: FINDINGS, *catalog, "--no-fail-on-findings") == 0
    assert run(lambda run: 0, *catalog, "--no-fail-on-findings") == 0

    def bad_input(run: JobRun) -> int:
        raise ArchiveError("/nowhere: archive path does not exist")

    def store_down(run: JobRun) -> int:
        raise StoreError("the registry store failed")

    assert run(bad_input, *catalog, "--no-fail-on-findings") == BAD_INPUT == 2
    assert run(store_down, *catalog, "--no-fail-on-findings") == 3


def test_a_catalogue_that_does_not_load_is_bad_input_before_any_session(tmp_path: Path, capsys) -> None:
    started: list[JobRun] = []

    assert run(started.append, "--catalog", str(tmp_path / "missing")) == BAD_INPUT
    assert started == []
    assert capsys.readouterr().err.startswith("error: ")


@pytest.mark.parametrize("job", JOBS, ids=lambda job: job.__name__.rsplit(".", 1)[-1])
def test_every_job_is_the_skeleton_with_its_own_arguments(job, capsys) -> None:  # type: ignore[no-untyped-def]
    assert job.main(["--bad-option"]) == BAD_INPUT
    assert "usage:" in capsys.readouterr().err
    assert job.main(["--help"]) == 0
    shown = capsys.readouterr().out
    assert "--master" in shown
    if job is not archive_last_seen:  # the jobs that judge: findings, evidence linked to a run
        assert "--no-fail-on-findings" in shown and "--run-id" in shown and "--registry-url" in shown


@pytest.mark.parametrize("job", (validate_archive, envelope_quality), ids=lambda job: job.__name__.rsplit(".", 1)[-1])
def test_until_not_after_since_is_bad_input_in_one_line_for_every_job_with_a_range(job, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert job.main([str(tmp_path), "--since", "2026-07-02", "--until", "2026-07-02"]) == BAD_INPUT
    assert (
        capsys.readouterr().err
        == "error: until 2026-07-02 is not after since 2026-07-02: the range is since <= day < until\n"
    )
