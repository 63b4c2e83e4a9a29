"""The served Airflow's metadata DB: which database, made when missing, and the previous release's one kept.

``metadata_database`` chooses: ``AIRFLOW__DATABASE__SQL_ALCHEMY_CONN`` already set wins (a deployment chose);
else ``$CONTRACT_AIRFLOW_DB_URL``; else the data folder's own PostgreSQL database on the local server,
``contract_platform_airflow_<folder>_<hash of its path>`` (``default_metadata_url``), so two checkouts or two
data folders never see each other's runs; SQLite only when PostgreSQL does not answer, with a warning that
says why (four components writing one SQLite file answer HTTP 500 when a write waits out its lock).

Releases up to 0.1.0 kept every data folder's metadata in one database, ``contract_platform_airflow``
(``LEGACY_NAME``). Starting the folder's own database empty beside it would hide every earlier DAG run after
an upgrade in place. So when the folder's own database does not exist yet and that one does,
``adopt_previous`` gathers two facts, how many DAG runs it holds and how many of them left their task logs
in this data folder (Airflow writes ``<logs>/dag_id=<dag>/run_id=<run>/...``; the folder's ``airflow/logs``
is where the old release's served Airflow wrote them), and ``decide`` judges:

===========================================  =============================================================
the previous release's database holds         what the serve command does (and prints)
===========================================  =============================================================
runs whose task logs are in this folder       RENAME: ``ALTER DATABASE ... RENAME`` to the folder's name
runs, none of them logged here                KEEP: use it under its old name; say how to choose otherwise
no run (or no Airflow tables)                 LEAVE: create the folder's own beside it; say so
===========================================  =============================================================

Why rename rather than keep when the runs are provably this folder's: the rename is one statement in one
transaction, all or nothing, that copies nothing and keeps every row; PostgreSQL refuses it while any session
is connected, which is exactly when starting would be wrong (the previous release's Airflow still serving it),
and then nothing is changed and the command stops, saying what to do. Kept under the shared name, the
database would stay open to any other folder that cannot tell whose runs it holds, the sharing the per-folder
name ended. A renamed database carries a comment naming the folder that took it (``\\l+`` in psql), and a folder
whose own database is created later is told where the old runs went. The decision runs only while the
folder's own database does not exist: once it does, nothing is asked again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from contract_platform.settings import redact_url

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

__all__ = [
    "AIRFLOW_DB_PREFIX",
    "AIRFLOW_DB_URL_VARIABLE",
    "DEFAULT_AIRFLOW_DB_SERVER",
    "LEGACY_NAME",
    "MAINTENANCE_DATABASES",
    "SQL_ALCHEMY_CONN",
    "Adoption",
    "LegacyFacts",
    "MetadataDatabase",
    "MetadataDatabaseNotAdopted",
    "MetadataDatabaseUnavailable",
    "adopt_previous",
    "decide",
    "default_metadata_url",
    "ensure_postgres_database",
    "logged_runs",
    "metadata_database",
    "server_connection",
]

SQL_ALCHEMY_CONN = "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"
AIRFLOW_DB_URL_VARIABLE = "CONTRACT_AIRFLOW_DB_URL"
LOG_FOLDER_VARIABLE = "AIRFLOW__LOGGING__BASE_LOG_FOLDER"
# The local PostgreSQL every machine of the project runs (trust authentication on 127.0.0.1).
DEFAULT_AIRFLOW_DB_SERVER = "postgresql+psycopg2://postgres@127.0.0.1:5432"
AIRFLOW_DB_PREFIX = "contract_platform_airflow"
# The one database every data folder's served Airflow used up to release 0.1.0.
LEGACY_NAME = AIRFLOW_DB_PREFIX
# The start of the comment a renamed previous-release database carries (``COMMENT ON DATABASE``).
RENAMED_MARK = f"{LEGACY_NAME} of the previous release, renamed for the data folder "
# Where a missing database is created from: the server's own databases, tried in order.
MAINTENANCE_DATABASES = ("postgres", "test", "template1")
SQLITE_RISK = (
    "the scheduler, dag-processor, triggerer and api-server all write one SQLite file: a write that waits "
    "out SQLite's lock answers HTTP 500 (seen on the first PATCH /api/v2/dags/... after start)"
)
UPGRADING = "docs/upgrading.md#the-served-airflows-metadata"


class MetadataDatabaseUnavailable(RuntimeError):
    """The PostgreSQL server named for Airflow's metadata does not answer, or the database cannot be made."""


class MetadataDatabaseNotAdopted(RuntimeError):
    """The previous release's metadata DB holds this data folder's runs but could not be renamed: nothing was
    changed and nothing may start (starting empty would hide those runs). The message says what to do."""


@dataclass(frozen=True)
class MetadataDatabase:
    """The SQLAlchemy URL every Airflow component uses for its metadata, a warning to show, if any, and what
    was done with the previous release's database, if anything (``notice``)."""

    url: str
    warning: str | None = None
    created: bool = False
    notice: str | None = None


def _safe_name(name: str | None) -> str:
    if not name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]{0,62}", name):
        raise MetadataDatabaseUnavailable(
            f"{name!r} is not a database name this command creates (letters, digits, _ -)"
        )
    return name


def _reason(exc: Exception | None) -> str:
    return str(getattr(exc, "orig", None) or exc).strip().splitlines()[0] if exc else "no answer"


@contextlib.contextmanager
def server_connection(url: str, *, timeout: int = 5) -> Iterator[Connection]:
    """An autocommit connection to the server of ``url``, through the first of its own databases
    (``MAINTENANCE_DATABASES``) that answers, with the same login: where databases are made and renamed.
    Raises ``MetadataDatabaseUnavailable`` (without the password) when none answers."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    target = make_url(url)
    last: Exception | None = None
    for database in MAINTENANCE_DATABASES:
        engine = create_engine(
            target.set(database=database), isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": timeout}
        )
        try:
            try:
                conn = engine.connect()
            except SQLAlchemyError as exc:
                last = exc
                continue
            with conn:
                yield conn
            return
        finally:
            engine.dispose()
    raise MetadataDatabaseUnavailable(f"{redact_url(url)}: {_reason(last)}")


def _exists(conn: Connection, name: str) -> bool:
    from sqlalchemy import text

    return conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}).first() is not None


def _answers(url: str, timeout: int) -> bool:
    """The database of ``url`` exists and lets this login in."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import SQLAlchemyError

    engine = create_engine(url, connect_args={"connect_timeout": timeout})
    try:
        with engine.connect():
            return True
    except SQLAlchemyError:
        return False
    finally:
        engine.dispose()


def ensure_postgres_database(url: str, *, timeout: int = 5) -> bool:
    """Make sure the PostgreSQL database of ``url`` exists; True when it was created now.

    It is created from one of the server's own databases (``server_connection``) with the same login. Raises
    ``MetadataDatabaseUnavailable`` (without the password) when the server does not answer.
    """
    from sqlalchemy import text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ProgrammingError, SQLAlchemyError

    name = _safe_name(make_url(url).database)
    if _answers(url, timeout):
        return False
    with server_connection(url, timeout=timeout) as conn:
        try:
            if _exists(conn, name):
                return False
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        except ProgrammingError as exc:  # made at the same moment by another process
            if "already exists" not in str(exc):
                raise MetadataDatabaseUnavailable(f"{redact_url(url)}: {_reason(exc)}") from exc
            return False
        except SQLAlchemyError as exc:
            raise MetadataDatabaseUnavailable(f"{redact_url(url)}: {_reason(exc)}") from exc
        return True


def default_metadata_url(data: Path) -> str:
    """The served Airflow's own database for the data folder ``data`` on the local PostgreSQL.

    ``contract_platform_airflow_<the folder's parent and name>_<8 hex of its resolved path>``: readable in
    ``psql -l``, and different for every folder, so two checkouts (or the main job's data and a scratch
    estate) never share DAG runs or serialized DAGs. At most 63 characters, PostgreSQL's limit.
    """
    resolved = Path(data).resolve()
    label = re.sub(r"[^a-z0-9]+", "_", f"{resolved.parent.name}_{resolved.name}".lower()).strip("_")[:24].strip("_")
    digest = hashlib.sha256(str(resolved).encode("utf-8")).hexdigest()[:8]
    name = "_".join(part for part in (AIRFLOW_DB_PREFIX, label, digest) if part)
    return f"{DEFAULT_AIRFLOW_DB_SERVER}/{name}"


def metadata_database(
    airflow_home: Path, environ: Mapping[str, str] | None = None, *, data: Path | None = None, timeout: int = 5
) -> MetadataDatabase:
    """Where the served Airflow keeps its metadata (the module's docstring says in which order it looks).

    The data folder is ``data``, by default ``airflow_home``'s parent; its own database is created when missing,
    after ``adopt_previous`` has judged the previous release's. Raises ``MetadataDatabaseNotAdopted`` when that
    database holds this folder's runs and cannot be renamed.
    """

    env = os.environ if environ is None else environ
    if env.get(SQL_ALCHEMY_CONN):
        chosen = env[SQL_ALCHEMY_CONN]
        return MetadataDatabase(chosen, f"Airflow's metadata in SQLite: {SQLITE_RISK}" if _is_sqlite(chosen) else None)
    named = env.get(AIRFLOW_DB_URL_VARIABLE)
    folder = Path(data or Path(airflow_home).resolve().parent).resolve()
    url = named or default_metadata_url(folder)
    if _is_sqlite(url):
        return MetadataDatabase(url, f"Airflow's metadata in SQLite ({AIRFLOW_DB_URL_VARIABLE}): {SQLITE_RISK}")
    notice = None
    try:
        if not named:  # the folder's own, by default: the previous release's database is judged, never hidden
            logs = Path(env.get(LOG_FOLDER_VARIABLE) or Path(airflow_home).resolve() / "logs")
            url, notice = adopt_previous(url, folder, logs, timeout=timeout)
        created = ensure_postgres_database(url, timeout=timeout)
    except MetadataDatabaseUnavailable as exc:
        fallback = f"sqlite:///{Path(airflow_home).resolve() / 'airflow.db'}"
        return MetadataDatabase(
            fallback,
            f"PostgreSQL for Airflow's metadata did not answer ({exc}); falling back to SQLite at "
            f"{fallback[len('sqlite:///') :]}, where {SQLITE_RISK}. Fix: start PostgreSQL "
            f"(pg_isready -h 127.0.0.1) or set {AIRFLOW_DB_URL_VARIABLE} to a PostgreSQL URL "
            f"(now {redact_url(url)}), then serve again.",
        )
    return MetadataDatabase(url, created=created, notice=notice)


def _is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


# --- the previous release's database ----------------------------------------------------------------------


class Adoption(Enum):
    """What becomes of the previous release's metadata DB when a data folder's own does not exist yet."""

    RENAME = "rename"
    KEEP = "keep"
    LEAVE = "leave"


@dataclass(frozen=True)
class LegacyFacts:
    """What ``decide`` judges: the DAG runs the previous release's database holds (None: it has no Airflow
    tables) and how many of them left their task logs in this data folder."""

    runs: int | None
    logged_here: int


def decide(facts: LegacyFacts) -> Adoption:
    """The module docstring's table: this folder's runs are renamed with it, runs of unknown folders are kept
    under their old name, and nothing to show is left alone."""
    if facts.logged_here:
        return Adoption.RENAME
    if facts.runs:
        return Adoption.KEEP
    return Adoption.LEAVE


def logged_runs(log_folder: Path) -> set[tuple[str, str]]:
    """The (dag_id, run_id) pairs whose task logs ``log_folder`` holds: Airflow's ``dag_id=<d>/run_id=<r>``."""
    found: set[tuple[str, str]] = set()
    with contextlib.suppress(OSError):
        for dag in os.scandir(log_folder):
            if dag.is_dir() and dag.name.startswith("dag_id="):
                with contextlib.suppress(OSError):
                    found.update(
                        (dag.name[len("dag_id=") :], run.name[len("run_id=") :])
                        for run in os.scandir(dag.path)
                        if run.is_dir() and run.name.startswith("run_id=")
                    )
    return found


def adopt_previous(
    own_url: str, folder: Path, log_folder: Path, *, timeout: int = 5, legacy: str | None = None
) -> tuple[str, str | None]:
    """The URL the served Airflow of ``folder`` uses, and what to tell its user (None: nothing to tell).

    ``own_url`` names the folder's own database; ``legacy`` the previous release's (``LEGACY_NAME``, read
    when called). Raises ``MetadataDatabaseNotAdopted`` when the previous release's database holds this
    folder's runs and cannot be renamed, ``MetadataDatabaseUnavailable`` when the server does not answer.
    """
    from sqlalchemy.engine import make_url

    legacy = _safe_name(legacy or LEGACY_NAME)
    own = _safe_name(make_url(own_url).database)
    legacy_url = make_url(own_url).set(database=legacy).render_as_string(hide_password=False)
    with server_connection(own_url, timeout=timeout) as conn:
        if _exists(conn, own):
            return own_url, None
        if not _exists(conn, legacy):
            return own_url, _taken_elsewhere(conn, legacy, own, own_url)
        facts = _facts(legacy_url, log_folder, timeout)
        adoption = decide(facts)
        if adoption is Adoption.RENAME:
            _rename(conn, legacy, own, f"{RENAMED_MARK}{folder} on {datetime.now(UTC):%Y-%m-%d}", facts, legacy_url)
            return own_url, (
                f"Airflow's metadata: the previous release's database {legacy} holds {facts.runs} DAG run(s), "
                f"{facts.logged_here} of them logged in this data folder ({log_folder}); renamed in place to "
                f"{own}, every run kept ({UPGRADING})."
            )
    if adoption is Adoption.KEEP:
        return legacy_url, (
            f"Airflow's metadata: the previous release's database {legacy} holds {facts.runs} DAG run(s), none "
            f"of them logged in this data folder ({log_folder}), so whose they are cannot be told: the served "
            f"Airflow keeps using {legacy} under its old name, as that release did. To give this folder a database "
            f'of its own, rename it (ALTER DATABASE "{legacy}" RENAME TO "{own}"), or start one empty with '
            f"{AIRFLOW_DB_URL_VARIABLE}={redact_url(own_url)} once ({UPGRADING})."
        )
    what = "no Airflow tables" if facts.runs is None else "no DAG run"
    return own_url, (
        f"Airflow's metadata: the previous release's database {legacy} holds {what}; left alone, and this data "
        f"folder's own {own} is created beside it. Drop {legacy} once no older release serves it ({UPGRADING})."
    )


def _facts(legacy_url: str, log_folder: Path, timeout: int) -> LegacyFacts:
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import SQLAlchemyError

    engine = create_engine(legacy_url, connect_args={"connect_timeout": timeout})
    try:
        with engine.connect() as conn:
            if conn.execute(text("SELECT to_regclass('dag_run')")).scalar() is None:
                return LegacyFacts(runs=None, logged_here=0)
            runs = {(str(d), str(r)) for d, r in conn.execute(text("SELECT dag_id, run_id FROM dag_run"))}
    except SQLAlchemyError as exc:
        raise MetadataDatabaseUnavailable(f"{redact_url(legacy_url)}: {_reason(exc)}") from exc
    finally:
        engine.dispose()  # no session of ours may stay on it: the rename needs none
    return LegacyFacts(runs=len(runs), logged_here=len(runs & logged_runs(log_folder)))


def _rename(conn: Connection, legacy: str, own: str, note: str, facts: LegacyFacts, legacy_url: str) -> None:
    """``legacy`` becomes ``own`` with ``note`` as its comment, both or neither: one transaction on a connection
    of its own to the server database ``conn`` uses (``conn`` commits every statement alone)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import SQLAlchemyError

    engine = create_engine(conn.engine.url)
    try:
        with engine.begin() as renaming:
            renaming.execute(text(f'ALTER DATABASE "{legacy}" RENAME TO "{own}"'))
            renaming.execute(text(f'COMMENT ON DATABASE "{own}" IS :note'), {"note": note})
    except SQLAlchemyError as exc:
        if _exists(conn, own):  # another serve command of this folder renamed it at the same moment
            return
        sessions = conn.execute(
            text("SELECT count(*) FROM pg_stat_activity WHERE datname = :name"), {"name": legacy}
        ).scalar()
        raise MetadataDatabaseNotAdopted(
            f"the previous release's Airflow metadata DB {legacy} holds {facts.runs} DAG run(s), "
            f"{facts.logged_here} of them this data folder's, but could not be renamed to {own}: {_reason(exc)} "
            f"({sessions} session(s) connected to it). Nothing was changed. Fix: stop what uses it (the previous "
            f"release's Airflow, if it still runs) and serve again; or keep its name: "
            f"{AIRFLOW_DB_URL_VARIABLE}={redact_url(legacy_url)} bash scripts/airflow-local ({UPGRADING})"
        ) from exc
    finally:
        engine.dispose()


def _taken_elsewhere(conn: Connection, legacy: str, own: str, own_url: str) -> str | None:
    """When the folder's own database is about to be created empty: where the previous release's went, if
    another folder took it (its comment says which)."""
    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    found = conn.execute(
        text(
            "SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database "
            "WHERE left(shobj_description(oid, 'pg_database'), :length) = :mark ORDER BY datname"
        ),
        {"length": len(RENAMED_MARK), "mark": RENAMED_MARK},
    ).first()
    if found is None:
        return None
    other_url = make_url(own_url).set(database=str(found[0])).render_as_string(hide_password=False)
    return (
        f"Airflow's metadata: this data folder's own database {own} is new and empty. The previous release's "
        f"{legacy} became {found[0]} ({found[1]}); if this folder's earlier runs were in it, they are "
        f"there: {AIRFLOW_DB_URL_VARIABLE}={redact_url(other_url)} shows them (both folders then share it, as "
        f"they did before) ({UPGRADING})."
    )
