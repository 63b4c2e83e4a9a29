"""The end-of-run check finds the recorder queues and virtual hosts this run left on the shared broker, and only those.

``tests/support/broker_leaks.py`` runs at the end of every session; here its finding is driven directly
on the real broker, with another run's recorder queue made meanwhile beside this run's.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from tests.support import broker, broker_leaks

from contract_platform.activity.recorder import RecorderConfig, queue_arguments, recorder_queues
from contract_platform.amqp import open_connection
from contract_platform.amqp.connection import close_quietly

pytestmark = pytest.mark.integration


@pytest.fixture
def channel(broker_url: str) -> Iterator[object]:
    if not broker.management_answers():
        pytest.skip("the RabbitMQ management API is not answering on 15672")
    connection = open_connection(broker.url_of("/"))
    yield connection.channel()
    close_quietly(connection)


def declare_recorder_queues(channel: object, queue: str) -> None:
    """A recorder's queue and companions, as ``contractctl record-activity --queue`` declares them."""
    main, *companions = recorder_queues(queue)
    arguments = queue_arguments(RecorderConfig(queue=queue), uuid.uuid4().hex)
    channel.queue_declare(main, durable=True, arguments=arguments)  # type: ignore[attr-defined]
    for name in companions:
        channel.queue_declare(name, durable=True, arguments={"x-max-length": 1})  # type: ignore[attr-defined]


def test_a_recorder_queue_this_run_left_is_listed_and_removed_and_another_runs_is_not(channel: object) -> None:
    before = broker_leaks.noted()
    mine = broker.prefix()  # handed out to a test of this run
    theirs = f"t-{uuid.uuid4().hex[:8]}."  # another developer's run, on the same broker at the same time
    names = [*recorder_queues(f"{mine}activity"), *recorder_queues(f"{theirs}activity"), f"{mine}plain"]
    try:
        declare_recorder_queues(channel, f"{mine}activity")
        declare_recorder_queues(channel, f"{theirs}activity")
        channel.queue_declare(f"{mine}plain")  # type: ignore[attr-defined]  # no recorder's: not this check's
        found = broker_leaks.leftovers(before, [mine], [])
        assert found == [f"recorder queue {name}" for name in sorted(recorder_queues(f"{mine}activity"))]
        broker_leaks.remove(found)
        assert broker_leaks.leftovers(before, [mine], []) == []
        assert broker.queue_listed("/", f"{theirs}activity")  # left alone
    finally:
        broker.delete_names(broker.url_of("/"), queues=names)


def test_a_virtual_host_this_run_left_is_listed_and_removed(channel: object) -> None:
    before = broker_leaks.noted()
    name = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_vhost(name)
    try:
        assert broker_leaks.leftovers(before, [], [name]) == [f"virtual host {name}"]
        broker_leaks.remove([f"virtual host {name}"])
        assert broker_leaks.leftovers(before, [], [name]) == []
    finally:
        broker.delete_vhost(name)
