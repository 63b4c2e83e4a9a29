"""A DAG's Spark job on a small local input starts its driver quickly (contract_platform/jvm.py ``quick_start``).

The operator and the Spark provider's hook are the real ones: the hook builds the ``spark-submit`` command line
it would run, and only starting that process is left out. Connections come from ``AIRFLOW_CONN_*`` variables.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from contract_platform.jvm import QUICK_START_BYTES, QUICK_START_JAVA_OPTIONS
from contract_platform_airflow.settings import spark_connection
from contract_platform_airflow.spark import spark_submit


@pytest.fixture()
def command_lines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[str]]:
    """The command lines the provider's hook builds for ``spark-submit``, instead of running them."""
    built: list[list[str]] = []
    monkeypatch.setattr(
        SparkSubmitHook,
        "submit",
        lambda self, application="", **_: built.append(self._build_spark_submit_command(application)),
    )
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", f"sqlite:///{tmp_path / 'registry.db'}")
    return built


def driver_options(command: list[str]) -> str:
    confs = [command[n + 1] for n, word in enumerate(command[:-1]) if word == "--conf"]
    return next(c for c in confs if c.startswith("spark.driver.defaultJavaOptions=")).split("=", 1)[1]


def submit(archive: Path) -> None:
    op = spark_submit(
        task_id="validate_archive", job="validate_archive", reads=str(archive), application_args=[str(archive)]
    )
    op.execute({})


def archive_of(folder: Path, size: int) -> Path:
    day = folder / "billing.events" / "date=2026-11-27"
    day.mkdir(parents=True)
    with (day / "part-0.jsonl").open("wb") as out:
        out.truncate(size)  # sparse: its size is what the rule reads
    return folder


def test_a_small_archive_on_a_local_master_gets_the_client_compiler_only(monkeypatch, command_lines, tmp_path):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", spark_connection("local[2]"))
    cache = tmp_path / "class-cache"
    monkeypatch.setenv("CONTRACT_JVM_CLASS_CACHE", str(cache))

    submit(archive_of(tmp_path / "archive", 64 * 1024))

    options = driver_options(command_lines[0]).split()
    assert QUICK_START_JAVA_OPTIONS in options
    assert options[0].startswith("-Dlog4j2.configurationFile=")  # the platform's log configuration stays
    # the first driver on the machine is to write Spark's class-data archive at its exit; this one never ran
    # (the hook's submit is replaced), so its claim is dropped rather than left to block the next driver
    [writes] = [option for option in options if option.startswith("-XX:ArchiveClassesAtExit=")]
    assert Path(writes.split("=", 1)[1]).parent == cache and list(cache.iterdir()) == []


def test_a_large_archive_or_a_cluster_keeps_the_jvms_full_compiler(monkeypatch, command_lines, tmp_path):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", spark_connection("local[2]"))
    submit(archive_of(tmp_path / "large", QUICK_START_BYTES + 1))
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "spark://spark-master", "port": 7077}'
    )
    submit(archive_of(tmp_path / "small", 1024))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", spark_connection("local[2]"))
    submit(tmp_path / "not-there")

    assert len(command_lines) == 3
    for command in command_lines:
        assert QUICK_START_JAVA_OPTIONS not in driver_options(command), command
        assert "SharedArchiveFile" not in driver_options(command) and "ArchiveClassesAtExit" not in driver_options(
            command
        )
    assert "spark://spark-master:7077" in command_lines[1]
    assert (
        os.path.getsize(tmp_path / "large" / "billing.events" / "date=2026-11-27" / "part-0.jsonl") > QUICK_START_BYTES
    )
