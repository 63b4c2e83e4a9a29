"""Serve the platform in a real Airflow: scheduler, dag-processor, triggerer and api-server.

    bash scripts/airflow-local [--port 8080] [--host 127.0.0.1]

Beside the main job (``bash scripts/main-job``) and on the same data: the same ``AIRFLOW_HOME``,
registry, archives and working catalogue under ``./data``; the repository's ``dags/`` and the
platform's plugin; examples off; the platform's connections exported as ``AIRFLOW_CONN_*`` for every
component (``contract_platform_airflow.settings``, the one definition); Airflow's metadata in a
PostgreSQL database of the data folder's own (``contract_platform_airflow_<folder>_<hash>`` on the local
server, ``settings.default_metadata_url``, created when missing; the previous release's
``contract_platform_airflow`` renamed to it or kept, never hidden, and the serve command says which
(``metadata_db``); ``$CONTRACT_AIRFLOW_DB_URL`` names another; SQLite, with a warning, only when PostgreSQL does not
answer), set as ``AIRFLOW__DATABASE__SQL_ALCHEMY_CONN`` for every component; the venv on ``PATH`` (the
standalone command starts its components by name). It prints the URL and the admin login, starts the
broker activity recorder (``contractctl record-activity``, which the retirement audit's ``readers``
check rests on; it stops with Airflow), then runs ``airflow standalone`` (LocalExecutor) until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path

from contract_platform_airflow.metadata_db import MetadataDatabaseNotAdopted
from contract_platform_airflow.settings import (
    AIRFLOW_DB_URL_VARIABLE,
    SQL_ALCHEMY_CONN,
    MetadataDatabase,
    airflow_environment,
    apply,
    ensure_pools,
    main_job_catalog,
    metadata_database,
)

ROOT = Path.cwd()
ADMIN = "admin"


def local_address(host: str) -> str:
    """Where this machine reaches an api-server listening on ``host``."""
    return "127.0.0.1" if host in ("0.0.0.0", "127.0.0.1", "localhost", "") else host


def serve_environment(root: Path, port: int, host: str = "127.0.0.1") -> dict[str, str]:
    """The components' environment: the platform's settings plus the api port and the venv on PATH."""
    data = Path(os.environ.get("CONTRACT_PLATFORM_HOME") or root / "data").resolve()
    demo = main_job_catalog(data)
    catalog = Path(os.environ.get("CONTRACT_CATALOG") or (demo if demo.is_dir() else root / "contracts"))
    env = apply(airflow_environment(root, data=data, catalog=catalog))
    # The command line wins here. Task processes report to the api-server's execution API, so its URL
    # must follow the port (else tasks die with "Connection refused").
    listen = {
        "AIRFLOW__API__HOST": host,
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://{local_address(host)}:{port}/execution/",
    }
    os.environ.update(listen)
    env.update(listen)
    venv_bin = str(Path(sys.executable).parent)
    if venv_bin not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = venv_bin + os.pathsep + os.environ.get("PATH", "")
    return env


def use_metadata_database(env: dict[str, str]) -> MetadataDatabase:
    """Choose Airflow's metadata DB (``settings.metadata_database``) and set it for every component."""
    data = env.get("CONTRACT_PLATFORM_HOME")
    database = metadata_database(Path(env["AIRFLOW_HOME"]), data=Path(data) if data else None)
    os.environ[SQL_ALCHEMY_CONN] = env[SQL_ALCHEMY_CONN] = database.url
    # Airflow 3 replaces the first inside a task; the housekeeping DAG's airflow db clean reads this one there.
    env[AIRFLOW_DB_URL_VARIABLE] = database.url
    return database


def admin_password(airflow_home: Path) -> str:
    """The admin's password for SimpleAuthManager: the one generated earlier, else a new one."""
    path = Path(
        os.environ.get("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE")
        or airflow_home / "simple_auth_manager_passwords.json.generated"
    )
    passwords: dict[str, str] = {}
    if path.exists():
        try:
            passwords = json.loads(path.read_text("utf-8") or "{}")
        except json.JSONDecodeError:
            raise SystemExit(f"{path} is not JSON; delete it and a new admin password is generated") from None
    if not passwords.get(ADMIN):
        passwords[ADMIN] = secrets.token_urlsafe(12)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(passwords), "utf-8")
        path.chmod(0o600)
    return passwords[ADMIN]


def migrate() -> None:
    result = subprocess.run(["airflow", "db", "migrate"], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"airflow db migrate failed:\n{result.stderr[-3000:]}")
    ensure_pools()


def describe(env: dict[str, str], address: str, password: str) -> str:
    from contract_platform.settings import redact_url

    conns = {k[len("AIRFLOW_CONN_") :].lower(): json.loads(v) for k, v in env.items() if k.startswith("AIRFLOW_CONN_")}
    spark = conns.get("spark_default", {}).get("host", "?")
    registry = redact_url(str(conns.get("contract_registry_default", {}).get("extra", {}).get("url", "?")))
    broker = conns.get("rabbitmq_default", {})
    return (
        "Contract Lifecycle Platform — Airflow (scheduler, dag-processor, triggerer, api-server; LocalExecutor)\n"
        f"  UI:          {address}/  (Contracts page: {address}/plugin/contracts)\n"
        f"  login:       {ADMIN} / {password}\n"
        f"  AIRFLOW_HOME {env['AIRFLOW_HOME']}\n"
        f"  metadata DB: {redact_url(env.get(SQL_ALCHEMY_CONN, '?'))}\n"
        f"  DAGs:        {env['AIRFLOW__CORE__DAGS_FOLDER']} (examples off)\n"
        f"  data:        {env['CONTRACT_PLATFORM_HOME']}\n"
        f"  catalogue:   {env['CONTRACT_CATALOG']}\n"
        f"  connections: spark_default={spark}  rabbitmq_default={broker.get('host')}:{broker.get('port')}"
        f"/{broker.get('schema')}  contract_registry_default={registry}\n"
        "  Ctrl-C stops every component.\n"
    )


def start_recorder(log: Path) -> Path:
    """``contractctl record-activity`` as a child that gets SIGTERM when this process (soon Airflow) ends.

    Its log goes to ``log``, which the recorder rotates (``--log-file``); its output (a start-up error, the
    summary when it stops) to ``log`` with the suffix ``.out``, emptied at each start: neither grows with time."""
    log.parent.mkdir(parents=True, exist_ok=True)

    def die_with_parent() -> None:  # Linux: the child is told when its parent exits, whatever the parent runs
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    with log.with_suffix(".out").open("wb") as output:
        subprocess.Popen(  # our own console script, no shell
            [str(Path(sys.executable).with_name("contractctl")), "record-activity", "--log-file", str(log)],
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,  # before exec: only the prctl call
        )
    return log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="airflow-local", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080, help="the api-server's port (default 8080)")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address the api-server listens on (default 127.0.0.1: this machine only)",
    )
    args = parser.parse_args(argv)
    env = serve_environment(ROOT, args.port, args.host)
    Path(env["AIRFLOW_HOME"]).mkdir(parents=True, exist_ok=True)
    try:
        database = use_metadata_database(env)
    except MetadataDatabaseNotAdopted as exc:  # starting would hide the previous release's runs
        raise SystemExit(f"ERROR: {exc}") from None
    if database.warning:
        print(f"WARNING: {database.warning}", file=sys.stderr, flush=True)
    if database.notice:
        print(database.notice, flush=True)
    print(f"preparing Airflow's metadata DB{' (created)' if database.created else ''} ...", flush=True)
    migrate()
    password = admin_password(Path(env["AIRFLOW_HOME"]))
    print(describe(env, f"http://{local_address(args.host)}:{args.port}", password), flush=True)
    log = start_recorder(Path(env["AIRFLOW_HOME"]).parent / "logs" / "activity-recorder.log")
    print(f"broker activity recorder: running beside Airflow (log {log})", flush=True)
    os.execvp("airflow", ["airflow", "standalone"])
    return 0  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
