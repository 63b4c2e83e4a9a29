"""RabbitMQHook: an Airflow connection (from an AIRFLOW_CONN_* variable, no metadata DB) -> AMQP URL."""

from __future__ import annotations

import json
import logging

import pytest

pytest.importorskip("airflow.sdk")

from contract_platform_airflow.hooks import rabbitmq as hook_module
from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook


def test_hook_identity() -> None:
    assert (RabbitMQHook.conn_name_attr, RabbitMQHook.default_conn_name) == ("rabbitmq_conn_id", "rabbitmq_default")
    assert (RabbitMQHook.conn_type, RabbitMQHook.hook_name) == ("amqp", "RabbitMQ")
    assert RabbitMQHook().rabbitmq_conn_id == "rabbitmq_default"


def test_url_from_the_default_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_RABBITMQ_DEFAULT", "amqp://u:p@h:5673/vh")

    assert RabbitMQHook().get_url() == "amqp://u:p@h:5673/vh"


def test_root_vhost_and_special_characters_are_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = {"conn_type": "amqp", "host": "rabbit", "port": 5672, "login": "svc", "password": "p@ss word", "schema": "/"}
    monkeypatch.setenv("AIRFLOW_CONN_BILLING_RABBIT", json.dumps(conn))

    assert RabbitMQHook("billing_rabbit").get_url() == "amqp://svc:p%40ss%20word@rabbit:5672/%2F"


def test_missing_connection_falls_back_to_settings_and_logs_without_password(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RABBITMQ_DEFAULT", raising=False)
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", "amqp://guest:top-secret-pw@rabbit:5672/%2F")
    hook = RabbitMQHook()

    with caplog.at_level(logging.INFO):
        url = hook.get_url()

    assert url == "amqp://guest:top-secret-pw@rabbit:5672/%2F"
    captured = capsys.readouterr()
    logged = caplog.text + captured.out + captured.err  # Airflow's structlog may print instead of propagating
    assert "is not defined; using amqp://guest:***@rabbit:5672/%2F" in logged
    assert "top-secret-pw" not in logged


def test_get_conn_opens_a_connection_to_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_RABBITMQ_DEFAULT", "amqp://u:p@h:5673/vh")
    opened: list[str] = []
    monkeypatch.setattr(hook_module, "open_connection", lambda url: opened.append(url) or "connection")

    assert RabbitMQHook().get_conn() == "connection"
    assert opened == ["amqp://u:p@h:5673/vh"]
