"""The distribution as an Airflow provider: what ``apache_airflow_provider`` returns.

Airflow's ProvidersManager reads this through the entry point
``[project.entry-points.apache_airflow_provider] provider_info`` (pyproject.toml) and so lists the
platform's connection types in the UI's connection form, with the hooks that own them:

    amqp   RabbitMQ (``hooks.rabbitmq.RabbitMQHook``, ``rabbitmq_default``)

The registry hook (``hooks.registry.RegistryHook``, ``contract_registry_default``) is not listed:
its connection type is Airflow's own ``generic``, which a provider must not claim (the connection's
URI scheme, ``postgresql://`` or ``sqlite://``, says which store it is).

Nothing here imports Airflow or a hook: Airflow's UI reads the connection form (labels, placeholders)
from this metadata, without importing hooks.
"""

from __future__ import annotations

import copy
from typing import Any

from contract_platform.release import DISTRIBUTION, installed_version

__all__ = ["CONNECTION_TYPES", "PACKAGE_NAME", "RABBITMQ_FIELD_BEHAVIOUR", "get_provider_info"]

PACKAGE_NAME = DISTRIBUTION

# The RabbitMQ connection form: RabbitMQHook.get_ui_field_behaviour returns it too.
RABBITMQ_FIELD_BEHAVIOUR: dict[str, Any] = {
    "hidden_fields": [],
    "relabeling": {"schema": "Virtual host", "login": "User"},
    "placeholders": {"host": "127.0.0.1", "port": "5672", "schema": "/", "extra": '{"ssl": false}'},
}

CONNECTION_TYPES: tuple[dict[str, Any], ...] = (
    {
        "connection-type": "amqp",
        "hook-class-name": "contract_platform_airflow.hooks.rabbitmq.RabbitMQHook",
        "hook-name": "RabbitMQ",
        "ui-field-behaviour": {key.replace("_", "-"): value for key, value in RABBITMQ_FIELD_BEHAVIOUR.items()},
    },
)


def _versions() -> list[str]:
    installed = installed_version()
    return [installed] if installed else []  # none: imported from a source tree that was never installed


def get_provider_info() -> dict[str, Any]:
    """Provider metadata in the form of Airflow's ``provider_info.schema.json``."""
    return {
        "package-name": PACKAGE_NAME,
        "name": "Contract Lifecycle Platform",
        "description": "Governs RabbitMQ message contracts from proposed to retired: the RabbitMQ and "
        "contract registry hooks and the Contracts page.",
        "versions": _versions(),
        "connection-types": copy.deepcopy(list(CONNECTION_TYPES)),
    }
