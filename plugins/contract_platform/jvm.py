"""What every Spark driver JVM the platform launches is told at its start: by ``spark-submit`` (the Airflow
tasks, ``contract_platform_airflow.spark``) and by ``contractctl``'s in-process sessions
(``spark_jobs.session``) alike, so a first run prints no warning nobody can act on (docs/deploy.md#warnings).

- ``driver_java_options``: the platform's log4j2 configuration (``log4j2.properties`` beside this module):
  Spark's defaults, with Hadoop's notice that its optional native library is absent kept out. Given as
  ``spark.driver.defaultJavaOptions``, which Spark prepends to a user's ``spark.driver.extraJavaOptions``.
- ``local_driver_environment``: for a ``local`` master, ``SPARK_LOCAL_IP=127.0.0.1``. The driver and its
  executors are one process, so it binds to the loopback interface instead of looking the host name up
  and warning that it resolves to a loopback address (advice that matters on a cluster, where it is kept).
- ``quick_start``: a local master whose input is a local file or folder of at most ``QUICK_START_BYTES``
  starts its driver with the client compiler only (``QUICK_START_JAVA_OPTIONS``): C2's compilations are
  not repaid in a run of seconds, and a large input, or a cluster, keeps C2 (docs/archive-validation.md#fixed-cost).
  The one rule for ``contractctl``'s in-process sessions and the DAGs' ``spark-submit`` alike.
- ``class_archive``: a quick-start driver also maps Spark's classes from a class-data archive (AppCDS)
  instead of loading and verifying each of them, about 3 s of CPU less per JVM. The first such JVM on a
  machine writes the archive when it exits (one writer at a time; the others start without it meanwhile),
  the next ones read it. A JVM whose Java or Spark differs from the archive's ignores it (``-Xshare:auto``).

A user's own setting wins: a ``SPARK_LOCAL_IP`` in the environment, a ``-Dlog4j2.configurationFile`` in
their own ``spark.driver.extraJavaOptions`` (it comes later on the JVM's command line). Pure: nothing here
starts Spark.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CLASS_CACHE_ENV",
    "LOG4J2_CONFIG",
    "QUICK_START_BYTES",
    "QUICK_START_JAVA_OPTIONS",
    "ClassArchive",
    "class_archive",
    "class_cache_folder",
    "driver_java_options",
    "is_local",
    "local_driver_environment",
    "local_size_at_most",
    "quick_start",
]

LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")
# A small job's driver: the client compiler only (no C2), for a JVM that runs seconds, not minutes.
QUICK_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
QUICK_START_BYTES = 8 * 2**20  # a local input up to this size starts quickly


def is_local(master: str | None) -> bool:
    """Whether ``master`` runs the driver and its executors in one local process (``local``, ``local[*]``,
    ``local[2,3]``; None is Spark's default, local)."""
    return (master or "local").strip().startswith("local")


def driver_java_options() -> str:
    """The Java options a driver JVM starts with (``spark.driver.extraJavaOptions``)."""
    return f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.resolve().as_uri()}"


def local_driver_environment(master: str | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a driver of ``master`` starts with, beyond its parent's: for a local master (``local``,
    ``local[*]``, ``local[2,3]``; None is Spark's default, local), the loopback address to bind to."""
    environ = os.environ if environ is None else environ
    if is_local(master) and not environ.get("SPARK_LOCAL_IP"):
        return {"SPARK_LOCAL_IP": "127.0.0.1"}
    return {}


def local_size_at_most(path: str, limit: int) -> bool:
    """True when ``path`` is a local file or folder whose files hold at most ``limit`` bytes together.

    Walks the folder only until the limit is passed; a path of another file system (``hdfs:``,
    ``s3a:``) or one that does not exist is False.
    """
    local = path.removeprefix("file://") if path.startswith("file://") else path
    if "://" in local or not os.path.exists(local):
        return False
    if os.path.isfile(local):
        return os.path.getsize(local) <= limit
    total = 0
    for folder, _, names in os.walk(local):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(folder, name))
            except OSError:  # gone meanwhile: Spark will say so
                continue
            if total > limit:
                return False
    return True


def quick_start(master: str | None, input_path: str | None) -> bool:
    """Whether a driver of ``master`` reading ``input_path`` starts quickly (``QUICK_START_JAVA_OPTIONS``): a local
    master and a local input of at most ``QUICK_START_BYTES``. An input not given, or not on this machine, is not small."""
    return is_local(master) and bool(input_path) and local_size_at_most(str(input_path), QUICK_START_BYTES)


# The class-data archive's folder: $CONTRACT_JVM_CLASS_CACHE (``off``: no archive), else ~/.cache/contract-platform.
CLASS_CACHE_ENV = "CONTRACT_JVM_CLASS_CACHE"
# The JVM's own warnings to stderr, never into a job's stdout (its JSON report); writing an archive warns of
# every class it leaves out, and a JVM that cannot use one says why: nobody acts on either.
_QUIET_CDS = ("-Xlog:disable", "-Xlog:all=warning,cds*=off:stderr")
_STALE_WRITER_SECONDS = 3600  # a claim older than this was left by a JVM that never finished: taken over


@dataclass(frozen=True)
class ClassArchive:
    """Spark's classes for a driver JVM: read from ``path``, or (``writing`` set) written there by this JVM at its exit."""

    path: Path
    writing: Path | None = None

    @property
    def options(self) -> list[str]:
        """The driver's Java options."""
        if self.writing is None:
            return [*_QUIET_CDS, f"-XX:SharedArchiveFile={self.path}"]
        return [*_QUIET_CDS, f"-XX:ArchiveClassesAtExit={self.writing}"]

    def finish(self, exited: bool) -> None:
        """After the JVM is gone: put what it wrote in place when it ``exited`` (any exit code; not killed), else drop
        it. Atomic: a JVM never reads a half-written archive."""
        if self.writing is None:
            return
        try:
            if exited and self.writing.is_file() and self.writing.stat().st_size > 0:
                os.replace(self.writing, self.path)
            else:
                self.writing.unlink(missing_ok=True)
        except OSError:  # a cache that cannot be written: the next JVM starts without an archive
            return


def class_archive(environ: Mapping[str, str] | None = None, *, write: bool = True) -> ClassArchive | None:
    """The class-data archive of this machine's Java and Spark for a driver about to be launched, or None (switched
    off, no writable cache, or another JVM is writing it right now). ``write=False``: an existing archive only,
    for a JVM that lives long: the writer's claim would keep every other driver from writing it meanwhile."""
    environ = os.environ if environ is None else environ
    folder = class_cache_folder(environ)
    if folder is None:
        return None
    spark = importlib.util.find_spec("pyspark")
    if spark is None or not spark.submodule_search_locations:
        return None
    jars = sorted(path.name for path in (Path(next(iter(spark.submodule_search_locations))) / "jars").glob("*.jar"))
    java = environ.get("JAVA_HOME") or os.path.realpath(shutil.which("java") or "java")
    key = "\n".join([java, importlib.metadata.version("pyspark"), *jars])
    archive = Path(folder) / f"spark-classes-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}.jsa"
    if archive.is_file() and archive.stat().st_size > 0:
        return ClassArchive(archive)
    if not write:
        return None
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
        return ClassArchive(archive, _claim(archive.with_name(f"{archive.name}.writing")))
    except OSError:  # another JVM writes it (FileExistsError), or no writable cache: this one starts without
        return None


def class_cache_folder(environ: Mapping[str, str] | None = None) -> str | None:
    """Where class-data archives are kept: ``$CONTRACT_JVM_CLASS_CACHE``, else ``~/.cache/contract-platform``; None
    when switched off (``off``) or unusable (a Java option is one word on the driver's command line)."""
    environ = os.environ if environ is None else environ
    folder = environ.get(CLASS_CACHE_ENV) or str(Path.home() / ".cache" / "contract-platform")
    if folder == "off" or any(c.isspace() for c in folder):
        return None
    return folder


def _claim(writing: Path) -> Path:
    """Make ``writing`` exclusively (FileExistsError when another writer holds it); a claim left for an hour is
    taken over."""
    try:
        _create_exclusively(writing)
    except FileExistsError:
        if writing.stat().st_mtime > time.time() - _STALE_WRITER_SECONDS:
            raise
        writing.unlink(missing_ok=True)
        _create_exclusively(writing)
    return writing


def _create_exclusively(path: Path) -> None:
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
