"""The contract page draws the latest retirement audit's ``readers`` check as a timeline over its window.

Reader sessions as RabbitMQ's event exchange announces consumers (consumer.created / consumer.deleted),
coverage gaps of the broker activity recorder, judged by the audit's own ``check_readers``. Queue and
connection names are whatever the broker's clients chose (AMQP 0-9-1 shortstr: any octets), so the
page must show them as text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.support.pages import page_section
from tests.support.ui_seed import ReaderSeed, record_readers_audit

pytestmark = pytest.mark.airflow

REPO = Path(__file__).resolve().parents[2]
V1 = "billing.invoice-issued.v1"
NOW = datetime.now(UTC).replace(microsecond=0)
QUEUE = "accounting-service.billing.invoice-issued.v1"
HOSTILE_QUEUE = 'legacy"tap\n<img src=x onerror=alert(2)>'
SCRIPT = "<script>alert(1)</script>"
GAP_REASON = "the broker restarted (node rabbit@mq-1 went down)"

Seeder = Callable[[Any, Any], None]


def _readers_seed(registry: Any, contract: Any) -> None:
    record_readers_audit(
        registry,
        contract,
        NOW,
        queues=(QUEUE, HOSTILE_QUEUE),
        readers=(
            ReaderSeed(QUEUE, SCRIPT, NOW - timedelta(days=3), NOW - timedelta(days=3) + timedelta(hours=2)),
            ReaderSeed(HOSTILE_QUEUE, "nightly-batch\nuser: admin", None, NOW - timedelta(days=5), user=None),
        ),
        gaps=((NOW - timedelta(days=2), NOW - timedelta(days=1, hours=12), GAP_REASON),),
    )


def _audit_failing_one_check(
    registry: Any, contract: Any, check: str, verdict: str, blocker: str, figures: dict[str, Any]
) -> None:
    """A retirement audit of v1 whose one check ``check`` did not pass, with ``blocker`` and ``figures``."""
    found = {"name": check, "verdict": verdict, "blocker": blocker, "clears_at": None, "figures": figures}
    registry.add_evidence(
        V1,
        contract_version=contract.version,
        kind="retirement_audit",
        verdict=verdict,
        figures={"verdict": verdict, "failed_checks": [check], "checks": {check: found}},
    )


def _old_seed(registry: Any, contract: Any) -> None:
    blocker = "1 consumer on accounting-service.billing.invoice-issued.v1 at the audit"
    _audit_failing_one_check(registry, contract, "consumers_over_time", "fail", blocker, {"consumers": 1})


def _no_management_seed(registry: Any, contract: Any) -> None:
    blocker = "the management API is required to see readers: set CONTRACT_RABBITMQ_MANAGEMENT_URL"
    _audit_failing_one_check(registry, contract, "readers", "unknown", blocker, {"queues": [QUEUE]})


@pytest.fixture
def serve(contracts_app: Any) -> Callable[[Seeder], tuple[Any, dict[str, str]]]:
    """``serve(seed)``: the contracts app over a store holding v1 deprecated and what ``seed`` records."""
    return lambda seed: contracts_app(lambda r, catalog: seed(r, catalog.contracts[V1]), statuses={V1: "deprecated"})


def _rects(section: str, css: str) -> list[tuple[float, float, str]]:
    """(x, width, tooltip) of every ``<rect class="css">`` with a ``<title>``."""
    found = re.findall(
        rf'<rect class="{css}" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"[^>]*><title>(.*?)</title>', section
    )
    return [(float(x), float(w), title) for x, w, title in found]


def test_reader_sessions_and_gaps_are_drawn_on_the_window_with_names_shown_as_text(serve) -> None:
    client, auth = serve(_readers_seed)
    page = client.get(f"/contracts/c/{V1}", headers=auth)
    assert page.status_code == 200, page.text
    assert SCRIPT not in page.text and "<img src=x" not in page.text
    section = page_section(page.text, 'id="readers"')
    assert '<svg class="chart timeline"' in section
    assert "Readers check" in section and ">fail<" in section

    plot = re.search(r'<rect class="plot" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', section)
    assert plot is not None
    left, right = float(plot[1]), float(plot[1]) + float(plot[2])
    sessions = [bar for bar in _rects(section, "bar") if "read by" in bar[2]]
    assert len(sessions) == 2
    by_name = {title.split(" read by ", 1)[1].split(" ", 1)[0]: (x, w, title) for x, w, title in sessions}
    script_bar = by_name["&lt;script&gt;alert(1)&lt;/script&gt;"]
    assert "from 10.1.2.3 as ledger" in script_bar[2] and QUEUE in script_bar[2]
    # two hours in an eight-day window: a sliver, three days before the end
    assert left < script_bar[0] < right and script_bar[1] < 10
    assert abs((right - script_bar[0]) / (right - left) - 3 / 8) < 0.01
    batch_bar = by_name["nightly-batch\\nuser:"]
    assert batch_bar[0] == left, "a session older than the recorder starts at the window's start"
    assert "attached before the recorder saw it" in batch_bar[2]
    assert "legacy&#34;tap\\n&lt;img src=x onerror=alert(2)&gt;" in batch_bar[2]

    (gap,) = _rects(section, "gap")
    assert GAP_REASON in gap[2] and abs(gap[1] / (right - left) - 0.5 / 8) < 0.01
    labels = re.findall(r'<text class="lane-label"[^>]*><title>(.*?)</title>', section)
    assert labels == ["broker activity recorder", QUEUE, "legacy&#34;tap\\n&lt;img src=x onerror=alert(2)&gt;"]
    start = NOW - timedelta(days=8)
    midnights = [start.replace(hour=0, minute=0, second=0) + timedelta(days=d) for d in range(1, 9)]
    ticks = re.findall(r'<text class="tick x" x="[\d.]+" y="[\d.]+">(.*?)</text>', section)
    assert ticks == [m.strftime("%m-%d") for m in midnights if m <= NOW], "a tick on each UTC midnight"

    obstacles = section.split('<ul class="obstacles">', 1)[1].split("</ul>", 1)[0]
    assert "was read by &lt;script&gt;alert(1)&lt;/script&gt; from 10.1.2.3 as ledger" in obstacles
    assert GAP_REASON in obstacles and "\n" not in obstacles


def test_the_api_serves_the_timeline_data_with_names_as_recorded(serve) -> None:
    client, auth = serve(_readers_seed)
    response = client.get(f"/contracts/api/contracts/{V1}", headers=auth)
    assert response.status_code == 200, response.text
    readers = response.json()["readers"]
    assert readers["verdict"] == "fail" and readers["queues"] == [QUEUE, HOSTILE_QUEUE]
    start, end = (datetime.fromisoformat(readers[k]) for k in ("windowStart", "windowEnd"))
    assert end == NOW and start == NOW - timedelta(days=8)
    connections = {s["connection"]: s for s in readers["sessions"]}
    assert set(connections) == {SCRIPT, "nightly-batch\nuser: admin"}
    assert connections["nightly-batch\nuser: admin"]["attachedAt"] is None
    assert [g["note"] for g in readers["gaps"]] == [GAP_REASON]
    assert {o["kind"] for o in readers["obstacles"]} == {"reader", "gap"}


def test_an_audit_from_before_the_readers_check_still_renders(serve) -> None:
    client, auth = serve(_old_seed)
    page = client.get(f"/contracts/c/{V1}", headers=auth)
    assert page.status_code == 200, page.text
    retirement = page_section(page.text, 'id="retirement"')
    assert "latest audit: fail" in retirement and 'id="readers"' not in retirement
    assert "consumers_over_time" in page.text  # its figures, in the evidence table
    detail = client.get(f"/contracts/api/contracts/{V1}", headers=auth)
    assert detail.status_code == 200 and detail.json()["readers"] is None


def test_a_readers_check_without_the_management_api_says_why_there_is_no_timeline(serve) -> None:
    client, auth = serve(_no_management_seed)
    page = client.get(f"/contracts/c/{V1}", headers=auth)
    assert page.status_code == 200, page.text
    section = page_section(page.text, 'id="readers"')
    assert "<svg" not in section
    assert "No reader timeline: the management API is required to see readers" in section
    assert f"<code>{QUEUE}</code>" in section


def _recording_seed(registry: Any, contract: Any) -> None:
    """A recorder that has confirmed its coverage a moment ago, on a host whose name is hostile text, and a
    gap this morning; then the readers audit the timeline draws."""
    now = datetime.now(UTC)
    registry.open_coverage_segment(
        "seg-health", started_at=now - timedelta(hours=2), host="recorder-1<b>", covered_from=now - timedelta(hours=2)
    )
    registry.extend_coverage("seg-health", covered_from=now - timedelta(hours=2), until=now)
    registry.record_gap(now - timedelta(hours=5), now - timedelta(hours=4), "events the broker dropped (limit 20)")
    _readers_seed(registry, contract)


def test_the_recorder_s_health_stands_beside_the_timeline(serve) -> None:
    client, auth = serve(_recording_seed)
    section = page_section(client.get(f"/contracts/c/{V1}", headers=auth).text, 'id="readers"')
    health = section.split('<p class="recorder-health">', 1)[1].split("</p>", 1)[0]
    assert ">recording<" in health and "coverage confirmed until" in health
    assert "active recorder recorder-1&lt;b&gt;" in health  # a host name is text, never markup
    assert "1 gap in the last day" in health and "events the broker dropped (limit 20)" in health


def test_a_recorder_that_confirmed_nothing_lately_is_said_not_to_record(serve) -> None:
    client, auth = serve(_readers_seed)  # coverage only in the audit's evidence, none in the store
    section = page_section(client.get(f"/contracts/c/{V1}", headers=auth).text, 'id="readers"')
    health = section.split('<p class="recorder-health">', 1)[1].split("</p>", 1)[0]
    assert ">not recording<" in health and "no coverage confirmed in the last day" in health
