"""An upgrade in place keeps the served Airflow's run history (docs/upgrading.md, "The served Airflow's metadata").

Up to release 0.1.0 every data folder's served Airflow kept its metadata in ``contract_platform_airflow``; now
each folder has its own database. The previous release's database here is real: migrated by ``airflow db
migrate`` and holding a DAG run that Airflow's LocalExecutor ran, its task log written under the data folder
as the old served Airflow wrote it. Each test works on a copy of it (``CREATE DATABASE ... TEMPLATE``) under a
scratch name standing for ``contract_platform_airflow``, which a shared server must not lose to a test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from tests.support.databases import drop_database, scratch_database
from tests.support.ports import closed_port

from contract_platform_airflow import metadata_db, serve
from contract_platform_airflow.metadata_db import (
    AIRFLOW_DB_URL_VARIABLE,
    SQL_ALCHEMY_CONN,
    MetadataDatabaseNotAdopted,
    default_metadata_url,
    metadata_database,
)

pytestmark = pytest.mark.timeout(300)

NIGHTLY = """
import pendulum
from airflow.sdk import dag, task


@dag(schedule=None, start_date=pendulum.datetime(2026, 1, 1), catchup=False)
def nightly():
    @task
    def one():
        return 1

    one()


nightly()
"""


@dataclass(frozen=True)
class Previous:
    """The previous release's served metadata (a template database) and the logs its runs wrote."""

    template: str
    logs: Path


def airflow(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "airflow"), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=240, check=False)


@pytest.fixture(scope="module")
def previous(tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[Previous]:
    work = tmp_path_factory.mktemp("previous")
    (work / "dags").mkdir()
    (work / "dags" / "nightly.py").write_text(NIGHTLY, "utf-8")
    (work / "plugins").mkdir()
    home = work / "data" / "airflow"
    with scratch_database(postgres_url, "previous_airflow") as url, closed_port() as nowhere:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")} | {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(work / "plugins"),
            SQL_ALCHEMY_CONN: url,
            "AIRFLOW__CORE__DAGS_FOLDER": str(work / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
            # no api-server: the task fails, and its run and its log stay, as after any served run
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{nowhere}/execution/",
        }
        migrated = airflow(["db", "migrate"], env)
        assert migrated.returncode == 0, migrated.stderr[-3000:]
        ran = airflow(["dags", "test", "nightly", "--use-executor"], env)
        assert list((home / "logs").glob("dag_id=nightly/run_id=*/task_id=one/attempt=1.log")), ran.stdout[-3000:]
        yield Previous(url, home / "logs")


def engine_for(url: str) -> Any:
    from sqlalchemy import create_engine

    return create_engine(url, isolation_level="AUTOCOMMIT")


def runs(url: str) -> set[tuple[str, str]]:
    from sqlalchemy import text

    engine = engine_for(url)
    try:
        with engine.connect() as conn:
            return {(str(d), str(r)) for d, r in conn.execute(text("SELECT dag_id, run_id FROM dag_run"))}
    finally:
        engine.dispose()


def on_server(url: str, query: str, **params: str) -> Any:
    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    engine = engine_for(make_url(url).set(database="postgres").render_as_string(hide_password=False))
    try:
        with engine.connect() as conn:
            result = conn.execute(text(query), params)
            return result.first() if result.returns_rows else None
    finally:
        engine.dispose()


def exists(url: str) -> bool:
    from sqlalchemy.engine import make_url

    name = str(make_url(url).database)
    return on_server(url, "SELECT 1 FROM pg_database WHERE datname = :name", name=name) is not None


@pytest.fixture
def legacy(previous: Previous, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A copy of the previous release's database under a scratch name standing for ``contract_platform_airflow``."""
    from sqlalchemy.engine import make_url

    name = f"contract_platform_legacy_{uuid.uuid4().hex[:8]}"
    url = make_url(previous.template).set(database=name).render_as_string(hide_password=False)
    template = make_url(previous.template).database
    on_server(url, f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    monkeypatch.setattr(metadata_db, "LEGACY_NAME", name)
    try:
        yield url
    finally:
        drop_database(url)


@pytest.fixture
def folders(tmp_path: Path) -> Iterator[list[Path]]:
    """Data folders; the database of each one's own is dropped afterwards, whoever made it."""
    made: list[Path] = []
    yield made
    for folder in made:
        drop_database(default_metadata_url(folder))


def folder(folders: list[Path], path: Path, logs: Path | None = None) -> Path:
    """A data folder at ``path``; with ``logs``, the previous release's served Airflow ran its tasks here."""
    (path / "airflow").mkdir(parents=True)
    if logs is not None:
        shutil.copytree(logs, path / "airflow" / "logs")
    folders.append(path)
    return path


def served(data: Path) -> Any:
    """What ``scripts/airflow-local`` chooses for ``data``, with neither database variable set."""
    with mock.patch.dict(os.environ, {"CONTRACT_PLATFORM_HOME": str(data)}):
        os.environ.pop(SQL_ALCHEMY_CONN, None)
        os.environ.pop(AIRFLOW_DB_URL_VARIABLE, None)
        return serve.use_metadata_database({"AIRFLOW_HOME": str(data / "airflow"), "CONTRACT_PLATFORM_HOME": str(data)})


def test_the_previous_database_holding_this_folder_s_runs_is_renamed_to_the_folder_s_with_every_run(
    previous: Previous, legacy: str, folders: list[Path], tmp_path: Path
) -> None:
    data = folder(folders, tmp_path / "checkout" / "data", previous.logs)
    before = runs(legacy)
    assert before  # the old served Airflow's run

    chosen = served(data)

    own = default_metadata_url(data)
    assert (chosen.url, chosen.created) == (own, False)
    assert not exists(legacy) and runs(own) == before  # renamed in place: every run kept, under the new name
    (note,) = on_server(
        own, "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = :n", n=own.rsplit("/", 1)[1]
    )
    assert note.startswith(metadata_db.RENAMED_MARK) and str(data.resolve()) in note
    assert chosen.notice is not None and own.rsplit("/", 1)[1] in chosen.notice

    again = served(data)  # a second start changes nothing

    assert (again.url, again.created, again.notice) == (own, False, None) and runs(own) == before


def test_runs_none_of_which_this_folder_logged_keep_their_old_name_and_the_notice_says_how_to_choose(
    legacy: str, folders: list[Path], tmp_path: Path
) -> None:
    data = folder(folders, tmp_path / "other" / "data")
    before = runs(legacy)

    chosen = metadata_database(data / "airflow", {}, data=data)

    own = default_metadata_url(data)
    assert (chosen.url, chosen.created) == (legacy, False)
    assert runs(legacy) == before and not exists(own)  # nothing renamed, nothing started empty
    assert chosen.notice is not None and own in chosen.notice and "RENAME TO" in chosen.notice


def test_a_previous_database_without_runs_is_left_alone_and_the_folder_gets_its_own(
    postgres_url: str, folders: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = folder(folders, tmp_path / "fresh" / "data")
    with scratch_database(postgres_url, "legacy_empty") as empty:
        monkeypatch.setattr(metadata_db, "LEGACY_NAME", empty.rsplit("/", 1)[1])

        chosen = metadata_database(data / "airflow", {}, data=data)

        assert (chosen.url, chosen.created) == (default_metadata_url(data), True)
        assert exists(empty) and chosen.notice is not None and empty.rsplit("/", 1)[1] in chosen.notice


def test_a_rename_refused_while_the_previous_airflow_is_connected_changes_nothing_and_says_how(
    previous: Previous, legacy: str, folders: list[Path], tmp_path: Path
) -> None:
    data = folder(folders, tmp_path / "checkout" / "data", previous.logs)
    own = default_metadata_url(data)
    still_serving = engine_for(legacy)
    try:
        with still_serving.connect():
            with pytest.raises(MetadataDatabaseNotAdopted) as refused:
                metadata_database(data / "airflow", {}, data=data)
            assert exists(legacy) and not exists(own)  # nothing renamed, nothing started empty
            message = str(refused.value)
            assert "1 session(s)" in message and f"{AIRFLOW_DB_URL_VARIABLE}={legacy}" in message
    finally:
        still_serving.dispose()

    assert metadata_database(data / "airflow", {}, data=data).url == own  # stopped: the next start renames it
    assert not exists(legacy)


def test_a_folder_made_after_another_took_the_previous_database_is_told_where_the_runs_went(
    previous: Previous, legacy: str, folders: list[Path], tmp_path: Path
) -> None:
    first = folder(folders, tmp_path / "first" / "data", previous.logs)
    second = folder(folders, tmp_path / "second" / "data")
    taken = metadata_database(first / "airflow", {}, data=first).url

    chosen = metadata_database(second / "airflow", {}, data=second)

    assert (chosen.url, chosen.created) == (default_metadata_url(second), True)
    assert chosen.notice is not None and f"{AIRFLOW_DB_URL_VARIABLE}={taken}" in chosen.notice
    assert metadata_database(second / "airflow", {}, data=second).notice is None  # told once, when it is made


def test_serve_stops_without_a_traceback_when_the_previous_database_cannot_be_renamed(
    previous: Previous, legacy: str, folders: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = folder(folders, tmp_path / "checkout" / "data", previous.logs)
    monkeypatch.chdir(tmp_path / "checkout")
    monkeypatch.setattr(serve, "ROOT", tmp_path / "checkout")
    still_serving = engine_for(legacy)
    try:
        with still_serving.connect(), mock.patch.dict(os.environ):
            for variable in (SQL_ALCHEMY_CONN, AIRFLOW_DB_URL_VARIABLE, "CONTRACT_PLATFORM_HOME", "AIRFLOW_HOME"):
                os.environ.pop(variable, None)
            with pytest.raises(SystemExit) as stopped, closed_port() as port:
                serve.main(["--port", str(port)])
    finally:
        still_serving.dispose()

    assert str(stopped.value.code).startswith("ERROR: the previous release's Airflow metadata DB")
    assert exists(legacy) and not exists(default_metadata_url(data))
