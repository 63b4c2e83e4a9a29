"""The verbs that need the broker end quietly too when the reader of their output leaves (``| head -1``).

The same rule as ``tests/unit/cli/test_closed_pipe.py``, for ``migration status``, ``audit``, ``archive``,
``bridge`` and ``record-activity``: each runs as the installed command against the catalogue's topology in a
private virtual host, its standard output a pipe whose reader is gone before the first line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support import broker
from tests.support.cli import into_closed_pipe
from tests.support.environment import user_environment
from tests.support.vhosts import private_vhost, provision_catalog

from contract_platform.activity.recorder import recorder_queues
from contract_platform.catalog.model import Catalog
from contract_platform.cli.main import READER_GONE

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

INV1 = "billing.invoice-issued.v1"
INV2 = "billing.invoice-issued.v2"

CASES: dict[str, list[str]] = {
    "migration status": ["migration", "status", INV1, "--registry", "{registry}"],
    "audit": ["audit", INV1, "--registry", "{registry}", "--last-seen", "{tmp}/last-seen.json"],
    "archive": ["archive", "--root", "{tmp}/archive", "--idle-timeout", "0.2"],
    "bridge": ["bridge", INV2, "--idle-timeout", "0.2"],
    "record-activity": [
        "record-activity",
        "--registry",
        "{registry}",
        "--queue",
        "{prefix}recorder",
        "--max-seconds",
        "1",
    ],
}


@pytest.fixture(scope="module")
def vhost(catalog: Catalog, rabbitmq_url: str) -> Iterator[str]:
    """A private virtual host holding the topology of every contract of the catalogue."""
    with private_vhost() as name:
        provision_catalog(name, catalog)
        yield name


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_reader_gone_before_the_first_line_ends_the_verb_quietly(
    case: str, buffered: bool, vhost: str, catalog_dir: Path, tmp_path: Path, rabbitmq_url: str
) -> None:
    prefix = broker.prefix()
    places = {"registry": f"sqlite:///{tmp_path / 'registry.db'}", "tmp": str(tmp_path), "prefix": prefix}
    env = user_environment(vhost, CONTRACT_PLATFORM_HOME=str(tmp_path / "home"), CONTRACT_CATALOG=str(catalog_dir))
    env.pop("PYTHONUNBUFFERED", None)
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    try:
        left = into_closed_pipe([part.format(**places) for part in CASES[case]], env)
    finally:
        broker.delete_names(rabbitmq_url, queues=recorder_queues(f"{prefix}recorder"))  # in the event vhost

    assert left.stderr == "", left.stderr  # no traceback, no "internal error", no pika warning
    assert left.code == READER_GONE
