"""The retirement audit at estate scale: one run over 200 deprecated versions on a broker of 60,000 queues.

A private RabbitMQ node (``tests/support/private_node.py``: its own name, ports and folders; the shared
broker is never touched) started with the management and event-exchange plugins and a raised open-files
limit (``--nofile``, default 200,000: classic queues hold file handles, and 1,024 run out near 3,000
queues). The estate is loaded in one ``POST /api/definitions`` (far faster than declaring queue by queue):

* ``--contracts`` contracts (``d000.thing-happened.v1``...), each on its own topic exchange with the
  platform's topology (``plan_topology``: consumer, retry, DLQ and parking-lot queues, classic) for three
  consumer services; the first ``--deprecated`` of them are the versions audited;
* foreign services up to ``--queues``: per service ``<svc>.in`` bound to one contract exchange with a
  wildcard (it receives that contract), dead-lettering to its own fanout ``<svc>.dlx`` into
  ``<svc>.dead``, and ``<svc>_error`` (named like a DLQ);
* a few messages of audited types left in foreign DLQs (found broker-wide, whoever owns the queue).

Then it times ``retirement.audit_versions`` (what the ``retirement_audit`` DAG calls: one topology
snapshot for the run) in-process, counting the management API's HTTP calls, and prints one JSON line.
``--per-version N`` also times the per-version path (a topology read per version) over the first N
versions, for the cost a version had before.

    .venv/bin/python benchmarks/estate_audit.py --queues 60000 --deprecated 200 > figures.json
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the builders are shared with the tests (docs/contributing.md#test-support)
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import pika  # noqa: E402
from tests.support.contracts import build_contract, catalog_of  # noqa: E402
from tests.support.private_node import PrivateNode  # noqa: E402

from contract_platform.amqp import plan_topology  # noqa: E402
from contract_platform.catalog.model import Catalog, Consumer, Contract, Status, Transport  # noqa: E402

PLUGINS = ("rabbitmq_event_exchange",)  # and the management API (``management=True``)
CONSUMERS = 3


class EstateNode(PrivateNode):
    """The private node with its management API on a port of its own (the shared broker holds 15672)."""

    def start(
        self,
        timeout: float = 180.0,
        plugins: tuple[str, ...] = PLUGINS,
        nofile: int | None = None,
        management: bool = True,
    ) -> None:
        super().start(timeout, plugins, nofile, management)


def raise_open_files(limit: int) -> int:
    """Raise this process's open-files limit (inherited by the node it starts); returns what was set."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max(limit, soft)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, max(wanted, hard)))
    except (ValueError, OSError):  # not root: as high as the hard limit allows
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def estate_contracts(contracts: int, deprecated: int) -> list[Contract]:
    """``contracts`` versions on their own exchanges, three consumers each, classic queues; the first
    ``deprecated`` are deprecated."""
    found = []
    for n in range(contracts):
        domain = f"d{n:03d}"
        base = build_contract(queue_type="classic", retry_delays=(timedelta(seconds=30),))
        found.append(
            replace(
                base,
                message_type=f"{domain}.thing-happened.v1",
                status=Status.DEPRECATED if n < deprecated else Status.ACTIVE,
                transport=Transport(exchange=f"{domain}.events", routing_key=f"{domain}.thing.happened.v1"),
                consumers=tuple(
                    Consumer(service=f"{domain}-reader{k}", queue=f"{domain}-reader{k}.{domain}.thing-happened.v1")
                    for k in range(CONSUMERS)
                ),
            )
        )
    return found


def estate_definitions(contracts: list[Contract], queues: int) -> tuple[dict[str, Any], list[str]]:
    """The broker definitions (``/api/definitions``) of the estate, and the foreign DLQs that get messages."""
    vhost = "/"
    exchanges: dict[str, dict[str, Any]] = {}
    declared: dict[str, dict[str, Any]] = {}
    bindings: list[dict[str, Any]] = []

    def exchange(name: str, kind: str) -> None:
        exchanges.setdefault(
            name,
            {"name": name, "vhost": vhost, "type": kind, "durable": True, "auto_delete": False, "internal": False},
        )

    def queue(name: str, arguments: dict[str, Any] | None = None) -> None:
        declared[name] = {
            "name": name,
            "vhost": vhost,
            "durable": True,
            "auto_delete": False,
            "arguments": arguments or {},
        }

    def bind(source: str, queue_name: str, key: str = "") -> None:
        bindings.append(
            {
                "source": source,
                "vhost": vhost,
                "destination": queue_name,
                "destination_type": "queue",
                "routing_key": key,
                "arguments": {},
            }
        )

    for contract in contracts:
        plan = plan_topology(contract)
        for x in plan.exchanges:
            exchange(x.name, x.type)
        for q in plan.queues:
            queue(q.name, dict(q.arguments))
        for b in plan.bindings:
            bind(b.exchange, b.queue, b.routing_key)
    filled = []
    services = max(0, (queues - len(declared)) // 3)
    for n in range(services):
        svc = f"svc{n:05d}"
        target = contracts[n % len(contracts)]
        domain = target.message_type.split(".", 1)[0]
        exchange(f"{svc}.dlx", "fanout")
        queue(f"{svc}.in", {"x-dead-letter-exchange": f"{svc}.dlx"})
        queue(f"{svc}.dead")
        queue(f"{svc}_error")
        bind(target.transport.exchange, f"{svc}.in", f"{domain}.#")
        bind(f"{svc}.dlx", f"{svc}.dead")
        if n % 1000 == 7:
            filled.append(f"{svc}.dead")
    definitions = {
        "rabbit_version": "3.10.8",
        "vhosts": [{"name": vhost}],
        "permissions": [{"user": "guest", "vhost": vhost, "configure": ".*", "write": ".*", "read": ".*"}],
        "queues": list(declared.values()),
        "exchanges": list(exchanges.values()),
        "bindings": bindings,
    }
    return definitions, filled


def load_definitions(management_url: str, definitions: dict[str, Any], *, chunk: int = 10_000) -> float:
    """POST the definitions in parts (the API refuses bodies over its size limit); returns the seconds taken."""
    began = time.perf_counter()
    head = {key: value for key, value in definitions.items() if key not in ("queues", "exchanges", "bindings")}
    for kind in ("exchanges", "queues", "bindings"):
        items = definitions.get(kind, [])
        for start in range(0, len(items), chunk):
            part = head | {kind: items[start : start + chunk]}
            answer = httpx.post(f"{management_url}/api/definitions", json=part, auth=("guest", "guest"), timeout=900)
            answer.raise_for_status()
    return time.perf_counter() - began


class _Counted:
    """Counts the management API's HTTP calls: every request goes through ``amqp.http._get``
    (``ManagementClient.request``)."""

    def __init__(self) -> None:
        from contract_platform.amqp import http

        self.calls = 0
        self._http = http
        self._original = http._get

    def install(self) -> None:
        original = self._original

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return original(*args, **kwargs)

        self._http._get = counted

    def remove(self) -> None:
        self._http._get = self._original


def fill(url: str, queues: list[str], contracts: list[Contract]) -> int:
    """One message of an audited type (and one of another family) in each of ``queues``."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.confirm_delivery()
    sent = 0
    for n, queue in enumerate(queues):
        for contract in (contracts[n % len(contracts)], contracts[-1]):
            body = json.dumps({"metadata": {"messageId": f"{queue}-{sent}", "messageType": contract.message_type}})
            properties = pika.BasicProperties(message_id=f"{queue}-{sent}", type=contract.message_type, delivery_mode=2)
            channel.basic_publish("", queue, body.encode(), properties)
            sent += 1
    connection.close()
    return sent


def wait_listed(management_url: str, queues: int, timeout: float = 600.0) -> float:
    """Until the management API counts ``queues`` queues (its statistics lag the declares)."""
    began = time.perf_counter()
    while time.perf_counter() - began < timeout:
        try:
            answer = httpx.get(f"{management_url}/api/overview", auth=("guest", "guest"), timeout=60).json()
            if (answer.get("object_totals") or {}).get("queues", 0) >= queues:
                return time.perf_counter() - began
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(2)
    raise RuntimeError(f"the management API did not list {queues} queues within {timeout:.0f} s")


def run_audits(
    url: str, management_url: str, contracts: list[Contract], deprecated: int, workdir: Path, per_version: int
) -> dict[str, Any]:
    from contract_platform.amqp.connection import close_quietly, open_connection
    from contract_platform.amqp.http import ManagementClient
    from contract_platform.retirement import LastSeen, audit_version, audit_versions
    from contract_platform.retirement.snapshot import TopologySnapshot
    from contract_platform.store import SqlRegistry

    catalog: Catalog = catalog_of(*contracts)
    audited = contracts[:deprecated]
    client = ManagementClient(management_url, "guest", "guest", vhost="/")
    registry = SqlRegistry.open(f"sqlite:///{workdir / 'registry.db'}")
    counter = _Counted()
    counter.install()
    connection = open_connection(url)
    figures: dict[str, Any] = {}
    try:
        began = time.perf_counter()
        snapshot = TopologySnapshot.read(client, keep_alive=connection)
        run = audit_versions(audited, catalog, registry, connection, LastSeen(), run_id="estate", snapshot=snapshot)
        seconds = time.perf_counter() - began
        verdicts: dict[str, int] = {}
        for result in run.results:
            verdicts[str(result.verdict)] = verdicts.get(str(result.verdict), 0) + 1
        dead = [r.check("dead_letters").figures for r in run.results]
        figures["run"] = run.figures() | {
            "wallSeconds": round(seconds, 2),
            "httpCalls": counter.calls,
            "verdicts": verdicts,
            "failures": len(run.failures),
            "deadLetterQueuesListedPerVersion": round(sum(len(d["queues"]) for d in dead) / max(1, len(dead)), 1),
            "versionsFindingForeignMessages": sum(1 for d in dead if d["matching"]),
        }
        if per_version:
            counter.calls = 0
            began = time.perf_counter()
            for contract in audited[:per_version]:
                audit_version(
                    contract,
                    catalog,
                    registry,
                    connection,
                    LastSeen(),
                    now=datetime.now(UTC),
                    run_id="single",
                    snapshot=TopologySnapshot.read(client, keep_alive=connection),
                    record=False,
                )
            seconds = time.perf_counter() - began
            figures["perVersion"] = {
                "versions": per_version,
                "secondsPerVersion": round(seconds / per_version, 2),
                "httpCallsPerVersion": round(counter.calls / per_version, 1),
            }
    finally:
        counter.remove()
        close_quietly(connection)
        registry.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=60_000)
    parser.add_argument("--contracts", type=int, default=300)
    parser.add_argument("--deprecated", type=int, default=200)
    parser.add_argument("--nofile", type=int, default=200_000, help="the node's open-files limit (ulimit -n)")
    parser.add_argument("--per-version", type=int, default=3, help="also time N versions audited one by one")
    parser.add_argument("--url", help="an estate already loaded on this AMQP URL (no node is started)")
    parser.add_argument("--management-url", help="its management API (with --url)")
    args = parser.parse_args(argv)
    contracts = estate_contracts(args.contracts, args.deprecated)
    figures: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
    }
    with tempfile.TemporaryDirectory(prefix="estate-audit-") as folder:
        workdir = Path(folder)
        node = None
        if args.url:
            url, management_url = args.url, args.management_url or "http://127.0.0.1:15672"
        else:
            figures["nofile"] = raise_open_files(args.nofile)
            node = EstateNode(workdir / "node")
            node.start()
            url, management_url = node.url, node.management_url
        try:
            definitions, filled = estate_definitions(contracts, args.queues)
            figures["estate"] = {
                "queues": len(definitions["queues"]),
                "exchanges": len(definitions["exchanges"]),
                "bindings": len(definitions["bindings"]),
                "contracts": args.contracts,
                "deprecated": args.deprecated,
                "foreignDeadLettersFilled": len(filled),
            }
            if node is not None:
                figures["estate"]["loadSeconds"] = round(load_definitions(management_url, definitions), 1)
                figures["estate"]["listedAfterSeconds"] = round(wait_listed(management_url, args.queues), 1)
                figures["estate"]["messages"] = fill(url, filled, contracts[: args.deprecated])
            figures |= run_audits(url, management_url, contracts, args.deprecated, workdir, args.per_version)
        finally:
            if node is not None:
                node.stop()
    json.dump(figures, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
