"""The previous release's main job, up to the middle of a lifecycle, run with that release's own code.

``tests/e2e/test_upgrade.py`` runs this file as a script with the previous release's ``plugins`` first on
PYTHONPATH, so every ``contract_platform`` import below is that release's. It imports nothing from the
current tree (only the standard library and ``contract_platform``), and the test imports ``registry_view``
from it to read the same rows through the current store.

    python previous_release.py change CATALOG RUN_ID     # the contract_change DAG's tasks, without Airflow
    python previous_release.py traffic CATALOG RUN_ID    # the evidence of traffic, then reconcile
    python previous_release.py reconcile CATALOG RUN_ID  # reconcile again
    python previous_release.py view CATALOG SINCE        # what the store holds, as JSON
    python previous_release.py archive CATALOG PLAN      # archive the deliveries PLAN (a JSON file) lists

The registry, the broker and the data folder are the process's (CONTRACT_REGISTRY_URL,
CONTRACT_RABBITMQ_URL, CONTRACT_PLATFORM_HOME).

**Traffic.** The Spark jobs (archive validation, envelope quality) and the bridge's parity take minutes;
their evidence is written through the release's one evidence writer (``contract_platform.evidence.record``)
with the figures those jobs report on clean traffic, so the lifecycle's guards judge it as they would.

**Archive.** The deliveries of a plan (``[{"exchange", "routingKey", "receivedAt", "body"}]``) are written by
the release's own archiver code (its record encoder and its date-partitioned writer) under the archive folder
(``CONTRACT_ARCHIVE_DIR`` or ``<data>/archive``), each in the ``date=`` partition of its receipt, so the days
before an upgrade hold what that release archived on them.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import Any

ACTOR = "upgrade-test"


def plain(value: Any) -> Any:
    """A stored record as JSON values: dataclasses as their fields, enums as their values, times in ISO 8601."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(item) for item in value]
    return value


def registry_view(store: Any, message_types: Iterable[str], since: datetime) -> dict[str, Any]:
    """Every row the lifecycle, the evidence and the recorder wrote for ``message_types``, as JSON values, read
    through the store's public methods (the previous release's ``Registry`` or the current ``SqlRegistry``:
    the transition history is ``history`` in 0.1.0 and ``transitions`` from 0.2.0 on)."""
    history = getattr(store, "transitions", None) or store.history
    contracts = {
        message_type: {
            "effective": plain(store.effective(message_type)),
            "transitions": plain(history(message_type)),
            "refusals": plain(store.refusals(message_type, limit=10_000)),
            "evidence": plain(store.evidence(message_type, limit=10_000)),
            "observations": plain(store.observations(message_type)),
            "counters": plain(store.queue_counters(message_type, since=since)),
            "schemas": plain(store.schema_history(message_type)),
            "fingerprint": store.fingerprint(message_type),
        }
        for message_type in sorted(message_types)
    }
    segments, gaps = store.coverage(since)
    return {"contracts": contracts, "coverage": {"segments": plain(segments), "gaps": plain(gaps)}}


def _change(catalog: Any, store: Any, run_id: str) -> dict[str, Any]:
    """What the contract_change DAG's tasks do, in their order: lint, compatibility, topology, reconcile."""
    from contract_platform import settings
    from contract_platform.amqp import open_connection
    from contract_platform.change import check_compatibility, lint_contracts, provision_topologies

    summaries = [
        lint_contracts(catalog, store, run_id=run_id).to_dict(),
        check_compatibility(catalog, store, run_id=run_id).to_dict(),
    ]
    connection = open_connection(settings.rabbitmq_url())
    try:
        summaries.append(
            provision_topologies(
                catalog, connection, store, run_id=run_id, connect=lambda: open_connection(settings.rabbitmq_url())
            ).to_dict()
        )
    finally:
        connection.close()
    problems = [problem for summary in summaries for problem in summary["problems"]]
    return {"problems": problems, "reconcile": _reconcile(catalog, store, run_id)}


def _traffic(catalog: Any, store: Any, run_id: str) -> dict[str, Any]:
    from contract_platform import evidence
    from contract_platform.evidence import Verdict
    from contract_platform.evidence.figures import (
        ArchiveValidationFigures,
        EnvelopeQualityFigures,
        MigrationParityFigures,
    )

    for contract in catalog:
        target = contract.validation.invalid_rate_target
        for figures in (
            ArchiveValidationFigures(total=120, invalid=0, invalid_rate=0.0, invalid_rate_target=target),
            EnvelopeQualityFigures(evaluated=12, failed=0, rows=120),
        ):
            evidence.record(
                store, contract.message_type, contract.version, figures, verdict=Verdict.PASS, run_id=run_id
            )
        if contract.superseded_by:
            parity = MigrationParityFigures(mode="bridge", target=contract.superseded_by, parity=1.0, matched=120)
            evidence.record(store, contract.message_type, contract.version, parity, verdict=Verdict.PASS, run_id=run_id)
    return {"problems": [], "reconcile": _reconcile(catalog, store, run_id)}


def archive(plan: list[dict[str, Any]]) -> dict[str, Any]:
    """Each delivery of ``plan`` through the release's archiver writer, one file per exchange and day."""
    from pathlib import Path

    import pika

    from contract_platform import settings
    from contract_platform.archiver import _PartitionWriter, encode_record  # type: ignore[attr-defined]
    from contract_platform.envelope.properties import amqp_properties

    writers: dict[str, Any] = {}
    for tag, delivery in enumerate(plan, start=1):
        exchange = delivery["exchange"]
        received_at = datetime.fromisoformat(delivery["receivedAt"])
        method = pika.spec.Basic.Deliver(
            delivery_tag=tag, redelivered=False, exchange=exchange, routing_key=delivery["routingKey"]
        )
        body = json.dumps(delivery["body"]).encode("utf-8")
        properties = pika.BasicProperties(**amqp_properties(delivery["body"]))  # as the release's publisher sets them
        line, fallback = encode_record(method, properties, body, received_at)
        assert not fallback, line
        if exchange not in writers:
            writers[exchange] = _PartitionWriter(Path(settings.archive_dir()) / exchange, 64 * 2**20)
        writers[exchange].write(line, received_at.date())
    files: list[str] = []
    for writer in writers.values():
        writer.close()
        files.extend(str(path) for path in writer.files)
    return {"files": sorted(files)}


def _reconcile(catalog: Any, store: Any, run_id: str) -> dict[str, Any]:
    from contract_platform.change import reconcile_catalog

    results = reconcile_catalog(catalog, store, actor=ACTOR, run_id=run_id).to_dict()["results"]
    return {message_type: result["after"] for message_type, result in results.items()}


def main(argv: list[str]) -> int:
    from contract_platform import settings
    from contract_platform.catalog import load_catalog
    from contract_platform.store import Registry  # type: ignore[attr-defined]  # 0.1.0 named it Registry

    verb, catalog_dir, argument = argv
    if verb == "archive":
        with open(argument, encoding="utf-8") as plan:
            print(json.dumps(archive(json.load(plan)), sort_keys=True))
        return 0
    catalog = load_catalog(catalog_dir)
    with Registry.open(settings.registry_url()) as store:
        if verb == "view":
            found = registry_view(store, (c.message_type for c in catalog), datetime.fromisoformat(argument))
        else:
            found = {"change": _change, "traffic": _traffic, "reconcile": _reconcile_only}[verb](
                catalog, store, argument
            )
    print(json.dumps(found, sort_keys=True))
    return 0


def _reconcile_only(catalog: Any, store: Any, run_id: str) -> dict[str, Any]:
    return {"problems": [], "reconcile": _reconcile(catalog, store, run_id)}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
