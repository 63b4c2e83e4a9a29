"""Where the platform keeps its files and finds its services, on embedded defaults.

One place reads the environment; everything else asks here. Nothing here holds a password:
URLs are read when needed and only ever shown through ``redact_url``.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path

__all__ = [
    "archive_dir",
    "catalog_dir",
    "data_dir",
    "dead_letter_suffixes",
    "default_registry_url",
    "docs_dir",
    "event_vhost",
    "rabbitmq_management_url",
    "rabbitmq_url",
    "registry_file",
    "recorder_buffer",
    "recorder_heartbeat",
    "redact_url",
    "retention_setting",
    "registry_url",
    "watched_vhosts",
]

DEFAULT_RABBITMQ_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"


def data_dir() -> Path:
    """``$CONTRACT_PLATFORM_HOME`` or ``./data``: the store, archives, reports and docs live below it."""
    return Path(os.environ.get("CONTRACT_PLATFORM_HOME") or Path.cwd() / "data").resolve()


def catalog_dir() -> Path:
    """``$CONTRACT_CATALOG`` or ``./contracts``."""
    return Path(os.environ.get("CONTRACT_CATALOG") or Path.cwd() / "contracts").resolve()


def archive_dir() -> Path:
    return Path(os.environ.get("CONTRACT_ARCHIVE_DIR") or data_dir() / "archive")


def docs_dir() -> Path:
    return Path(os.environ.get("CONTRACT_DOCS_DIR") or data_dir() / "docs")


def registry_file(data: Path | None = None) -> Path:
    """The registry store's SQLite file when no URL names another store: ``<data folder>/registry.db``."""
    return (data if data is not None else data_dir()) / "registry.db"


def default_registry_url(data: Path | None = None) -> str:
    """The SQLite store of the data folder ``data`` (default: this process's), as a ``sqlite:///`` URL."""
    return f"sqlite:///{registry_file(data)}"


def registry_url() -> str:
    """``$CONTRACT_REGISTRY_URL`` (a ``sqlite:`` or ``postgresql:`` URL) or the data folder's SQLite store
    (``default_registry_url``)."""
    return os.environ.get("CONTRACT_REGISTRY_URL") or default_registry_url()


def rabbitmq_url() -> str:
    return os.environ.get("CONTRACT_RABBITMQ_URL") or DEFAULT_RABBITMQ_URL


def rabbitmq_management_url() -> str | None:
    """``$CONTRACT_RABBITMQ_MANAGEMENT_URL`` (``http://host:15672``); unset: the AMQP host on port 15672."""
    return os.environ.get("CONTRACT_RABBITMQ_MANAGEMENT_URL") or None


def watched_vhosts() -> tuple[str, ...]:
    """``$CONTRACT_RABBITMQ_VHOSTS`` (comma-separated) the retirement audit searches; unset: the connection's own."""
    raw = os.environ.get("CONTRACT_RABBITMQ_VHOSTS") or ""
    return tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))


def dead_letter_suffixes() -> tuple[str, ...] | None:
    """``$CONTRACT_DEAD_LETTER_SUFFIXES`` (comma-separated): queue names the audit takes for DLQs; unset: its defaults."""
    raw = os.environ.get("CONTRACT_DEAD_LETTER_SUFFIXES")
    if raw is None:
        return None
    return tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))


def event_vhost() -> str:
    """``$CONTRACT_RABBITMQ_EVENT_VHOST``: where RabbitMQ's event exchange lives (the plugin's ``vhost``; default ``/``)."""
    return os.environ.get("CONTRACT_RABBITMQ_EVENT_VHOST") or "/"


def recorder_heartbeat() -> timedelta:
    """``$CONTRACT_RECORDER_HEARTBEAT`` (a duration, default ``5s``): how often the activity recorder confirms coverage.

    The retirement audit waits up to three of these for the recorder to confirm the moment it started.
    """
    from contract_platform.durations import parse_duration

    raw = os.environ.get("CONTRACT_RECORDER_HEARTBEAT") or "5s"
    try:
        value = parse_duration(raw)
    except ValueError as exc:
        raise ValueError(f"CONTRACT_RECORDER_HEARTBEAT: {exc}") from exc
    return max(value, timedelta(seconds=1))


def retention_setting(name: str, default: timedelta) -> timedelta:
    """``$<name>`` (a duration such as ``30d``; unset or empty: ``default``): how long the platform keeps one kind
    of what it writes (the table is ``housekeeping.RETENTIONS``). Raises ValueError naming the variable."""
    from contract_platform.durations import parse_duration

    raw = (os.environ.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = parse_duration(raw)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from exc
    if value <= timedelta(0):
        raise ValueError(f"{name}: {raw!r} keeps nothing; write a positive duration (e.g. 30d)")
    return value


DEFAULT_RECORDER_MAX_EVENTS = 50_000
DEFAULT_RECORDER_MAX_BYTES = 16 * 1024 * 1024


def recorder_buffer() -> tuple[int, int]:
    """``$CONTRACT_RECORDER_MAX_EVENTS`` (default 50,000) and ``$CONTRACT_RECORDER_MAX_BYTES`` (default 16 MiB):
    the limits of the activity recorder's queue (``x-max-length``, ``x-max-length-bytes``).

    The broker keeps at most that many events for the recorder while none reads them, dropping the oldest
    beyond it (each drop is a gap in the evidence): sizing in docs/retirement-audit.md. Every recorder of
    one registry must use the same limits (they are arguments of their one queue).
    """
    events = _whole("CONTRACT_RECORDER_MAX_EVENTS", os.environ.get("CONTRACT_RECORDER_MAX_EVENTS"), 1)
    size = _whole("CONTRACT_RECORDER_MAX_BYTES", os.environ.get("CONTRACT_RECORDER_MAX_BYTES"), 1024)
    return events or DEFAULT_RECORDER_MAX_EVENTS, size or DEFAULT_RECORDER_MAX_BYTES


def _whole(name: str, raw: str | None, least: int) -> int | None:
    text = (raw or "").strip().replace("_", "")
    if not text:
        return None
    if not text.isdigit() or len(text) > 12 or int(text) < least:
        raise ValueError(f"{name}: {text[:40]!r} is not a whole number of at least {least:,}")
    return int(text)


_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:/@]*):(?P<pw>[^@]*)@", re.IGNORECASE)


# A query or fragment parameter whose name holds one of these words carries a credential:
# ?password=, &sslpassword=, ?pwd=, ?pass=, ?secret=, ?client_secret=, ?token=, ?access_token=, ?api_key=...
_SECRET_PARAMETER = re.compile(
    r"(?P<name>[?&;#](?:[^=&;#]*?)(?:passw(?:or)?d|pass|pwd|secret|token|api[-_]?key|credential|auth)[^=&;#]*=)"
    r"(?P<value>[^&;#]*)",
    re.IGNORECASE,
)


def redact_url(url: str) -> str:
    """``amqp://guest:secret@host/?token=abc`` -> ``amqp://guest:***@host/?token=***``: the only way a URL reaches
    a log. The password of the user part and the value of every parameter named like a credential go."""
    url = _PASSWORD.sub(lambda m: f"{m.group('scheme')}{m.group('user')}:***@", url)
    return _SECRET_PARAMETER.sub(lambda m: f"{m.group('name')}***", url)
