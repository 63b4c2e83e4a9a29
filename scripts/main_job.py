"""The main job: the platform's lifecycle on embedded defaults, through the real DAGs.

    bash scripts/main-job            (what the README's first command runs)

Everything lives under ./data (SQLite registry, Airflow's SQLite DB, archives, reports, docs);
RabbitMQ is the local broker. The console shows one line per step and a summary; what a step
prints (Airflow task logs, Spark output and JSON reports, Great Expectations) goes to that step's
file under ./data/logs/main-job/<run>/, and each distinct warning is listed once in the summary. Running
it again is safe: every step is idempotent and the lifecycle only moves forward.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path.cwd()


def configure_environment(root: Path) -> dict[str, str]:
    """The platform's Airflow settings (``settings.airflow_environment``, shared with ``scripts/airflow-local``
    and the tests); anything already set in the environment wins. Must run before Airflow is imported."""
    from contract_platform_airflow.settings import airflow_environment, apply

    env = apply(airflow_environment(root))
    Path(env["AIRFLOW_HOME"]).mkdir(parents=True, exist_ok=True)
    return env


_NOTES: list[str] = []


def note(text: str) -> None:
    """What the current step found, shown on its one console line (``Progress.step``)."""
    _NOTES.append(text)


@contextlib.contextmanager
def console_to(path: Path) -> Iterator[None]:
    """Send everything written to file descriptors 1 and 2 to ``path``: this process's ``sys.stdout`` and
    ``sys.stderr`` write there, child processes inherit them. The stream objects themselves stay: Airflow's
    logging keeps the ``sys.stdout`` it found, and must keep writing after the step to wherever fd 1 goes."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with path.open("ab") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


# A warning line in a step's log: Airflow's (structlog) "[warning ] text [logger] ...", Spark's (log4j)
# "yy/mm/dd hh:mm:ss WARN Class: text", Python's "file:line: SomeWarning: text".
WARNING_LINE = re.compile(
    r"\[warning\s*\]\s*(?P<airflow>.*?)(?:\s+\[[\w.]+\](?:\s.*)?)?$"
    r"|\bWARN(?:ING)?\b:?\s+(?P<other>.*?)(?:\s+\[[\w.]+\]\s+loc=.*)?$"
    r"|\b(?P<python>[A-Z]\w*Warning: .*)$"
)


# Lines that say WARNING but ask nothing of anyone; they stay in the step logs, out of the summary. The JVM
# announces the incubating vector API, which Spark 4 itself asks for (nothing to change or install).
NOTICES = frozenset({"Using incubator modules: jdk.incubator.vector"})


class WarningsOnce:
    """Every distinct warning the steps wrote to their logs, once, in the order first seen (``NOTICES`` aside)."""

    def __init__(self) -> None:
        self.seen: dict[str, None] = {}

    def scan(self, log: Path) -> None:
        with contextlib.suppress(OSError), log.open(errors="replace") as lines:
            for line in lines:
                if (found := WARNING_LINE.search(line.rstrip())) is not None:
                    text = " ".join((found["airflow"] or found["other"] or found["python"] or "").split())
                    if text and text not in NOTICES:
                        self.seen.setdefault(text[:200])


class Progress:
    """One console line per step with elapsed time; the step's own output goes to ``<logs>/NN-<step>.log``."""

    def __init__(self, total: int, logs: Path) -> None:
        self.total = total
        self.index = 0
        self.started = time.monotonic()
        self.logs = logs
        self.warnings = WarningsOnce()

    def step(self, title: str, action: Callable[[], Any]) -> Any:
        self.index += 1
        began = time.monotonic()
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{self.index:02d}-{re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')[:60]}.log"
        print(f"[{self.index}/{self.total}] {title}", end="", flush=True)
        _NOTES.clear()
        try:
            with console_to(log):
                result = action()
        except BaseException:
            print(f" — FAILED after {time.monotonic() - began:.1f}s (log: {log})", flush=True)
            raise
        finally:
            self.warnings.scan(log)
        found = f": {'; '.join(_NOTES)}" if _NOTES else ""
        print(f"{found} ({time.monotonic() - began:.1f}s, total {time.monotonic() - self.started:.1f}s)", flush=True)
        return result


def migrate_airflow_db() -> None:
    airflow = Path(sys.executable).parent / "airflow"
    result = subprocess.run([str(airflow), "db", "migrate"], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"airflow db migrate failed:\n{result.stderr[-3000:]}")


_DAGS: dict[str, Any] = {}


def dags() -> dict[str, Any]:
    """The DAGs folder, parsed once per run: every DAG's shape is fixed when its file is parsed (what a task reads
    of the catalogue, it reads when it runs), so each step tests the same DAG objects instead of parsing every DAG
    file again. ``dag.test()`` still writes the folder's DAGs to the metadata DB first, as the Airflow UI shows them."""
    if not _DAGS:
        from airflow.dag_processing.dagbag import DagBag

        bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
        if bag.import_errors:
            raise SystemExit(f"DAGs do not import: {bag.import_errors}")
        _DAGS.update(bag.dags)
    return _DAGS


def run_dag(dag_id: str, conf: dict[str, Any] | None = None) -> Any:
    import logging

    logging.getLogger("pika").setLevel(logging.WARNING)
    dag_run = dags()[dag_id].test(run_conf=conf)
    failed = [ti.task_id for ti in dag_run.get_task_instances() if str(ti.state) == "failed"]
    print(f"{dag_id}: {dag_run.state} (run {dag_run.run_id})")
    note(f"{dag_run.state}{' — failed: ' + ', '.join(failed) if failed else ''}")
    return dag_run


def check_catalog() -> dict[str, Any]:
    from contract_platform import settings
    from contract_platform.catalog import load_catalog
    from contract_platform.checks import check_catalog as check
    from contract_platform.docs import write_docs

    catalog = load_catalog()
    report = check(catalog)
    pages = write_docs(catalog, settings.docs_dir() / "contracts")
    note(f"{report.contracts} contracts, {len(report.findings)} lint findings, {len(pages)} docs pages")
    return {"catalog": catalog, "ok": report.ok()}


def prepare_demo_catalog(root: Path, target: Path) -> Path:
    """A working copy of the catalogue, changed later the way a platform team changes it in a pull request.

    The real ``contracts/`` is never modified. The copy is made once; a re-run keeps its state.
    """
    import shutil

    if not target.exists():
        shutil.copytree(root / "contracts", target)
        note(f"copied contracts/ to {target}")
    else:
        note(f"{target} from an earlier run")
    return target


def declare_retired(catalog_dir: Path, message_type: str) -> None:
    """The demo's pull request: declare the old major retired, with windows short enough to pass today.

    A real catalogue keeps days (retention 14d, three zero-consumer audits over 7 days); the demo
    shortens them to seconds so the whole lifecycle completes in one run, and says so.
    """
    domain, name, major = message_type.split(".")
    path = catalog_dir / domain / name / major / "contract.yaml"
    text = path.read_text()
    if "status: retired" in text:
        return
    text = text.replace("status: deprecated", "status: retired")
    text = re.sub(r"retention: \{[^}]*\}", "retention: {queue: 1s, dlq: 1s, archive: 90d}", text)
    demo = "retirement: {observations: 2, observationSpan: 1s, evidenceFreshness: 1d}  # demo: seconds, not days"
    text = (
        re.sub(r"^retirement: .*$", demo, text, flags=re.MULTILINE)
        if "\nretirement:" in text
        else text + "\n" + demo + "\n"
    )
    path.write_text(text)
    note(f"{message_type} declared retired (demo windows: retention 1s, 2 audits)")


REPLAYED = "order.order-created.v1"


def replay_pull_request(catalog_dir: Path, work: Path) -> dict[str, Any]:
    """A pull request that makes one payload pattern stricter, checked by ``contractctl check --replay``.

    The copy's orderId pattern no longer accepts leading zeros or short numbers, a change the engine
    cannot decide; the contract opts in to evidence, so the archived traffic decides (docs/replay.md).
    The working catalogue itself is left as it is.
    """
    import json
    import shutil

    import yaml

    from contract_platform import settings

    shutil.rmtree(work, ignore_errors=True)
    folder = Path(shutil.copytree(catalog_dir, work)) / Path(*REPLAYED.split("."))
    schema = json.loads((folder / "payload.schema.json").read_text(encoding="utf-8"))
    schema["properties"]["orderId"]["pattern"] = "^ord-[1-9][0-9]{4,}$"
    (folder / "payload.schema.json").write_text(json.dumps(schema, indent=2), encoding="utf-8")
    contract = yaml.safe_load((folder / "contract.yaml").read_text(encoding="utf-8"))
    major, minor, _ = (int(part) for part in contract["version"].split("."))
    contract["version"] = f"{major}.{minor + 1}.0"
    contract["compatibility"] = {"mode": "BACKWARD", "tightening": "evidence", "minMessages": 100}
    (folder / "contract.yaml").write_text(yaml.safe_dump(contract, sort_keys=False), encoding="utf-8")
    command = [sys.executable, "-m", "contract_platform.cli.main", "check", str(work), "--format", "json"]
    done = subprocess.run([*command, "--replay", str(settings.archive_dir())], capture_output=True, text=True)
    print(done.stderr, file=sys.stderr)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        note(f"contractctl check --replay ended with exit code {done.returncode} and no report (see the step log)")
        return {"ok": False, "replay": []}
    shown = [r for r in report.get("replay", []) if r["messageType"] == REPLAYED]
    said = pull_request_statement(report)
    if said is not None:
        note(said)
    return {"ok": done.returncode == 0, "replay": shown, "statement": said}


def pull_request_statement(report: dict[str, Any]) -> str | None:
    """What ``contractctl check`` says of the replayed version, for the step's one console line: which evidence
    decided, and what the consumers' reads and their archived messages each showed (``replay.statement``)."""
    for entry in report.get("compatibility", []):
        if entry["messageType"] == REPLAYED and entry.get("statement"):
            versions = [r["version"] for r in report.get("replay", []) if r["messageType"] == REPLAYED]
            return f"{' '.join([REPLAYED, *versions[:1]])}: {entry['statement']['headline']}"
    return None


@contextlib.contextmanager
def reporting(counters: Any, bundle: Any) -> Iterator[None]:
    """A service's runtime evidence while it runs (docs/service-client.md): its guard's counters handed to the
    registry by an ``EvidenceReporter``, the last period when it stops; the Contracts page shows them under
    "Validation at services' boundaries"."""
    from contract_platform.client import EvidenceReporter, registry_sink
    from contract_platform.store import SqlRegistry

    registry = SqlRegistry.open()
    reporter = EvidenceReporter([counters], registry_sink(registry, bundle), interval=5.0).start()
    try:
        yield
    finally:
        reporter.stop()
        registry.close()


def publish_traffic(per_type: int) -> dict[str, int]:
    """The producer side: sample traffic for every version that is live, through the service client's guarded
    publisher (docs/service-client.md): each envelope checked before it leaves, confirms in flight."""
    from contract_platform.catalog import load_catalog
    from contract_platform.client import GuardedPublisher
    from contract_platform.client.bundle import bundle_from_document
    from contract_platform.export.bundle import export_bundle
    from contract_platform.settings import rabbitmq_url
    from contract_platform.store import SqlRegistry
    from contract_platform.traffic import sample_envelopes

    catalog = load_catalog()
    registry = SqlRegistry.open()
    try:
        live = []
        for contract in catalog:
            state = registry.effective(contract.message_type)
            # v2 of a migrating message is produced by the bridge, not by its producer.
            bridged = catalog.predecessor(contract) is not None
            if state is not None and str(state.status) in ("experimental", "active") and not bridged:
                live.append(contract.message_type)
    finally:
        registry.close()
    sent: dict[str, int] = {}
    if live:
        bundle = bundle_from_document(export_bundle(catalog, message_types=live), "the main job's producers")
        with (
            GuardedPublisher(bundle, rabbitmq_url(), connection_name="main job producers") as publisher,
            reporting(publisher.counters, bundle),  # what the producers' guard checked, as runtime evidence
        ):
            for message_type in live:
                envelopes = list(sample_envelopes(catalog.contracts[message_type], per_type))
                sent[message_type] = len(publisher.publish_many(envelopes))
    print("\n".join(f"{t}: {n}" for t, n in sent.items()))  # the step's log
    note(f"{sum(sent.values())} messages to {len(sent)} versions")
    return sent


def consume_queues() -> dict[str, int]:
    """The consumer side: each declared consumer reads what waits in its queues through the service client's
    guarded consumer (docs/service-client.md), as the versions its bundle says it consumes."""
    from contract_platform.amqp import open_connection
    from contract_platform.amqp.connection import close_quietly
    from contract_platform.amqp.inspection import passive_queue
    from contract_platform.catalog import load_catalog
    from contract_platform.client import GuardedConsumer
    from contract_platform.client.bundle import bundle_from_document
    from contract_platform.errors import UsageError
    from contract_platform.export.bundle import export_bundle
    from contract_platform.settings import rabbitmq_url

    catalog = load_catalog()
    waiting: dict[str, list[str]] = {}
    connection = open_connection()
    try:
        for contract in catalog:
            for consumer in contract.consumers:
                counts = passive_queue(connection, consumer.queue)
                if counts is not None and counts[0] > 0:
                    waiting.setdefault(consumer.service, []).append(consumer.queue)
    finally:
        close_quietly(connection)
    read: dict[str, int] = {}
    refused: dict[str, int] = {}
    for service, queues in sorted(waiting.items()):
        try:
            bundle = bundle_from_document(export_bundle(catalog, service=service), f"{service}'s bundle")
        except UsageError:
            continue  # every version it reads is retired
        owned = {c.queue for t in bundle.consumes() for c in bundle.catalog.contracts[t].consumers}
        handled = [0]

        def count(_message: Any, handled: list[int] = handled) -> None:
            handled[0] += 1

        mine = [queue for queue in queues if queue in owned]
        if not mine:
            continue
        guarded = GuardedConsumer(bundle, rabbitmq_url(), queues=mine, connection_name=f"{service} (main job)")
        for message_type in bundle.consumes():
            guarded.on(message_type, count)
        with reporting(guarded.counters, bundle):  # what its guard checked, on the Contracts page
            guarded.run(idle_timeout=0.5)
        if handled[0]:
            read[service] = handled[0]
        dead = sum(guarded.stats.dead_lettered.values()) + guarded.stats.rejected_to_broker
        if dead:
            refused[service] = dead
    for service in sorted(read.keys() | refused.keys()):  # the step's log
        print(
            f"{service}: {read.get(service, 0)}" + (f", {refused[service]} dead-lettered" if service in refused else "")
        )
    note(f"{sum(read.values())} messages by {len(read)} services" if read else "nothing waiting")
    return read


def evidence_summary() -> list[str]:
    from contract_platform.catalog import load_catalog
    from contract_platform.store import SqlRegistry

    lines = []
    registry = SqlRegistry.open()
    try:
        for contract in load_catalog():
            parts = []
            for kind, keys in (
                ("archive_validation", ("total", "invalid")),
                ("envelope_quality", ("evaluated", "failed")),
                ("migration_parity", ("parity", "missing", "lag_p99_ms")),
                ("retirement_audit", ("failed_checks",)),
                ("runtime_validation", ("checked", "rejected")),
            ):
                record = registry.latest_evidence(contract.message_type, kind)
                if record is not None:
                    figures = ", ".join(f"{k}={record.figures.get(k)}" for k in keys if k in record.figures)
                    parts.append(f"{kind} {record.verdict} ({figures})")
            lines.append(f"  {contract.message_type}: " + ("; ".join(parts) if parts else "no evidence"))
    finally:
        registry.close()
    return lines


def states() -> list[dict[str, Any]]:
    from contract_platform.catalog import load_catalog
    from contract_platform.status import overview
    from contract_platform.store import SqlRegistry

    registry = SqlRegistry.open()
    try:
        return overview(load_catalog(), registry)
    finally:
        registry.close()


def print_states(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n{title}")
    width = max(len(r["messageType"]) for r in rows)
    for r in rows:
        mark = "" if r["inSync"] else "   <- " + (r["lastRefusal"] or "not reconciled yet")[:110]
        print(
            f"  {r['messageType']:<{width}}  declared {r['declared']:<11} effective {r['effective'] or '-':<12}{mark}"
        )


def serve_command(data: Path) -> str:
    """The command that serves this run's data in a real Airflow; it runs from the checkout, so it is told
    where the data is unless that is the checkout's own ``data/``."""
    checkout = Path(__file__).resolve().parents[1]
    command = "bash scripts/airflow-local"
    return command if data.resolve() == checkout / "data" else f"CONTRACT_PLATFORM_HOME={data.resolve()} {command}"


def where_to_serve(data: Path) -> str:
    """The summary's Airflow lines: the serve command alone on its line (to copy), what it does on the next."""
    return (
        "  Airflow UI:\n"
        f"    {serve_command(data)}\n"
        "    serves this data in a real Airflow (scheduler, dag-processor, triggerer, api-server) and prints the\n"
        "    admin login; then open http://localhost:8080/ -> Browse -> Contracts"
    )


OLD, NEW = "billing.invoice-issued.v1", "billing.invoice-issued.v2"


def management_api_problem() -> str | None:
    """What stops the retirement audit before anything runs: the broker's management API or its event exchange
    (None: both answer)."""
    from contract_platform.amqp.management import management_client_for_url, probe_management
    from contract_platform.settings import rabbitmq_url

    return probe_management(management_client_for_url(rabbitmq_url()), event_exchange=True)


class RecorderDidNotStart(RuntimeError):
    """The broker activity recorder exited or confirmed nothing within a minute."""


RECORDER_HEARTBEAT = "1s"  # the demo's observation span is seconds: the recorder confirms coverage every second


RECORDERS = 2  # an active recorder and a standby on the same queue (docs/retirement-audit.md)


class ActivityRecorders:
    """``contractctl record-activity`` processes beside the whole run, as production runs them: one active,
    the others standing by on the same queue. ``restart_one`` stops one with SIGTERM and starts it again,
    as a deploy does; coverage must go on without a gap (what the retirement of v1 later rests on)."""

    def __init__(self, log: Path) -> None:
        from datetime import UTC, datetime

        self.log = log
        self.processes: list[subprocess.Popen[bytes]] = []
        self.began = datetime.now(UTC)

    def start(self) -> subprocess.Popen[bytes]:
        contractctl = Path(sys.executable).with_name("contractctl")
        with self.log.open("ab") as output:
            process = subprocess.Popen(
                [str(contractctl), "record-activity", "--heartbeat", RECORDER_HEARTBEAT],
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        self.processes.append(process)
        return process

    def wait_covering(self, since: Any, timeout: float = 60) -> None:
        from contract_platform.settings import registry_url
        from contract_platform.store import SqlRegistry

        with SqlRegistry.open(registry_url()) as registry:
            deadline = time.monotonic() + timeout
            while not _covering(registry, since):
                if all(p.poll() is not None for p in self.processes) or time.monotonic() > deadline:
                    tail = self.log.read_text(errors="replace")[-600:]
                    raise RecorderDidNotStart(f"the broker activity recorder did not start (see {self.log}): {tail}")
                time.sleep(0.2)

    def restart_one(self) -> dict[str, Any]:
        """SIGTERM the recorder started first (the active one, unless it was replaced), start it again, and
        report the gaps the store holds since the job began: none when the restart lost nothing."""
        from datetime import UTC, datetime

        from contract_platform.settings import registry_url
        from contract_platform.store import SqlRegistry

        stopped = self.processes.pop(0)
        stopped.send_signal(signal.SIGTERM)
        stopped.wait(timeout=30)
        restarted = datetime.now(UTC)
        self.start()
        time.sleep(2.5)  # two heartbeats of the demo's recorder (1 s): the standby or the new one confirms
        self.wait_covering(restarted)
        with SqlRegistry.open(registry_url()) as registry:
            gaps = registry.coverage(self.began)[1]
        note(f"recorder {stopped.pid} restarted, {len(self.processes)} running, {len(gaps)} gaps in coverage")
        return {"restarted": stopped.pid, "running": len(self.processes), "gaps": len(gaps)}

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


@contextlib.contextmanager
def activity_recorders(log: Path) -> Iterator[ActivityRecorders]:
    """The recorders beside the whole run: retirement rests on what they record.

    They start before the lifecycle, so every reader of v1 (consumers, the bridge) is recorded, and stop
    (SIGTERM: the active one confirms its last coverage) when the job ends. Their output goes to ``log``.
    """
    os.environ["CONTRACT_RECORDER_HEARTBEAT"] = RECORDER_HEARTBEAT  # the audits wait for it accordingly
    log.parent.mkdir(parents=True, exist_ok=True)
    recorders = ActivityRecorders(log)
    try:
        for _ in range(RECORDERS):
            recorders.start()
        recorders.wait_covering(recorders.began)
        yield recorders
    finally:
        recorders.stop()


def _covering(registry: Any, since: Any) -> bool:
    from contract_platform.retirement.readers import confirmed_until

    reached = confirmed_until(registry.coverage(since)[0])
    return reached is not None and reached >= since


def lifecycle_verdict(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """(complete, one line): the lifecycle this job demonstrates ends with the old major retired."""
    old = next((r for r in rows if r["messageType"] == OLD), None)
    new = next((r for r in rows if r["messageType"] == NEW), None)
    if old is not None and old["effective"] == "retired":
        return True, f"VERDICT: lifecycle complete: {OLD} retired, {NEW} {new['effective'] if new else '?'}"
    state = old["effective"] if old else "not in the catalogue"
    why = (old or {}).get("lastRefusal") or "no refusal recorded; see the retirement_audit report"
    return False, f"VERDICT: lifecycle NOT complete: {OLD} is {state}, not retired ({why[:300]})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="main-job", description=__doc__.splitlines()[1])
    parser.add_argument("--messages", type=int, default=200, help="sample messages per contract version (default 200)")
    args = parser.parse_args(argv)
    from contract_platform_airflow.settings import main_job_catalog

    home = Path(os.environ.get("CONTRACT_PLATFORM_HOME") or ROOT / "data")
    os.environ.setdefault("CONTRACT_CATALOG", str(main_job_catalog(home)))
    env = configure_environment(ROOT)
    from contract_platform.settings import redact_url, registry_url

    data = Path(env["CONTRACT_PLATFORM_HOME"])
    print(
        "Contract Lifecycle Platform — main job\n"
        f"  data: {data}\n  catalogue: {env['CONTRACT_CATALOG']} (a working copy of contracts/)\n"
        f"  registry: {redact_url(registry_url())}"
    )
    problem = management_api_problem()  # the retirement audit cannot pass without it: say so before anything runs
    if problem is not None:
        print(f"\nVERDICT: not started: {problem}", file=sys.stderr)
        return 3
    logs = data / "logs" / "main-job" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    try:
        with activity_recorders(data / "logs" / "activity-recorder" / f"{logs.name}.log") as recorders:
            return _lifecycle(args, env, data, logs, recorders)
    except RecorderDidNotStart as exc:
        print(f"\nVERDICT: not started: {exc}", file=sys.stderr)
        return 3


def _lifecycle(
    args: argparse.Namespace, env: dict[str, str], data: Path, logs: Path, recorders: ActivityRecorders
) -> int:
    """Every step of the main job, with the broker activity recorders running."""
    progress = Progress(total=20, logs=logs)
    progress.step("prepare Airflow's metadata DB (SQLite)", migrate_airflow_db)
    progress.step("prepare the working catalogue", lambda: prepare_demo_catalog(ROOT, Path(env["CONTRACT_CATALOG"])))
    before = states()
    if not progress.step("check the catalogue and write its docs", check_catalog)["ok"]:
        print("the catalogue has problems: run `contractctl check` for details", file=sys.stderr)
        return 1
    runs: list[Any] = []

    def dag(title: str, dag_id: str, conf: dict[str, Any] | None = None) -> None:
        runs.append(progress.step(title, lambda: run_dag(dag_id, conf)))

    migration = {"migration": NEW, "mode": "bridge"}
    dag("contract_change: lint, compatibility, topology, lifecycle", "contract_change")
    dag(f"dual_publish_migration: start the bridge {OLD} -> v2", "dual_publish_migration", migration)
    progress.step(
        f"producers publish sample traffic ({args.messages} per live version)", lambda: publish_traffic(args.messages)
    )
    progress.step("consumers read their queues", consume_queues)
    progress.step("restart a broker activity recorder, as a deploy does (the standby records)", recorders.restart_one)
    dag("topic_archive_validation: archive and validate (Spark)", "topic_archive_validation")
    progress.step(
        f"pull request: a stricter pattern for {REPLAYED}, replayed against its traffic",
        lambda: replay_pull_request(Path(env["CONTRACT_CATALOG"]), data / "pull-request" / "contracts"),
    )
    dag("envelope_quality: Great Expectations on Spark; promote", "envelope_quality")
    dag("dual_publish_migration: bridge the v1 traffic, parity (Spark)", "dual_publish_migration", migration)
    progress.step("consumers read the bridged v2 messages", consume_queues)
    dag("topic_archive_validation: the v2 traffic", "topic_archive_validation")
    dag("envelope_quality: the v2 traffic; promote v2", "envelope_quality")
    dag("dual_publish_migration: parity holds; v1 superseded, then deprecated", "dual_publish_migration", migration)
    progress.step(f"pull request: declare {OLD} retired", lambda: declare_retired(Path(env["CONTRACT_CATALOG"]), OLD))
    dag("contract_change: the retirement declaration", "contract_change")
    dag("retirement_audit: first observation, blockers recorded", "retirement_audit")
    time.sleep(1.5)  # the demo's observation span is 1s: no reader of v1 in it, as the recorder proves
    dag("retirement_audit: second observation; retire where proven", "retirement_audit")
    after = states()
    print_states("Before:", before)
    print_states("After:", after)
    print("\nEvidence (latest):")
    print("\n".join(evidence_summary()))
    failed = [r.dag_id for r in runs if str(r.state) != "success"]
    print(
        "\nWhere to look:\n"
        f"{where_to_serve(data)}\n"
        f"  quality:     {data / 'gx' / 'uncommitted' / 'data_docs' / 'local_site' / 'envelope_quality.html'}"
        "   (envelope quality results on one page; opens offline)\n"
        f"  Data Docs:   {data / 'gx' / 'uncommitted' / 'data_docs' / 'local_site' / 'index.html'}"
        "   (Great Expectations' site; opens offline, its scripts and styles are in static/vendor)\n"
        f"  reports:     {data / 'reports'}\n"
        f"  step logs:   {logs}   (Airflow task logs, Spark output and JSON reports, one file per step)\n"
        f"  recorder:    {data / 'logs' / 'activity-recorder' / (logs.name + '.log')}   (the broker activity recorder)\n"
        f"  contract docs: {data / 'docs' / 'contracts' / 'index.md'}; retirement: {data / 'docs' / 'retirement'}\n"
        f"  status:      CONTRACT_PLATFORM_HOME={data} .venv/bin/contractctl status --catalog {env['CONTRACT_CATALOG']}\n"
        "\nWhere each feature shows (the Airflow UI, Browse -> Contracts, one contract's page):\n"
        "  lifecycle and refusals: the page's history; compatibility and lint: the contract_change runs' evidence\n"
        "  archive validation, envelope quality: the evidence table, and the quality page above\n"
        "  services' runtime evidence: 'Validation at services' boundaries' (the guarded producers and consumers\n"
        "    of this run reported what their guards checked)\n"
        f"  the v1 -> v2 migration: parity, and per consumer what it must change and whether it moved (also\n"
        f"    contractctl migration status {NEW})\n"
        f"  readers and the retirement of {OLD}: the audit's checks, the reader timeline, the recorder's health\n"
        "    (also contractctl audit and contractctl record-activity --status)"
    )
    if progress.warnings.seen:
        print(f"\nWarnings ({len(progress.warnings.seen)}, each once; in context in the step logs):")
        for text in list(progress.warnings.seen)[:12]:
            print(f"  {text}")
        if len(progress.warnings.seen) > 12:
            print(f"  ... and {len(progress.warnings.seen) - 12} more")
    if failed:
        print(f"\nDAG runs that failed: {', '.join(failed)} (see the run logs under {env['AIRFLOW_HOME']}/logs)")
    complete, verdict = lifecycle_verdict(after)
    print(f"\n{verdict}{'; but DAG runs failed: ' + ', '.join(failed) if complete and failed else ''}")
    return 0 if complete and not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
