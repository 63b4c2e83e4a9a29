"""The Contracts page's "Consumers per version" chart is drawn from the reader sessions the broker activity
recorder stored: services that read a version between two audits show, where a count sampled at audit time
showed zero all along."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.support.ui_seed import record_reader_sessions

pytestmark = pytest.mark.airflow

V1, V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
NOW = datetime.now(UTC).replace(microsecond=0)


def _migration_readers(registry: Any, catalog: Any) -> None:
    """A main job's hour: v1's two consumers read for twenty minutes, then v2's two; no consumer at any audit."""
    for queue in (f"accounting-service.{V1}", f"accounting-service.{V2}"):  # an audit's samples: nobody there
        registry.record_observation(V1 if V1 in queue else V2, queue, consumers=0, ready=0, unacked=0, source="amqp")
    start = NOW - timedelta(hours=1)
    record_reader_sessions(
        registry,
        [
            (f"accounting-service.{V1}", "accounting", start, start + timedelta(minutes=20)),
            (f"notification-service.{V1}", "notification", start + timedelta(minutes=1), start + timedelta(minutes=20)),
            (f"accounting-service.{V2}", "accounting", start + timedelta(minutes=30), start + timedelta(minutes=50)),
            (
                f"notification-service.{V2}",
                "notification",
                start + timedelta(minutes=30),
                start + timedelta(minutes=50),
            ),
        ],
    )


def _dots(page: str) -> dict[str, list[str]]:
    """The consumers chart's dot titles per series (``<name> <date> <time> UTC: <count>``)."""
    figure = page.split("<figcaption>Consumers per version</figcaption>", 1)[1].split("</figure>", 1)[0]
    found: dict[str, list[str]] = {}
    for title in re.findall(r"<title>(.*?)</title>", figure):
        name, _, value = title.partition(" ")
        found.setdefault(name, []).append(value.rsplit(": ", 1)[1])
    return found


def test_readers_between_audits_are_drawn_per_version(contracts_app) -> None:
    client, auth = contracts_app(_migration_readers)

    detail = client.get(f"/contracts/api/contracts/{V1}", headers=auth).json()
    page = client.get(f"/contracts/c/{V1}", headers=auth).text

    series = {s["name"]: [p["value"] for p in s["points"]] for s in detail["consumersOverTime"]}
    assert series == {V1: [1, 1, 2, 2, 0, 0], V2: [0, 0, 2, 2, 0, 0]}
    assert _dots(page) == {name: [f"{v:g}" for v in values] for name, values in series.items()}
    first = datetime.fromisoformat(detail["consumersOverTime"][0]["points"][0]["at"])
    assert first == NOW - timedelta(hours=1)  # the chart starts where the first reader attached, not 30 days back


def test_with_nothing_recorded_the_chart_says_so_rather_than_drawing_zero(contracts_app) -> None:
    client, auth = contracts_app(lambda registry, catalog: None)

    page = client.get(f"/contracts/c/{V1}", headers=auth).text

    figure = page.split("<figcaption>Consumers per version</figcaption>", 1)[1].split("</figure>", 1)[0]
    assert "No data recorded yet." in figure and "<polyline" not in figure
