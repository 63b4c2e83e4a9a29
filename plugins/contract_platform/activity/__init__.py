"""Broker activity: who read which queue, continuously (docs/retirement-audit.md#continuous-reader-evidence).

``events`` reads RabbitMQ's event exchange defensively; ``recorder`` is the long-running service that
stores reader sessions, queue and binding changes and its own coverage in the registry store.
"""
