"""A quality run sends nothing off the machine: Great Expectations' usage analytics are off before GX is imported.

``contractctl quality`` runs as a user runs it, the real GX path on a local Spark session, with a guard loaded by
``sitecustomize`` in every Python process of the run (the verb's and Spark's Python workers): it refuses and
records any connection to, or name lookup of, anything but this machine, and records the value of
``GX_ANALYTICS_ENABLED`` at the moment ``great_expectations`` is first imported (where GX releases with an
analytics client read it) and which analytics client modules were loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmarks.generate_archive import ArchiveSpec, generate_archive

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
SESSION_PREFIXES = ("AIRFLOW", "CONTRACT_", "PYSPARK_")  # the test session's settings, not a user's

GUARD = r"""
import atexit, ipaddress, json, os, socket, sys

_RECORD = os.environ["NETWORK_GUARD_RECORD"]
_LOCAL_NAMES = {"localhost", socket.gethostname()}


def _note(kind, detail):
    with open(_RECORD, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"pid": os.getpid(), "kind": kind, "detail": detail}) + "\n")


def _local(host):
    if host is None or host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _address_is_local(address):
    return not isinstance(address, tuple) or _local(address[0])  # a str or bytes address: a Unix socket


_connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo


def connect(self, address):
    if not _address_is_local(address):
        _note("connect", repr(address))
        raise OSError("refused by the test's network guard")
    return _connect(self, address)


def connect_ex(self, address):
    if not _address_is_local(address):
        _note("connect", repr(address))
        return 111
    return _connect_ex(self, address)


def getaddrinfo(host, *args, **kwargs):
    if not _local(host.decode() if isinstance(host, bytes) else host):
        _note("lookup", repr(host))
        raise socket.gaierror(socket.EAI_NONAME, "refused by the test's network guard")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo


class _FirstImport:
    def find_spec(self, name, path=None, target=None):
        if name == "great_expectations":
            _note("gx-imported", os.environ.get("GX_ANALYTICS_ENABLED"))
            sys.meta_path.remove(self)
        return None


sys.meta_path.insert(0, _FirstImport())


@atexit.register
def _clients():
    loaded = sorted(m for m in sys.modules if m == "posthog" or m.startswith(("posthog.", "great_expectations.analytics")))
    _note("analytics-modules", loaded)
"""


def quality_run(
    tmp_path: Path, catalog_dir: Path, **environment: str
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """``contractctl quality`` over a small archive with the guard; (the process, what the guard recorded)."""
    spec = ArchiveSpec(messages=40, defects={}, message_types=("order.order-created.v1",), seed=7)
    generate_archive(tmp_path / "archive", catalog_dir, spec)
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD, encoding="utf-8")
    record = tmp_path / "network.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(SESSION_PREFIXES) and k != "GX_ANALYTICS_ENABLED"}
    home = tmp_path / "data"
    env |= {
        "CONTRACT_PLATFORM_HOME": str(home),
        "CONTRACT_JVM_CLASS_CACHE": os.environ["CONTRACT_JVM_CLASS_CACHE"],  # the session's (tests/conftest.py)
        "PYTHONPATH": str(guard),
        "NETWORK_GUARD_RECORD": str(record),
        **environment,
    }
    done = subprocess.run(
        [str(Path(sys.executable).with_name("contractctl")), "quality", str(tmp_path / "archive")]
        + ["--catalog", str(catalog_dir), "--gx-root", str(tmp_path / "gx"), "--format", "json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    notes = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()] if record.exists() else []
    return done, notes


def test_a_quality_run_sends_nothing_off_the_machine_and_gx_starts_with_analytics_off(
    tmp_path: Path, catalog_dir: Path
) -> None:
    done, notes = quality_run(tmp_path, catalog_dir)

    assert done.returncode in (0, 1), done.stderr[-3000:]  # passed or findings: GX judged the archive
    report = json.loads(done.stdout)
    assert [t["message_type"] for t in report["types"]] == ["order.order-created.v1"]
    assert [n["detail"] for n in notes if n["kind"] == "gx-imported"] == ["False"]  # off before GX's first import
    assert [n for n in notes if n["kind"] in ("connect", "lookup")] == []  # nothing off the machine, no analytics
    assert [n["detail"] for n in notes if n["kind"] == "analytics-modules" and n["detail"]] == []
