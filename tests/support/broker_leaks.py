"""Recorder queues and virtual hosts a test run made on the shared broker and left there fail the run.

Every test that starts a broker activity recorder or makes a registry with one deletes the recorder's
queue and its companions (``recorder_queues``), and every test virtual host is deleted with what it
holds: otherwise each run leaves queues that collect every event of the broker for a week. Other people
run tests on the same broker at the same time, so only what *this* run made counts:

- at the start of the session the recorder queues and virtual hosts already on the broker are noted;
- at its end, a recorder queue (by its arguments or its companions' names) under a name prefix this run's
  tests were given (``tests.support.broker.prefix``), or a virtual host they made
  (``tests.support.broker.create_vhost``, ``private_vhost``), that was not there at the start and is there
  now is listed, deleted, and fails the run.

With pytest-xdist each worker checks what its own tests were given and tells the controller, which
reports. At the end the management API on 127.0.0.1:15672 is asked only when the run handed out a prefix
or made a virtual host.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from tests.support import broker

__all__ = ["Noted", "leftovers", "noted", "register", "remove"]

_COMPANIONS = (".alive", ".dropped", ".parked")
_INCARNATION = "x-contract-platform-incarnation"
_NOTED = pytest.StashKey["Noted | None"]()
_FROM_WORKERS = pytest.StashKey[list[str]]()


class Noted:
    """Recorder queues (in the event vhost ``/``) and virtual hosts on the broker at one moment."""

    def __init__(self, queues: Iterable[str], vhosts: Iterable[str]) -> None:
        self.queues, self.vhosts = frozenset(queues), frozenset(vhosts)


def _is_recorder_queue(name: str, arguments: Any, names: set[str]) -> bool:
    if isinstance(arguments, dict) and (_INCARNATION in arguments or "x-single-active-consumer" in arguments):
        return True
    return any(name.endswith(suffix) and name[: -len(suffix)] in names for suffix in _COMPANIONS) or (
        "activity" in name or "recorder" in name
    )


def noted(prefixes: Iterable[str] = ("t-",)) -> Noted | None:
    """The recorder queues under ``prefixes`` and the virtual hosts on the broker now; None: no API."""
    try:
        queues = httpx.get(f"{broker.API}/queues/%2F?columns=name,arguments", auth=broker.AUTH, timeout=10)
        vhosts = httpx.get(f"{broker.API}/vhosts?columns=name", auth=broker.AUTH, timeout=10)
    except httpx.HTTPError:
        return None
    if queues.status_code != 200 or vhosts.status_code != 200:
        return None
    wanted = tuple(prefixes)
    listed = {str(q.get("name")): q.get("arguments") for q in queues.json() if isinstance(q, dict)}
    names = set(listed)
    recorders = [n for n, args in listed.items() if n.startswith(wanted) and _is_recorder_queue(n, args, names)]
    return Noted(recorders, (str(v.get("name")) for v in vhosts.json() if isinstance(v, dict)))


def leftovers(before: Noted | None, prefixes: Iterable[str], vhosts: Iterable[str]) -> list[str]:
    """What this run made (under ``prefixes``, or among ``vhosts``) and left, and was not there ``before``."""
    prefixes, vhosts = tuple(prefixes), frozenset(vhosts)
    if not prefixes and not vhosts:
        return []
    now = noted(prefixes)
    if now is None:
        return []
    earlier = before or Noted((), ())
    queues = sorted(now.queues - earlier.queues)
    hosts = sorted((now.vhosts & vhosts) - earlier.vhosts)
    return [f"recorder queue {name}" for name in queues] + [f"virtual host {name}" for name in hosts]


def remove(found: Iterable[str]) -> None:
    """Delete what ``leftovers`` listed, so that the shared broker does not keep it for a week."""
    for item in found:
        kind, _, name = item.rpartition(" ")
        with contextlib.suppress(httpx.HTTPError):
            if kind == "virtual host":
                broker.delete_vhost(name)
            else:
                httpx.delete(f"{broker.API}/queues/%2F/{quote(name, safe='')}", auth=broker.AUTH, timeout=10)


_TRACING = pytest.StashKey["tuple[bool | None, frozenset[str]]"]()
_TRACE_QUEUES = "contract-platform.deliveries."  # amqp.tracing.trace_queues: one per registry and virtual host


def tracing_state() -> tuple[bool | None, frozenset[str]]:
    """Whether tracing is on in ``/`` (None: not known) and the delivery trace queues there now."""
    with contextlib.suppress(httpx.HTTPError, ValueError):
        vhost = httpx.get(f"{broker.API}/vhosts/%2F", auth=broker.AUTH, timeout=10).json()
        queues = httpx.get(f"{broker.API}/queues/%2F?columns=name", auth=broker.AUTH, timeout=10).json()
        names = {str(q.get("name")) for q in queues if isinstance(q, dict)}
        return vhost.get("tracing"), frozenset(n for n in names if n.startswith(_TRACE_QUEUES))
    return None, frozenset()


def restore_tracing(before: tuple[bool | None, frozenset[str]]) -> None:
    """Recording audits under test switch tracing on in ``/`` and declare delivery trace queues there, as they do
    in production: at the end of the run the shared broker gets back the tracing it had, and loses the trace
    queues the run made that nobody reads (each test deletes its own; a served Airflow's audits cannot)."""
    was_on, queues = before
    if was_on is None:
        return
    with contextlib.suppress(httpx.HTTPError, ValueError):
        now_on, now_queues = tracing_state()
        for name in sorted(now_queues - queues):
            found = httpx.get(f"{broker.API}/queues/%2F/{quote(name, safe='')}", auth=broker.AUTH, timeout=10)
            if found.status_code == 200 and not found.json().get("consumers"):
                httpx.delete(f"{broker.API}/queues/%2F/{quote(name, safe='')}", auth=broker.AUTH, timeout=10)
        if now_on and not was_on:
            vhost = httpx.get(f"{broker.API}/vhosts/%2F", auth=broker.AUTH, timeout=10).json()
            tags = vhost.get("tags")
            body = {
                "tracing": False,
                "description": str(vhost.get("description") or ""),
                "tags": ",".join(map(str, tags)) if isinstance(tags, list) else str(tags or ""),
            }
            httpx.put(f"{broker.API}/vhosts/%2F", auth=broker.AUTH, json=body, timeout=10)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


class _Plugin:
    @staticmethod
    def pytest_sessionstart(session: pytest.Session) -> None:
        answers = False
        with contextlib.suppress(OSError), socket.create_connection((broker.HOST, 15672), timeout=0.5):
            answers = True
        session.config.stash[_NOTED] = noted() if answers else None
        if answers and not _is_worker(session.config):
            session.config.stash[_TRACING] = tracing_state()

    @staticmethod
    def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
        config = session.config
        prefixes, vhosts = broker.handed_out()
        found = leftovers(config.stash.get(_NOTED, None), prefixes, vhosts)
        if found:
            remove(found)
        if _is_worker(config):
            config.workeroutput["broker_leftovers"] = found  # type: ignore[attr-defined]
            return
        restore_tracing(config.stash.get(_TRACING, (None, frozenset())))  # after every worker is done
        found += config.stash.get(_FROM_WORKERS, [])
        if not found:
            return
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.section("left on the broker (deleted now)", sep="=", red=True)
            for item in found:
                reporter.line(f"{item}: a test made it and did not delete it", red=True)
        if session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


class _FromWorkers:
    """Registered with xdist only: what each worker found travels to the controller in its output."""

    @staticmethod
    def pytest_testnodedown(node: Any, error: Any) -> None:
        found = node.workeroutput.get("broker_leftovers", []) if hasattr(node, "workeroutput") else []
        node.config.stash.setdefault(_FROM_WORKERS, []).extend(found)


def register(config: pytest.Config) -> None:
    """Called by tests/conftest.py's pytest_configure."""
    config.pluginmanager.register(_Plugin(), "contract-platform-broker-leaks")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_FromWorkers(), "contract-platform-broker-leaks-workers")
