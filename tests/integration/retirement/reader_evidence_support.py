"""What the ``readers`` broker tests share: audits a few seconds apart, named readers, recorders as processes.

A version needs 3 audits spanning 4 s (``SHORT``), as the main job shortens ``observationSpan``; the sleeps
between audits are the behaviour under test: the span has to pass.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pika
from tests.support.broker import url_of
from tests.support.contracts import V1
from tests.support.retirement import delete_recorder_queues
from tests.support.waiting import wait_until

from contract_platform.catalog.model import Catalog, Contract, RetirementSettings
from contract_platform.evidence import Verdict
from contract_platform.retirement import AuditResult, LastSeen, TypeLastSeen, audit_version
from contract_platform.retirement.audit import audit_snapshot
from contract_platform.store import SqlRegistry

SHORT = RetirementSettings(observations=3, observation_span=timedelta(seconds=4), evidence_freshness=timedelta(days=2))
APART = 5.0  # seconds between audits (longer than the span's share and the broker's 5 s statistics interval)


def v1_message(message_id: str) -> tuple[bytes, Any]:
    body = {"metadata": {"messageId": message_id, "messageType": V1, "schemaVersion": 1}, "payload": {}}
    return json.dumps(body).encode(), pika.BasicProperties(type=V1, message_id=message_id, delivery_mode=2)


class Audits:
    """Audits of one version, ``APART`` seconds apart, each recorded like the DAG's."""

    def __init__(self, connection: Any, contracts: Catalog, registry: SqlRegistry, prefix: str, contract: Contract):
        self.connection, self.contracts, self.registry, self.prefix = connection, contracts, registry, prefix
        self.contract = contract
        self.last = 0.0

    def run(self, vhosts: list[str] | None = None) -> AuditResult:
        wait = self.last + APART - time.monotonic()
        if wait > 0:
            time.sleep(wait)  # the observation span passing is what is under test
        self.last = time.monotonic()
        last_seen = LastSeen({V1: TypeLastSeen(datetime.now(UTC) - timedelta(days=30), 1)}, scanned=True, source="t")
        return audit_version(
            self.contract,
            self.contracts,
            self.registry,
            self.connection,
            last_seen,
            now=datetime.now(UTC),
            run_id="test",
            snapshot=audit_snapshot(self.connection, vhosts=vhosts),
            dead_letter_scope=self.prefix,
        )


def named_connection(name: str, vhost: str = "/") -> Any:
    params = pika.URLParameters(url_of(vhost))
    params.client_properties = {"connection_name": name}
    return pika.BlockingConnection(params)


def readers(result: AuditResult) -> tuple[Verdict, str]:
    check = result.check("readers")
    return check.verdict, check.blocker or ""


@dataclass
class Recorders:
    """``contractctl record-activity`` processes on one queue into one SQLite registry, as a user runs them."""

    work: Path
    queue: str
    environment: dict[str, str] = field(default_factory=dict)
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def registry_url(self) -> str:
        return f"sqlite:///{self.work / 'registry.db'}"

    def _command(self, *extra: str) -> list[str]:
        contractctl = str(Path(sys.executable).parent / "contractctl")
        return [contractctl, "record-activity", "--queue", self.queue, "--heartbeat", "1s", *extra]

    def _env(self) -> dict[str, str]:
        return os.environ | {"CONTRACT_REGISTRY_URL": self.registry_url} | self.environment

    def start(self) -> subprocess.Popen[bytes]:
        log = (self.work / "recorder.log").open("ab")
        process = subprocess.Popen(self._command(), env=self._env(), stdout=subprocess.DEVNULL, stderr=log)
        self.started.append(process)
        return process

    def status(self) -> dict[str, Any]:
        """``record-activity --status --format json``, as a health check reads it."""
        done = subprocess.run(
            self._command("--status", "--format", "json"), env=self._env(), capture_output=True, text=True, timeout=60
        )
        assert done.returncode in (0, 1), done.stderr
        found: dict[str, Any] = json.loads(done.stdout)
        return found

    def log(self) -> str:
        path = self.work / "recorder.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"

    def wait_for_coverage(self, registry: SqlRegistry, what: str) -> datetime:
        """Until a running recorder has confirmed a moment after now (every event up to now is stored)."""
        from contract_platform.retirement.readers import confirmed_until

        moment = datetime.now(UTC)

        def reached() -> datetime | None:
            found = confirmed_until(registry.coverage(moment - timedelta(hours=1))[0])
            return found if found is not None and found > moment else None

        return wait_until(reached, 60, 0.2, what=what, diagnose=self.log)

    def stop(self, process: subprocess.Popen[bytes], how: signal.Signals = signal.SIGTERM) -> None:
        process.send_signal(how)
        process.wait(timeout=60)

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=60)
        delete_recorder_queues(url_of("/"), self.queue)
