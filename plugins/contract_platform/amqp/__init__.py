"""RabbitMQ transport for the platform (pika): connection, topology, publishing, queue inspection.

::

    open_connection(url)                       -> pika BlockingConnection (errors mapped once, in connection.py)
    plan_topology(contract)                    -> TopologyPlan  (pure: plan.py imports no pika)
    provision(connection, plan)                -> ProvisionReport (idempotent; TopologyConflict, never a redeclare)
    remove_topology(connection, plan, exchanges_in_use=...) -> RemovalReport
    Publisher(connection_or_url, validator).publish(envelope) -> PublishResult
    inspect_queue(connection, name)            -> QueueState
    peek.peek(connection, queue, visit)        -> PeekOutcome (non-destructive read; the function shares
                                                  its module's name, so it is imported from the module)

Only transport lives here; the services built on it are their own packages: the topic archiver
(``contract_platform.archiver``) and the v<N-1> -> v<N> bridge (``contract_platform.bridge``).
The names below are loaded on first use (PEP 562), so importing one module of this package, say
``contract_platform.amqp.connection``, loads only what that module needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contract_platform.lazy import lazy_names

if TYPE_CHECKING:
    from contract_platform.amqp.connection import amqp_url, broker_errors, describe_broker, open_connection
    from contract_platform.amqp.http import ManagementClient
    from contract_platform.amqp.inspection import QueueState, inspect_queue
    from contract_platform.amqp.peek import PeekOutcome
    from contract_platform.amqp.plan import (
        Binding,
        Exchange,
        Queue,
        Role,
        TopologyPlan,
        archive_queue_name,
        dlq_name,
        dlx_name,
        parking_lot_name,
        plan_topology,
        retry_queue_name,
    )
    from contract_platform.amqp.publisher import Publisher, PublishResult, basic_properties, encode_body
    from contract_platform.amqp.topology import (
        Outcome,
        ProvisionReport,
        RemovalReport,
        Step,
        provision,
        remove_topology,
    )

_MODULES = {
    "connection": ("amqp_url", "broker_errors", "describe_broker", "open_connection"),
    "http": ("ManagementClient",),
    "inspection": ("QueueState", "inspect_queue"),
    "peek": ("PeekOutcome",),
    "plan": (
        "Binding",
        "Exchange",
        "Queue",
        "Role",
        "TopologyPlan",
        "archive_queue_name",
        "dlq_name",
        "dlx_name",
        "parking_lot_name",
        "plan_topology",
        "retry_queue_name",
    ),
    "publisher": ("PublishResult", "Publisher", "basic_properties", "encode_body"),
    "topology": ("Outcome", "ProvisionReport", "RemovalReport", "Step", "provision", "remove_topology"),
}

__all__ = [
    "Binding",
    "Exchange",
    "ManagementClient",
    "Outcome",
    "PeekOutcome",
    "ProvisionReport",
    "PublishResult",
    "Publisher",
    "Queue",
    "QueueState",
    "RemovalReport",
    "Role",
    "Step",
    "TopologyPlan",
    "amqp_url",
    "archive_queue_name",
    "basic_properties",
    "broker_errors",
    "describe_broker",
    "dlq_name",
    "dlx_name",
    "encode_body",
    "inspect_queue",
    "open_connection",
    "parking_lot_name",
    "plan_topology",
    "provision",
    "remove_topology",
    "retry_queue_name",
]


__getattr__, __dir__ = lazy_names(__name__, globals(), _MODULES)
