"""Draining the catalogue's archive queues into the topic archive: the first step of every evidence DAG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contract_platform.amqp.types import BrokerConnection
from contract_platform.catalog.model import Catalog

__all__ = ["drain_archives"]


def drain_archives(
    catalog: Catalog, connection: BrokerConnection, root: Path, *, idle_timeout: float = 2.0
) -> dict[str, Any]:
    """Archive what waits in ``archive.<exchange>`` for every exchange that has one; say which had none.

    An exchange whose archive queue does not exist yet (no version of it provisioned) is skipped
    and listed, not an error: nothing can have travelled on it through the platform.
    """
    from contract_platform.amqp.inspection import passive_queue
    from contract_platform.amqp.topology import archive_queue_name
    from contract_platform.archiver import Archiver, ArchiverConfig

    present = [e for e in catalog.exchanges if passive_queue(connection, archive_queue_name(e)) is not None]
    skipped = [e for e in catalog.exchanges if e not in present]
    if not present:
        return {"root": str(root), "records": {}, "total": 0, "skipped": skipped}
    config = ArchiverConfig(root=root, exchanges=tuple(present), idle_timeout=idle_timeout)
    report = Archiver(connection, config).run("drain")
    return {**report.as_dict(), "root": str(root), "skipped": skipped}
