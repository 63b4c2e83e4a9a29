"""RabbitMQ hook: an Airflow connection (``conn_type`` amqp) -> an open pika BlockingConnection.

The connection's fields map to the URL as ``amqp://<login>:<password>@<host>:<port>/<schema>``;
``schema`` is the virtual host (empty means ``/``). Extra ``{"ssl": true}`` selects ``amqps``.
Without an Airflow connection the hook uses ``CONTRACT_RABBITMQ_URL`` and says so; with neither, the
task fails at once, without retry, naming the connection and how to set it (a worker must not guess
a broker: the local default would hide a deployment that forgot its connection).
"""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

from contract_platform.amqp.connection import amqp_url, close_quietly, open_connection
from contract_platform.errors import BrokerError
from contract_platform.settings import rabbitmq_url, redact_url
from contract_platform_airflow.provider import RABBITMQ_FIELD_BEHAVIOUR

if TYPE_CHECKING:
    from pika import BlockingConnection

__all__ = ["RabbitMQHook"]


class RabbitMQHook(BaseHook):
    """Connects to RabbitMQ with the ``rabbitmq_default`` connection (or the one named)."""

    conn_name_attr = "rabbitmq_conn_id"
    default_conn_name = "rabbitmq_default"
    conn_type = "amqp"
    hook_name = "RabbitMQ"

    def __init__(self, rabbitmq_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rabbitmq_conn_id = rabbitmq_conn_id

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return copy.deepcopy(RABBITMQ_FIELD_BEHAVIOUR)  # the one form, also in the provider metadata

    def get_url(self) -> str:
        """The AMQP URL of the connection, with credentials: pass it on, never log it (use redact_url)."""
        try:
            conn = self.get_connection(self.rabbitmq_conn_id)
        except AirflowNotFoundException:
            if not os.environ.get("CONTRACT_RABBITMQ_URL"):
                raise AirflowFailException(
                    f"RabbitMQ connection {self.rabbitmq_conn_id!r} is not defined and CONTRACT_RABBITMQ_URL is not "
                    f"set: set AIRFLOW_CONN_{self.rabbitmq_conn_id.upper()}='amqp://USER:PASSWORD@HOST:5672/%2F' for "
                    "every Airflow component (bash scripts/airflow-local does), or add it under Admin > Connections"
                ) from None
            url = rabbitmq_url()
            self.log.info(
                "Airflow connection %r is not defined; using %s (CONTRACT_RABBITMQ_URL)",
                self.rabbitmq_conn_id,
                redact_url(url),
            )
            return url
        scheme = "amqps" if conn.extra_dejson.get("ssl") else "amqp"
        return amqp_url(conn.host, conn.port, conn.login, conn.password, conn.schema, scheme=scheme)

    def get_conn(self) -> BlockingConnection:
        """An open ``pika.BlockingConnection``; the caller closes it."""
        return open_connection(self.get_url())

    def test_connection(self) -> tuple[bool, str]:
        try:
            connection = self.get_conn()
        except BrokerError as exc:
            return False, str(exc)
        close_quietly(connection)
        return True, f"Connected to {redact_url(self.get_url())}"
