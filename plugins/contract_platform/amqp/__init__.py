"""RabbitMQ for the platform (pika): topology, publishing, queue inspection.

::

    open_connection(url)                       -> pika BlockingConnection (errors mapped once, in connection.py)
    plan_topology(contract)                    -> TopologyPlan  (pure)
    provision(connection, plan)                -> ProvisionReport (idempotent; TopologyConflict, never a redeclare)
    remove_topology(connection, plan, exchanges_in_use=...) -> RemovalReport
    Publisher(connection_or_url, validator).publish(envelope) -> PublishResult
    inspect_queue(connection, name)            -> QueueState
"""

from contract_platform.amqp.archiver import (
    Archiver,
    ArchiverConfig,
    ArchiveRunReport,
    repair_partial_files,
    to_record,
)
from contract_platform.amqp.bridge import Bridge, BridgeConfig, BridgeReport, tap_queue_name
from contract_platform.amqp.connection import amqp_url, broker_errors, describe_broker, open_connection
from contract_platform.amqp.inspection import ManagementClient, QueueState, inspect_queue
from contract_platform.amqp.publisher import Publisher, PublishResult, basic_properties, encode_body
from contract_platform.amqp.topology import (
    Binding,
    Exchange,
    Outcome,
    ProvisionReport,
    Queue,
    RemovalReport,
    Role,
    Step,
    TopologyPlan,
    archive_queue_name,
    dlq_name,
    dlx_name,
    parking_lot_name,
    plan_topology,
    provision,
    remove_topology,
    retry_queue_name,
)
from contract_platform.amqp.translation import MigrationRoute, ParkReason, resolve_route

__all__ = [
    "ArchiveRunReport",
    "Archiver",
    "ArchiverConfig",
    "Binding",
    "Bridge",
    "BridgeConfig",
    "BridgeReport",
    "Exchange",
    "ManagementClient",
    "MigrationRoute",
    "Outcome",
    "ParkReason",
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
    "repair_partial_files",
    "resolve_route",
    "retry_queue_name",
    "tap_queue_name",
    "to_record",
]
