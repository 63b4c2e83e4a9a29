"""An upgrade in place from the previous release loses and hides nothing (docs/upgrading.md, CHANGELOG.md).

The previous release, 0.1.0 (``PREVIOUS``), comes from git into the test's folder and runs with this venv's
interpreter and packages, its ``plugins`` (and the repository root, for its ``spark_jobs``: the package dirs
its pyproject declares) first on PYTHONPATH, so its ``contract_platform`` shadows the editable install; the
test checks that it is its code that runs. 0.2.0 added dependencies (httpx2, extras) and removed none, so the
old code runs on the current ones.

With 0.1.0, on a PostgreSQL registry of its own and a virtual host of its own, in one data folder:

- the contract_change DAG's tasks (``tests/e2e/previous_release.py``: lint, compatibility, topology,
  reconcile), and its ``contractctl lint``, ``check`` and ``status``;
- the evidence of traffic (archive validation, envelope quality, the bridge's parity: written through
  0.1.0's own evidence writer, not by the Spark jobs, which take minutes) and reconciliation until
  billing.invoice-issued.v1 is deprecated, with the refusals on the way;
- its broker activity recorder, left running through two recording retirement audits of the deprecated
  version (``contractctl audit --record``), then stopped with SIGTERM.

Then 0.2.0 on the same registry, broker and data folder:

- every row 0.1.0 wrote reads back the same through the current ``SqlRegistry`` (status, transitions,
  refusals, evidence, observations, counters, schema snapshots, coverage), each table keeps its row count,
  and the schema is at ``LATEST_VERSION``; ``contractctl status`` says what 0.1.0's said;
- the retirement audit judges the old audits' counters: a read between the last 0.1.0 audit and the first
  0.2.0 audit fails its readers check, naming both audits (the check's ``audits`` figure cannot count them:
  its clean stretch starts after the upgrade's recorder gap and 0.2.0's first traced audit, as
  docs/upgrading.md says);
- the recorder continues with the one gap docs/upgrading.md promises (the old queue ``had other arguments
  (...) and was replaced``), and its next start continues without one;
- a second start changes nothing: no migration, the same rows.

The served Airflow's metadata database across the upgrade is tested in
``tests/airflow/test_previous_metadata_database.py``, not here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import psycopg2
import pytest
from sqlalchemy.engine import make_url
from tests.e2e.previous_release import registry_view
from tests.support import broker
from tests.support.cli import CONTRACTCTL
from tests.support.databases import scratch_database
from tests.support.environment import user_environment
from tests.support.waiting import wait_until

from contract_platform.amqp import open_connection
from contract_platform.amqp.connection import close_quietly
from contract_platform.store import LATEST_VERSION, SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

PREVIOUS = "8910376"  # release 0.1.0 (CHANGELOG.md)
PREVIOUS_SCHEMA = 3
REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("previous_release.py")
DEPRECATED = "billing.invoice-issued.v1"
READ_QUEUE = "accounting-service.billing.invoice-issued.v1"


def previous_release(target: Path) -> Path:
    """0.1.0's package dirs and catalogue, from git, in ``target``; skips when this clone lacks the commit."""
    found = subprocess.run(
        ["git", "-C", str(REPO), "cat-file", "-e", f"{PREVIOUS}^{{commit}}"], capture_output=True, check=False
    )
    if found.returncode != 0:
        pytest.skip(
            f"this clone lacks the previous release's commit {PREVIOUS}: CI runs .ci/run in a clone of the whole "
            "history; a shallow clone (git clone --depth) needs git fetch --unshallow first"
        )
    archive = target.with_suffix(".tar")
    subprocess.run(
        ["git", "-C", str(REPO), "archive", f"--output={archive}", PREVIOUS, "plugins", "spark_jobs", "contracts"],
        check=True,
    )
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target


class Platform:
    """One release's commands on one registry, broker and data folder."""

    def __init__(self, env: Mapping[str, str], old: Path | None) -> None:
        self.env = dict(env)
        self.env.pop("PYTHONPATH", None)
        self.command = [str(CONTRACTCTL)]
        if old is not None:  # the previous release: its package dirs first, this venv's interpreter and packages
            self.env["PYTHONPATH"] = f"{old / 'plugins'}{os.pathsep}{old}"
            self.command = [sys.executable, "-m", "contract_platform.cli.main"]

    def run(self, *argv: str, ok: tuple[int, ...] = (0,), timeout: float = 120) -> str:
        done = subprocess.run(
            [*self.command, *argv], env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        assert done.returncode in ok, f"contractctl {' '.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}"
        return done.stdout

    def json(self, *argv: str, ok: tuple[int, ...] = (0,)) -> Any:
        return json.loads(self.run(*argv, "--format", "json", ok=ok))

    def python(self, *argv: str) -> Any:
        done = subprocess.run(
            [sys.executable, *argv], env=self.env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}"
        return json.loads(done.stdout)

    def start(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*self.command, *argv], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )


def query(url: str, statement: str) -> list[tuple[Any, ...]]:
    """The rows of one SQL statement on the registry's database, on a connection of its own."""
    target = make_url(url)
    db = psycopg2.connect(host=target.host, port=target.port, user=target.username, dbname=target.database)
    try:
        with db.cursor() as cursor:
            cursor.execute(statement)
            return list(cursor.fetchall())
    finally:
        db.close()


def row_counts(url: str) -> dict[str, int]:
    """Rows in each of the store's data tables, counted in SQL."""
    tables = query(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'cp\\_%'")
    return {
        name: query(url, f'SELECT count(*) FROM "{name}"')[0][0]
        for (name,) in sorted(tables)
        if name != "cp_schema_version"  # one row per migration applied: schema_versions
    }


def schema_versions(url: str) -> list[int]:
    return [version for (version,) in query(url, "SELECT version FROM cp_schema_version ORDER BY version")]


def kept(old: Any, new: Any) -> bool:
    """Whether ``new`` holds everything ``old`` does: the same fields with the same values (a newer record may
    have more fields), and every item of an old list (a newer list may have more)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(key in new and kept(value, new[key]) for key, value in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and all(any(kept(item, candidate) for candidate in new) for item in old)
    return bool(old == new)


def same(old: Any, new: Any) -> bool:
    """``kept``, and no list has items beyond the old ones: nothing was added."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(key in new and same(value, new[key]) for key, value in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and len(old) == len(new) and all(same(a, b) for a, b in zip(old, new, strict=True))
    return bool(old == new)


def current_view(url: str, catalog: Path, since: datetime) -> dict[str, Any]:
    from contract_platform.catalog import load_catalog

    with SqlRegistry.open(url) as store:
        return registry_view(store, (c.message_type for c in load_catalog(catalog)), since)


def read_once(vhost: str, queue: str) -> None:
    """A reader polling with basic.get, which no recorder sees: one message published and taken."""
    connection = open_connection(broker.url_of(vhost))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.basic_publish("", queue, b"{}")
        wait_until(lambda: channel.basic_get(queue, auto_ack=True)[0] is not None, 10, 0.1, what=f"a get from {queue}")
    finally:
        close_quietly(connection)

    def counted() -> bool:
        where = f"{quote(vhost, safe='')}/{quote(queue, safe='')}"
        found = httpx.get(f"{broker.API}/queues/{where}", auth=broker.AUTH, timeout=10).json()
        return int(found.get("message_stats", {}).get("deliver_get", 0)) >= 1

    wait_until(counted, broker.STATS_INTERVAL, 0.5, what=f"the management API counting the get from {queue}")


@pytest.fixture()
def registry_url(postgres_url: str) -> Iterator[str]:
    with scratch_database(postgres_url, "upgrade") as url:
        try:
            yield url
        finally:
            broker.delete_recorder_queues(url)


def test_an_upgrade_in_place_from_the_previous_release_loses_and_hides_nothing(
    tmp_path: Path, vhost: str, registry_url: str
) -> None:
    old_tree = previous_release(tmp_path / "previous")
    catalog = old_tree / "contracts"  # the team's catalogue, the same before and after
    env = user_environment(
        vhost,
        CONTRACT_PLATFORM_HOME=str(tmp_path / "data"),
        CONTRACT_REGISTRY_URL=registry_url,
        CONTRACT_CATALOG=str(catalog),
        CONTRACT_RECORDER_HEARTBEAT="1s",
    )
    old, new = Platform(env, old_tree), Platform(env, None)
    since = datetime.now(UTC) - timedelta(hours=1)

    # -- 0.1.0, to the middle of a lifecycle ---------------------------------------------------------------
    assert old.python("-c", "import contract_platform, json; print(json.dumps(contract_platform.__file__))") == str(
        old_tree / "plugins" / "contract_platform" / "__init__.py"
    )
    old.run("--version", ok=(2,))  # 0.1.0 has no --version
    changed = old.python(str(DRIVER), "change", str(catalog), "old-change")
    assert changed["problems"] == []
    assert set(changed["reconcile"].values()) == {"experimental"}
    assert schema_versions(registry_url) == list(range(1, PREVIOUS_SCHEMA + 1))
    old.run("lint", str(catalog))
    assert old.json("check", str(catalog))["ok"] is True
    # v1 cannot be superseded while its successor is still experimental: a refusal, then the next run moves it
    assert old.python(str(DRIVER), "traffic", str(catalog), "old-traffic")["reconcile"][DEPRECATED] == "active"
    reconciled = old.python(str(DRIVER), "reconcile", str(catalog), "old-reconcile")["reconcile"]
    assert reconciled[DEPRECATED] == "deprecated" and set(reconciled.values()) == {"active", "deprecated"}

    recorder = old.start("record-activity")
    try:
        wait_until(
            lambda: old.run("record-activity", "--status", ok=(0, 1)).endswith("recording\n"),
            60,
            0.5,
            what="0.1.0's recorder confirming coverage",
        )
        for _ in range(2):
            audit = old.json("audit", DEPRECATED, "--record", "--vhost", vhost, ok=(0, 1))
            assert audit["checks"]["queues"]["verdict"] == "pass", audit["checks"]["queues"]
    finally:
        recorder.send_signal(signal.SIGTERM)
        out, err = recorder.communicate(timeout=60)
    assert recorder.returncode == 0, err[-3000:]
    assert "in 1 segment(s)" in out, out
    old_status = old.json("status")
    before = old.python(str(DRIVER), "view", str(catalog), since.isoformat())
    counts = row_counts(registry_url)
    assert schema_versions(registry_url) == list(range(1, PREVIOUS_SCHEMA + 1))
    assert before["contracts"][DEPRECATED]["refusals"] and len(before["coverage"]["segments"]) == 1
    assert all(counts[table] > 0 for table in ("cp_transitions", "cp_refusals", "cp_evidence", "cp_queue_counters"))

    # -- 0.2.0 over it ----------------------------------------------------------------------------------
    upgraded = current_view(registry_url, catalog, since)  # the first open upgrades the schema
    assert schema_versions(registry_url) == list(range(1, LATEST_VERSION + 1))
    assert same(before, upgraded), "0.2.0 reads 0.1.0's rows otherwise"
    assert {table: n for table, n in row_counts(registry_url).items() if table in counts} == counts
    assert same(old_status, new.json("status"))  # what 0.1.0's contractctl status said, 0.2.0's says

    # the audit judges the old audits' counters: a read after the last 0.1.0 audit fails the first 0.2.0 audit
    last_old_audit = max(
        row["observed_at"] for row in before["contracts"][DEPRECATED]["counters"] if row["queue"] == READ_QUEUE
    )
    read_once(vhost, READ_QUEUE)
    readers = new.json("audit", DEPRECATED, "--record", "--vhost", vhost, ok=(1,))["checks"]["readers"]
    assert readers["verdict"] == "fail", readers
    stamp = datetime.fromisoformat(last_old_audit).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert f"{READ_QUEUE} was read between the audits at {stamp} and " in readers["blocker"], readers["blocker"]

    # the recorder continues: one gap, naming the replaced queue; the next start continues without one
    first = new.json("record-activity", "--max-seconds", "8")
    assert len(first["gaps"]) == 1 and "had other arguments" in first["gaps"][0] and "was replaced" in first["gaps"][0]
    assert first["continued"] == 0, first
    second = new.json("record-activity", "--max-seconds", "8")
    assert second["gaps"] == [] and second["continued"] == 1, second

    # a second start changes nothing, and every old row is still there
    settled = row_counts(registry_url)
    again = current_view(registry_url, catalog, since)
    assert schema_versions(registry_url) == list(range(1, LATEST_VERSION + 1))
    assert row_counts(registry_url) == settled
    assert kept(before, again)
