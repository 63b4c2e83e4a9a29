"""The platform's existence probes on a broker where nothing exists yet warn of nothing; other 404s still do.

A passive declare of a missing exchange or queue is answered by the broker closing the channel with 404, and
pika logs every such close as a warning (``Received remote Channel.Close (404) ...``). For the platform's
probes that close is the expected answer; a clean first run printed ten of them, from provisioning on
several connections at once. Each test runs in a fresh private virtual host.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pika.exceptions
import pika.spec
import pytest
from tests.support import broker, vhosts

from contract_platform.amqp import open_connection
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.inspection import exchange_exists, inspect_queue, passive_queue, probing
from contract_platform.amqp.types import BrokerConnection
from contract_platform.catalog.model import Catalog
from contract_platform.change import provision_topologies
from contract_platform.retirement.dead_letters import GONE, Probe
from contract_platform.store import SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CLOSE_WARNING = "Received remote Channel.Close"

vhost, connection = vhosts.vhost, vhosts.connection  # the fixtures: a private vhost, a connection to it


def channel_closes(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("pika") and CLOSE_WARNING in r.getMessage()]


def test_probing_what_does_not_exist_warns_of_nothing(
    connection: BrokerConnection, vhost: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        missing = (
            exchange_exists(connection, "billing.events"),
            passive_queue(connection, "accounting-service.billing.invoice-issued.v1"),
            inspect_queue(connection, "archive.billing.events", management=None).exists,
        )
        dead_letters = Probe(lambda _vhost: connection)  # the retirement audit's DLQ probe: one channel, kept open
        try:
            gone = [dead_letters.ready(vhost, name) for name in ("a.dlq", "b.dlq")]
        finally:
            dead_letters.close()

    assert missing == (False, None, False)
    assert gone == [GONE, GONE]
    assert channel_closes(caplog) == []


def test_provisioning_a_fresh_broker_on_several_connections_warns_of_nothing(
    catalog: Catalog, connection: BrokerConnection, vhost: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The contract_change DAG's topology step on a first run: every exchange and queue probed, then declared,
    by four workers at once."""
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as registry, caplog.at_level(logging.WARNING):
        summary = provision_topologies(
            catalog, connection, registry, connect=lambda: open_connection(broker.url_of(vhost)), workers=4
        )

    assert summary.problems == []
    assert any(result["created"] for result in summary.results.values())  # everything was missing
    assert channel_closes(caplog) == []


def test_a_404_that_answers_no_probe_still_warns(
    connection: BrokerConnection, vhost: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Another thread probing at the same moment, or another channel, does not hide this thread's 404."""
    probing_elsewhere, done = threading.Event(), threading.Event()

    def probe_held_open() -> None:
        other = open_connection(broker.url_of(vhost))
        try:
            with probing(other.channel()):
                probing_elsewhere.set()
                done.wait(timeout=60)
        finally:
            close_quietly(other)

    elsewhere = threading.Thread(target=probe_held_open)
    elsewhere.start()
    try:
        assert probing_elsewhere.wait(timeout=60)
        with caplog.at_level(logging.WARNING), pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
            connection.channel().queue_declare("nobody-probes-this", passive=True)  # not a platform probe
    finally:
        done.set()
        elsewhere.join(timeout=60)

    assert refused.value.reply_code == 404
    [warning] = channel_closes(caplog)
    assert "nobody-probes-this" in warning


def test_a_probe_s_channel_still_warns_of_anything_but_its_answer(
    connection: BrokerConnection, caplog: pytest.LogCaptureFixture
) -> None:
    """On the probing channel itself, a refusal other than 404/405 (here 406, a conflicting declaration) is a
    fault and warns; and pika's AMQP objects in a record, which raise from ``__eq__`` against anything else,
    are never compared (that once killed a connection)."""
    connection.channel().exchange_declare("conflicting", exchange_type="direct", auto_delete=True)
    frame = pika.spec.Channel.Close(404, "NOT_FOUND")
    channel = connection.channel()
    with caplog.at_level(logging.WARNING), probing(channel):
        logging.getLogger("pika.channel").warning("frame %s %s %s", frame, "closed", frame)
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
            channel.exchange_declare("conflicting", exchange_type="fanout", auto_delete=True)

    assert refused.value.reply_code == 406
    assert [r.args[1] for r in caplog.records if r.name == "pika.channel"][0] == "closed"
    [warning] = channel_closes(caplog)
    assert "406" in warning and "conflicting" in warning
