"""Contracts at a service's boundaries: the library a service team adds to its own code (docs/service-client.md).

pika only, no framework::

    bundle = load_bundle("contracts.bundle.json")          # contractctl export bundle --service NAME --out ...

    with GuardedPublisher(bundle, url) as publisher:      # validate fail-fast, stamp, confirms in flight
        publisher.publish(envelope)

    consumer = GuardedConsumer(bundle, url, queues=[...])  # header peek, validate, migrate on read, dead-letter
    consumer.on("billing.invoice-issued.v2", handler)      # handler(message); raise Reject(reason) to refuse
    consumer.run()

    reporter = EvidenceReporter([consumer.counters], registry_sink(registry, bundle)).start()   # optional

    report = run_consumer_kit(bundle, dispatcher)          # the consumer test kit (client.testkit)

What each part decides is its module's docstring: ``bundle`` (the file), ``guard`` (the order of the checks and
the reason codes), ``tolerance`` (unknown enum values, added fields), ``publisher``, ``consumer`` (outcomes and
dead-letter headers), ``runtime`` (counts and evidence), ``testkit``.
"""

from contract_platform.client.bundle import Bundle, load_bundle
from contract_platform.client.consumer import (
    Dispatcher,
    GuardedConsumer,
    Message,
    Reject,
    StopReason,
    reject_headers,
)
from contract_platform.client.guard import Guard, Rejection, RejectReason
from contract_platform.client.publisher import GuardedPublisher, PublishResult
from contract_platform.client.runtime import EvidenceReporter, RuntimeCounters, registry_sink
from contract_platform.client.testkit import KitReport, run_consumer_kit
from contract_platform.errors import BundleError, ContractViolation

__all__ = [
    "Bundle",
    "BundleError",
    "ContractViolation",
    "Dispatcher",
    "EvidenceReporter",
    "Guard",
    "GuardedConsumer",
    "GuardedPublisher",
    "KitReport",
    "Message",
    "PublishResult",
    "Reject",
    "RejectReason",
    "Rejection",
    "RuntimeCounters",
    "StopReason",
    "load_bundle",
    "registry_sink",
    "reject_headers",
    "run_consumer_kit",
]
