"""The installed distribution is an Airflow provider: the UI's connection form offers RabbitMQ (amqp).

Airflow finds providers through the ``apache_airflow_provider`` entry point of installed
distributions (``pip install -e .`` writes it); no metadata DB is needed to list them.
"""

from __future__ import annotations

from importlib.metadata import entry_points, version

import pytest

pytest.importorskip("airflow.providers_manager")

from airflow.providers_manager import ProvidersManager

from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook
from contract_platform_airflow.hooks.registry import RegistryHook
from contract_platform_airflow.provider import PACKAGE_NAME, get_provider_info


def test_the_entry_point_is_installed_and_names_get_provider_info():
    [entry] = [e for e in entry_points(group="apache_airflow_provider") if e.dist and e.dist.name == PACKAGE_NAME]
    assert entry.load() is get_provider_info


def test_the_ui_connection_form_offers_rabbitmq_with_its_labels():
    """What the Airflow UI's "add connection" form lists (the API it calls, no hook imported)."""
    from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService

    [amqp] = [meta for meta in HookMetaService.hook_meta_data() if meta.connection_type == RabbitMQHook.conn_type]
    assert (amqp.hook_name, amqp.hook_class_name) == (
        "RabbitMQ",
        "contract_platform_airflow.hooks.rabbitmq.RabbitMQHook",
    )
    assert amqp.standard_fields is not None
    assert (amqp.standard_fields.url_schema.title, amqp.standard_fields.login.title) == ("Virtual host", "User")
    assert amqp.standard_fields.host.placeholder == "127.0.0.1"


def test_providers_manager_lists_the_rabbitmq_connection_type_with_its_hook():
    manager = ProvidersManager()
    assert PACKAGE_NAME in manager.providers
    assert manager.providers[PACKAGE_NAME].version == version(PACKAGE_NAME)
    hook = manager.hooks[RabbitMQHook.conn_type]
    assert hook is not None
    assert (hook.hook_class_name, hook.package_name, hook.hook_name, hook.connection_id_attribute_name) == (
        "contract_platform_airflow.hooks.rabbitmq.RabbitMQHook",
        PACKAGE_NAME,
        RabbitMQHook.hook_name,
        RabbitMQHook.conn_name_attr,
    )


def test_the_form_in_the_metadata_is_the_hooks_own():
    [amqp] = get_provider_info()["connection-types"]
    behaviour = {key.replace("-", "_"): value for key, value in amqp["ui-field-behaviour"].items()}
    assert behaviour == RabbitMQHook.get_ui_field_behaviour()
    assert (amqp["connection-type"], amqp["hook-name"]) == (RabbitMQHook.conn_type, RabbitMQHook.hook_name)


def test_airflow_keeps_its_own_generic_connection_type():
    """The registry hook's conn_type is Airflow's built-in ``generic``: the provider leaves it to Airflow."""
    assert RegistryHook.conn_type == "generic"
    hook = ProvidersManager().hooks["generic"]
    assert hook is not None and hook.package_name is None  # still Airflow's, not claimed by the platform
