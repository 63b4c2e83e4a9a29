"""The served Airflow's metadata DB: a PostgreSQL database of its own, created when missing; SQLite only as a
fallback, with a warning that says why and how to fix it."""

from __future__ import annotations

import os
from unittest import mock

import pytest
from tests.support.databases import drop_database, scratch_database

from contract_platform_airflow import serve
from contract_platform_airflow.settings import (
    AIRFLOW_DB_URL_VARIABLE,
    DEFAULT_AIRFLOW_DB_SERVER,
    SQL_ALCHEMY_CONN,
    default_metadata_url,
    metadata_database,
)


def database_exists(url: str) -> bool:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    target = make_url(url)
    engine = create_engine(target.set(database="postgres"))
    try:
        with engine.connect() as conn:
            query = text("SELECT 1 FROM pg_database WHERE datname = :name")
            return conn.execute(query, {"name": target.database}).first() is not None
    finally:
        engine.dispose()


def test_the_default_is_a_database_of_the_data_folder_s_own_on_the_local_postgresql(tmp_path):
    main, scratch = tmp_path / "main" / "data", tmp_path / "estate" / "data"
    url = default_metadata_url(main)

    assert url.startswith(f"{DEFAULT_AIRFLOW_DB_SERVER}/contract_platform_airflow_main_data_")
    assert url == default_metadata_url(tmp_path / "main" / "." / "data")  # the folder, however it is written
    assert default_metadata_url(scratch) != url  # another data folder, another database
    try:
        assert metadata_database(main / "airflow", {}, data=main).url == url  # created when missing
    finally:
        drop_database(url)


@pytest.mark.parametrize("folder", ["a" * 200, "Dätä Földer; DROP DATABASE x", "-"])
def test_a_data_folder_s_database_name_is_always_one_postgresql_accepts(tmp_path, folder):
    from contract_platform_airflow.metadata_db import _safe_name

    name = default_metadata_url(tmp_path / folder / "data").rsplit("/", 1)[1]
    assert len(name) <= 63 and _safe_name(name) == name


def test_a_missing_database_is_created_once_and_every_component_gets_it(postgres_url, tmp_path):
    # use_metadata_database sets the process environment for the components it starts: restore all of it,
    # or later tests in this session inherit a connection to the database dropped below.
    with scratch_database(postgres_url, "airflow_t", create=False) as url, mock.patch.dict(os.environ):
        assert not database_exists(url)
        os.environ[AIRFLOW_DB_URL_VARIABLE] = url
        os.environ.pop(SQL_ALCHEMY_CONN, None)
        env = {"AIRFLOW_HOME": str(tmp_path)}

        first = serve.use_metadata_database(env)

        assert (first.url, first.created, first.warning) == (url, True, None)
        assert env[SQL_ALCHEMY_CONN] == url and serve.os.environ[SQL_ALCHEMY_CONN] == url  # inherited by all
        assert database_exists(url)
        assert metadata_database(tmp_path, {AIRFLOW_DB_URL_VARIABLE: url}).created is False


def test_sqlite_only_when_postgresql_does_not_answer_and_the_warning_says_how_to_fix(tmp_path, closed_port):
    url = f"postgresql+psycopg2://airflow:s3cret@127.0.0.1:{closed_port}/contract_platform_airflow"

    chosen = metadata_database(tmp_path, {AIRFLOW_DB_URL_VARIABLE: url}, timeout=2)

    assert chosen.url == f"sqlite:///{tmp_path.resolve() / 'airflow.db'}"
    assert chosen.warning is not None
    assert "did not answer" in chosen.warning and "HTTP 500" in chosen.warning
    assert AIRFLOW_DB_URL_VARIABLE in chosen.warning and "s3cret" not in chosen.warning


def test_a_connection_set_by_the_deployment_wins(tmp_path):
    chosen = metadata_database(tmp_path, {SQL_ALCHEMY_CONN: "postgresql://airflow@db:5432/airflow"})

    assert (chosen.url, chosen.warning) == ("postgresql://airflow@db:5432/airflow", None)


def test_a_database_name_is_never_put_into_sql_unchecked(tmp_path):
    url = 'postgresql+psycopg2://postgres@127.0.0.1:5432/x"; DROP DATABASE postgres; --'

    chosen = metadata_database(tmp_path, {AIRFLOW_DB_URL_VARIABLE: url})

    assert chosen.url.startswith("sqlite:///") and "not a database name" in (chosen.warning or "")


@pytest.mark.parametrize("variable", [SQL_ALCHEMY_CONN, AIRFLOW_DB_URL_VARIABLE])
def test_sqlite_asked_for_explicitly_is_used_with_the_warning(tmp_path, variable):
    chosen = metadata_database(tmp_path, {variable: f"sqlite:///{tmp_path}/a.db"})

    assert chosen.url == f"sqlite:///{tmp_path}/a.db" and "HTTP 500" in (chosen.warning or "")


def test_the_compose_stack_keeps_airflow_metadata_in_its_own_postgresql():
    from pathlib import Path

    import yaml

    compose = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text("utf-8"))
    url = str(compose["x-airflow-env"][SQL_ALCHEMY_CONN])

    assert url.startswith("postgresql") and "@postgres:5432/airflow" in url
    assert compose["services"]["postgres"]["environment"]["POSTGRES_DB"] == "airflow"
