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
- its archiver's writer, which archives yesterday's traffic, and its incremental archive validation
  (``contractctl validate-archive --since --until``, its own Spark job in local mode), which keeps its state in
  the data folder;
- its broker activity recorder, left running through two recording retirement audits of the deprecated
  version (``contractctl audit --record``); while it runs, 0.2.0's recorder exits 3, naming the queue, and
  changes nothing (the schema stays at 0.1.0's); then it is stopped with SIGTERM.

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
- a second start changes nothing: no migration, the same rows;
- the incremental validation continues 0.1.0's state: today's copies (archived by 0.2.0 from the broker) of
  messages 0.1.0 archived and validated yesterday are DUPLICATE, found in that state (nothing rebuilt from the
  archive, nothing incomplete), and yesterday's archive reads with 0.1.0's totals.

The test validates yesterday and today as the archive's partitions name them (UTC): a run across midnight
would find today's copies two days after yesterday's, outside their 24 h dedup window, and fail.

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
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pika
import psycopg2
import pytest
from sqlalchemy.engine import make_url
from tests.e2e.previous_release import registry_view
from tests.support import broker
from tests.support.cli import CONTRACTCTL
from tests.support.databases import scratch_database
from tests.support.environment import user_environment
from tests.support.waiting import wait_until

from contract_platform.activity.queues import queue_for
from contract_platform.amqp import open_connection
from contract_platform.amqp.connection import close_quietly
from contract_platform.store import LATEST_VERSION, SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # three more Spark runs than before: 420 s then

PREVIOUS = "8910376"  # release 0.1.0 (CHANGELOG.md)
PREVIOUS_SCHEMA = 3
REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("previous_release.py")
DEPRECATED = "billing.invoice-issued.v1"
READ_QUEUE = "accounting-service.billing.invoice-issued.v1"
VALIDATED = "billing.invoice-issued.v2"  # archived before and after the upgrade
COPIED = 5  # of the messages archived before the upgrade, copied after it


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
        self.cwd: Path | None = None
        if old is not None:  # the previous release: its package dirs first, this venv's interpreter and packages
            self.env["PYTHONPATH"] = f"{old / 'plugins'}{os.pathsep}{old}"
            self.command = [sys.executable, "-m", "contract_platform.cli.main"]
            self.cwd = old  # ``-m`` and ``-c`` put the working folder first: its spark_jobs, not this checkout's

    def run(self, *argv: str, ok: tuple[int, ...] = (0,), timeout: float = 120) -> str:
        return self.done(*argv, ok=ok, timeout=timeout).stdout

    def done(self, *argv: str, ok: tuple[int, ...] = (0,), timeout: float = 120) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*self.command, *argv],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode in ok, f"contractctl {' '.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}"
        return done

    def validate(self, archive: Path, since: date, report: Path, *extra: str) -> dict[str, Any]:
        """``contractctl validate-archive`` of the day ``since`` (its report, whose totals count that day only)."""
        until = since + timedelta(days=1)
        self.run(
            "validate-archive", str(archive), "--since", str(since), "--until", str(until), "--report", str(report),
            *extra, timeout=240,
        )  # fmt: skip
        found: dict[str, Any] = json.loads(report.read_text())
        return found

    def json(self, *argv: str, ok: tuple[int, ...] = (0,)) -> Any:
        return json.loads(self.run(*argv, "--format", "json", ok=ok))

    def python(self, *argv: str) -> Any:
        done = subprocess.run(
            [sys.executable, *argv],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}"
        return json.loads(done.stdout)

    def start(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*self.command, *argv],
            env=self.env,
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def traffic(catalog: Path, count: int) -> list[dict[str, Any]]:
    """``count`` distinct valid envelopes of ``VALIDATED``, from its first valid fixture."""
    fixture = json.loads(
        sorted((catalog / "billing" / "invoice-issued" / "v2" / "fixtures" / "valid").glob("*.json"))[0].read_text()
    )
    envelopes = []
    for n in range(count):
        envelope = json.loads(json.dumps(fixture))
        envelope["metadata"]["messageId"] = f"00000000-0000-4000-8000-{n:012d}"
        envelope["metadata"]["partitionKey"] = envelope["payload"]["invoiceId"] = f"inv-{90000 + n}"
        envelopes.append(envelope)
    return envelopes


def publish(vhost: str, exchange: str, routing_key: str, envelopes: list[dict[str, Any]]) -> None:
    """Each envelope to ``exchange``, confirmed, with the AMQP properties the platform's publishers set."""
    from contract_platform.envelope.properties import amqp_properties

    connection = open_connection(broker.url_of(vhost))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        for envelope in envelopes:
            properties = pika.BasicProperties(**amqp_properties(envelope))
            channel.basic_publish(exchange, routing_key, json.dumps(envelope).encode(), properties, mandatory=True)
    finally:
        close_quietly(connection)


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
        # 0.2.0's recorder started too early (docs/upgrading.md, step 5): exit 3, the queue named, nothing changed
        refused = new.done("record-activity", "--max-seconds", "8", ok=(3,)).stderr
        recorder_queue = queue_for(registry_url)
        assert f"{recorder_queue} on " in refused and "another recorder reads it: stop that recorder" in refused
        assert "has other arguments (x-expires=" in refused, refused  # 0.1.0's queue: unbounded, its expiry only
        assert schema_versions(registry_url) == list(range(1, PREVIOUS_SCHEMA + 1))  # the store not upgraded
        assert not broker.queue_listed("/", f"{recorder_queue}.dropped")  # no queue of 0.2.0's declared
    finally:
        recorder.send_signal(signal.SIGTERM)
        out, err = recorder.communicate(timeout=60)
    assert recorder.returncode == 0, err[-3000:]
    assert "in 1 segment(s)" in out, out

    # yesterday's traffic, archived and validated incrementally by 0.1.0's own archiver writer and Spark job (after
    # its audits: 0.1.0's audit holds its broker connection silent while it scans an archive, which a loaded
    # machine's Spark start can make outlast the heartbeat)
    archive = tmp_path / "data" / "archive"
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    sent = traffic(catalog, COPIED + 1)
    plan = tmp_path / "yesterday.json"
    received = datetime.combine(yesterday, datetime.min.time(), UTC) + timedelta(hours=20)
    plan.write_text(json.dumps([
        {"exchange": "billing.events", "routingKey": "billing.invoice.issued.v2",
         "receivedAt": (received + timedelta(minutes=n)).isoformat(), "body": envelope}
        for n, envelope in enumerate(sent)
    ]))  # fmt: skip
    assert [Path(f).parent.name for f in old.python(str(DRIVER), "archive", str(catalog), str(plan))["files"]] == [
        f"date={yesterday}"
    ]
    assert old.python("-c", "import spark_jobs.validate_archive as job, json; print(json.dumps(job.__file__))") == str(
        old_tree / "spark_jobs" / "validate_archive.py"
    )
    old_report = old.validate(archive, yesterday, tmp_path / "old-report.json")
    assert old_report["totals"]["records"] == COPIED + 1 and old_report["totals"]["valid"] == COPIED + 1, old_report
    state = tmp_path / "data" / "state" / "archive-validation"
    assert [p.name for p in (next(state.iterdir()) / "seen").glob("date=*")] == [f"date={yesterday}"]

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

    # the incremental validation continues 0.1.0's state: today's copies of yesterday's messages are duplicates
    publish(vhost, "billing.events", "billing.invoice.issued.v2", [*sent[:COPIED], *traffic(catalog, COPIED + 3)[-2:]])
    new.run("archive", "--exchange", "billing.events", "--root", str(archive), "--catalog", str(catalog))
    days = sorted(p.name for p in (archive / "billing.events").glob("date=*"))
    today = yesterday + timedelta(days=1)
    assert days == [f"date={yesterday}", f"date={today}"], f"{days}: the test ran across midnight (UTC)?"
    report = new.validate(archive, today, tmp_path / "new-report.json")
    assert report["interval"]["state_from"] == str(yesterday), report["interval"]  # 0.1.0's ordering state
    assert report["interval"]["rebuilt"] == [], report["interval"]  # 0.1.0's first copies, not the archive's
    assert report["interval"]["incomplete"] == {"duplicates": [], "ordering": []}, report["interval"]
    assert report["totals"]["records"] == COPIED + 2, report["totals"]
    assert report["by_reason"]["DUPLICATE"] == COPIED and report["by_reason"]["CONFLICTING_DUPLICATE"] == 0
    assert report["by_type"][VALIDATED]["by_reason"] == {"DUPLICATE": COPIED}, report["by_type"]
    # yesterday's archive, read by 0.2.0 (on a state of its own, so 0.1.0's is left as it was), has 0.1.0's totals
    again_report = new.validate(archive, yesterday, tmp_path / "again-report.json", "--state", str(tmp_path / "state"))
    for key in ("totals", "by_reason", "by_type", "window"):
        assert kept(old_report[key], again_report[key]), (key, old_report[key], again_report[key])
