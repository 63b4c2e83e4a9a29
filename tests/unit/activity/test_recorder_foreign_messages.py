"""What reaches the recorder's queue that is not an event of the broker's is neither stored nor taken as coverage
(events the store refuses, with the real store and broker: tests/integration/retirement/test_recorder_refusals_broker.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from contract_platform.activity.recorder import ActivityRecorder, _Segment

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


class Store:
    """A store the test never reaches: nothing here is an event."""

    url = "memory://"


def segment(store: Store) -> _Segment:
    recorder = ActivityRecorder("amqp://guest:guest@127.0.0.1:5672/%2F", store)  # type: ignore[arg-type]
    return _Segment(recorder, connection=None, broker="test")


def test_a_message_some_client_published_into_the_recorders_queue_is_neither_an_event_nor_coverage() -> None:
    from pika import BasicProperties
    from pika.spec import Basic

    part = segment(Store())
    forged = [
        BasicProperties(headers={"x-contract-platform-marker": f"{part.id}:guessed-nonce:{T0.isoformat()}"}),
        BasicProperties(headers={"queue": "q", "vhost": "/"}),  # an event's headers, not from the event exchange
        BasicProperties(headers=None),
    ]
    for tag, properties in enumerate(forged, 1):
        part._handle(Basic.Deliver(exchange="", routing_key="consumer.deleted", delivery_tag=tag), properties)
    assert part.report.ignored == 3 and part.batch == [] and part.report.covered_until is None
