"""What an archiver is asked to do (``ArchiverConfig``) and what one run did (``ArchiveRunReport``)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract_platform.archiver.files import MIB
from contract_platform.errors import UsageError

__all__ = ["ArchiveRunReport", "ArchiverConfig", "MODES"]

MODES = ("drain", "follow")
_EXCHANGE_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,247}")  # AMQP's characters, 255 - len("archive."), a safe dir name


@dataclass(frozen=True)
class ArchiverConfig:
    """What to archive where, and how: prefetch, batch size, batch time, file size, idle time (drain mode)."""

    root: Path
    exchanges: tuple[str, ...]
    prefetch: int = 500
    batch_size: int = 200
    batch_ms: int = 500
    max_file_bytes: int = 64 * MIB
    idle_timeout: float = 2.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))
        names = (self.exchanges,) if isinstance(self.exchanges, str) else tuple(self.exchanges)
        object.__setattr__(self, "exchanges", tuple(dict.fromkeys(names)))
        if not self.exchanges:
            raise UsageError("no exchange to archive: name at least one")
        for name in self.exchanges:
            if not isinstance(name, str) or not _EXCHANGE_NAME.fullmatch(name) or not name.strip("."):
                raise UsageError(
                    f"exchange {name!r} cannot be archived: use 1-247 letters, digits, '.', '_', ':' or '-'"
                )
        for option, value, high, why in (
            ("prefetch", self.prefetch, 65535, ""),
            ("batch_size", self.batch_size, self.prefetch, " (prefetch: the broker stops delivering at that many)"),
            ("batch_ms", self.batch_ms, 3_600_000, ""),
            ("max_file_bytes", self.max_file_bytes, 2**50, ""),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise UsageError(f"{option} must be an integer from 1 to {high}{why}, not {value!r}")
        if not isinstance(self.idle_timeout, int | float) or not 0 <= self.idle_timeout < math.inf:
            raise UsageError(f"idle_timeout must be a number of seconds >= 0, not {self.idle_timeout!r}")


@dataclass(frozen=True)
class ArchiveRunReport:
    """What one run wrote. ``records`` counts lines written per exchange (all acknowledged unless
    ``unacknowledged`` says how many were written before the connection was lost: those come again)."""

    mode: str
    root: Path
    records: Mapping[str, int]
    redelivered: int
    unacknowledged: int
    files: tuple[Path, ...]
    bytes: int
    repaired: tuple[Path, ...]
    elapsed: float
    busy: float  # seconds from the first delivery to the last acknowledgement
    reconnects: int
    stopped_by: str  # "idle" (drain) or "signal" (SIGTERM, SIGINT, stop())
    fallbacks: int = 0  # records written as fallback records (``archiveError`` says why), counted in ``records``

    @property
    def total(self) -> int:
        return sum(self.records.values())

    @property
    def rate(self) -> float:
        """Records per second while there was something to archive."""
        return self.total / self.busy if self.busy > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "root": str(self.root),
            "records": dict(self.records),
            "total": self.total,
            "redelivered": self.redelivered,
            "unacknowledged": self.unacknowledged,
            "files": [str(path) for path in self.files],
            "bytes": self.bytes,
            "repaired": [str(path) for path in self.repaired],
            "elapsedSeconds": round(self.elapsed, 3),
            "busySeconds": round(self.busy, 3),
            "recordsPerSecond": round(self.rate, 1),
            "reconnects": self.reconnects,
            "stoppedBy": self.stopped_by,
            "fallbacks": self.fallbacks,
        }
