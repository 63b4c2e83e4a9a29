"""The virtual host of an AMQP URL, read one way by the management client, the readers check, the Airflow
connection and the AsyncAPI export (RabbitMQ URI specification: the path's one segment, percent-decoded)."""

from __future__ import annotations

import pytest

from contract_platform.amqp.urls import vhost_of


@pytest.mark.parametrize(
    ("url", "vhost"),
    [
        ("amqp://guest:guest@127.0.0.1:5672/%2F", "/"),
        ("amqp://127.0.0.1", "/"),  # no path: the default virtual host
        ("amqp://127.0.0.1/", "/"),
        ("amqps://u:p@broker.example:5671/billing", "billing"),
        ("amqp://h/t-e2e%2Fnested", "t-e2e/nested"),
        ("amqp://h/caf%C3%A9", "café"),
    ],
)
def test_the_virtual_host_is_the_decoded_path_segment(url: str, vhost: str) -> None:
    assert vhost_of(url) == vhost


def test_every_reader_of_a_url_agrees() -> None:
    import json

    from contract_platform.amqp.http import ManagementClient
    from contract_platform_airflow.settings import rabbitmq_connection

    url = "amqp://u:p@h:5672/billing%2Fv2"
    assert ManagementClient.from_amqp_url(url).vhost == vhost_of(url) == "billing/v2"
    assert json.loads(rabbitmq_connection(url))["schema"] == "billing/v2"
