"""Airflow hooks, one module per kind of connection (as in Airflow providers, nothing is imported here).

- ``rabbitmq.RabbitMQHook``: ``rabbitmq_default`` (conn_type amqp) -> an open pika BlockingConnection.
- ``registry.RegistryHook``: ``contract_registry_default`` -> the registry store.
"""
