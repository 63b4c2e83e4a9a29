"""Typed contracts: what ``contracts/`` means, once it has been loaded and checked for shape.

Everything the CLI, the DAGs and the Spark jobs know about a contract comes from these objects;
``catalog.loading`` is the only code that reads the files.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_DEDUP_WINDOW",
    "Catalog",
    "Consumer",
    "Contract",
    "Fixture",
    "Hold",
    "Kind",
    "Owner",
    "ReplaySettings",
    "Status",
    "Transport",
]


class Status(StrEnum):
    """Lifecycle states, in lifecycle order (docs/design.md#lifecycle-and-guards)."""

    PROPOSED = "proposed"
    EXPERIMENTAL = "experimental"
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    DEPRECATED = "deprecated"
    RETIRED = "retired"

    @property
    def rank(self) -> int:
        return list(Status).index(self)


class Kind(StrEnum):
    EVENT = "event"
    COMMAND = "command"


@dataclass(frozen=True)
class Owner:
    team: str
    service: str
    contact: str | None = None


@dataclass(frozen=True)
class Transport:
    exchange: str
    routing_key: str


@dataclass(frozen=True)
class Ordering:
    key: str  # JSON pointer into the envelope
    sequence: str  # JSON pointer into the envelope


@dataclass(frozen=True)
class Pii:
    contains_pii: bool
    fields: tuple[str, ...]  # JSON pointers into the envelope


@dataclass(frozen=True)
class Retention:
    queue: timedelta
    dlq: timedelta
    archive: timedelta


@dataclass(frozen=True)
class Consumer:
    """``consumers[]``; what it reads (docs/consumer-impact.md): ``reads`` (JSON pointers into the envelope, ``*``
    for array items) and/or ``reader_schema`` (a file of the contract folder, loaded into ``reader_schema_document``
    when it can be; else ``reader_schema_problem`` says why). Neither: it reads everything."""

    service: str
    queue: str
    reads: tuple[str, ...] | None = None
    reader_schema: str | None = None
    team: str | None = None  # who owns the consumer, when the entry says (else the service's entry in the catalogue)
    contact: str | None = None
    reader_schema_document: Any = field(default=None, compare=False, repr=False)
    reader_schema_problem: str | None = field(default=None, compare=False)

    @property
    def declares_reads(self) -> bool:
        return self.reads is not None or self.reader_schema is not None


@dataclass(frozen=True)
class Hold:
    kind: str  # audit | legal | replay
    until: date
    reason: str

    def in_force(self, today: date) -> bool:
        return today <= self.until


@dataclass(frozen=True)
class QualitySettings:
    clock_skew: timedelta = timedelta(seconds=5)
    mostly: Mapping[str, float] = field(default_factory=dict)

    def threshold(self, expectation_id: str) -> float:
        return float(self.mostly.get(expectation_id, 1.0))


MAX_DEDUP_WINDOW = timedelta(days=30)  # an incremental run reads that many days of earlier first copies


@dataclass(frozen=True)
class ValidationSettings:
    """``validation:``. ``dedup_window``: how far back archive validation looks for an earlier copy of a message."""

    invalid_rate_target: float = 0.001
    window_days: int = 7
    dedup_window: timedelta = timedelta(hours=24)


@dataclass(frozen=True)
class ReplaySettings:
    """How replay of real traffic may decide a change (``compatibility:`` as an object; docs/replay.md).

    ``tightening``: ``static`` keeps the engine's verdicts; ``evidence`` lets a change that breaks only by
    narrowing pass as a minor version when replay of at least ``min_messages`` finds no violation.
    ``threshold``: the rejection rate above which replay refuses a change the engine calls compatible.
    """

    tightening: str = "static"
    window: timedelta = timedelta(days=7)
    min_messages: int = 1
    threshold: float = 0.0

    @property
    def on_evidence(self) -> bool:
        return self.tightening == "evidence"


@dataclass(frozen=True)
class TopologySettings:
    queue_type: str = "quorum"
    retry_delays: tuple[timedelta, ...] = (timedelta(seconds=30), timedelta(minutes=5))
    remove_on_retire: bool = False


@dataclass(frozen=True)
class RetirementSettings:
    observations: int = 3
    observation_span: timedelta = timedelta(days=7)
    evidence_freshness: timedelta = timedelta(days=2)


@dataclass(frozen=True)
class Fixture:
    path: Path
    valid: bool  # True: under fixtures/valid (must validate); False: fixtures/invalid (must be rejected)
    document: Any

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class Contract:
    """One contract version: ``contracts/<domain>/<name>/v<MAJOR>/``."""

    message_type: str
    kind: Kind
    version: str
    status: Status
    description: str
    owner: Owner
    transport: Transport
    compatibility: str
    compatibility_policy: str
    idempotency_key: str
    pii: Pii
    retention: Retention
    directory: Path
    payload_schema: Mapping[str, Any]
    ordering: Ordering | None = None
    consumers: tuple[Consumer, ...] = ()
    callers: tuple[str, ...] = ()  # commands only: the services allowed to send it
    superseded_by: str | None = None
    sunset: date | None = None
    holds: tuple[Hold, ...] = ()
    tenancy_required: bool = False
    max_body_bytes: int = 262_144
    quality: QualitySettings = field(default_factory=QualitySettings)
    validation: ValidationSettings = field(default_factory=ValidationSettings)
    replay: ReplaySettings = field(default_factory=ReplaySettings)
    topology: TopologySettings = field(default_factory=TopologySettings)
    retirement: RetirementSettings = field(default_factory=RetirementSettings)
    fixtures: tuple[Fixture, ...] = ()
    migration: Mapping[str, Any] | None = None  # raw migration.yaml, checked by contract_platform.migration
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # the draft payload_schema is read in and why (catalog.schemas.Reading.describe); payload_schema carries
    # that draft's $schema, so every reader reads it alike
    dialect: str = ""
    # compatibility.perspective: "writers" (the engine's verdict) or "readers" (docs/consumer-impact.md)
    compatibility_perspective: str = "writers"

    @property
    def domain(self) -> str:
        return self.message_type.split(".")[0]

    @property
    def name(self) -> str:
        return self.message_type.split(".")[1]

    @property
    def family(self) -> str:
        """``billing.invoice-issued`` for every major of that message."""
        return self.message_type.rsplit(".", 1)[0]

    @property
    def major(self) -> int:
        return int(self.message_type.rsplit(".v", 1)[1])

    @property
    def contract_file(self) -> Path:
        return self.directory / "contract.yaml"

    @property
    def schema_file(self) -> Path:
        return self.directory / "payload.schema.json"

    @property
    def migration_file(self) -> Path:
        return self.directory / "migration.yaml"

    @property
    def producers(self) -> tuple[str, ...] | None:
        """The services allowed to send this message, or None when the contract does not say.

        The one rule every check of ``metadata.producer`` uses (fixtures, envelope quality, sample
        traffic). An event is produced by its owner service. A command is owned by the service that
        carries it out and sent by others: its declared ``callers``; a command without ``callers``
        names no producer, so nothing can be checked (the owner is never required to send it).
        """
        if self.kind is Kind.EVENT:
            return (self.owner.service,)
        return self.callers or None

    def holds_in_force(self, today: date) -> list[Hold]:
        return [hold for hold in self.holds if hold.in_force(today)]


@dataclass(frozen=True)
class Catalog:
    """Every contract version under one root, plus the envelope schema they share."""

    root: Path
    envelope_schema: Mapping[str, Any]
    contracts: Mapping[str, Contract]
    default_dialect: str = "2020-12"  # catalog.yaml's defaultDialect: the draft of a schema that says nothing

    def __iter__(self) -> Iterator[Contract]:
        return iter(sorted(self.contracts.values(), key=lambda c: c.message_type))

    def __len__(self) -> int:
        return len(self.contracts)

    def __contains__(self, message_type: object) -> bool:
        return message_type in self.contracts

    def get(self, message_type: str) -> Contract | None:
        return self.contracts.get(message_type)

    def require(self, message_type: str, hint: str = "") -> Contract:
        """The version named ``message_type``; ``UsageError`` saying which catalogue lacks it (and ``hint``)."""
        from contract_platform.errors import UsageError

        contract = self.contracts.get(message_type)
        if contract is None:
            raise UsageError(
                f"{message_type!r} is not a messageType of the catalogue {self.root}" + (f"; {hint}" if hint else "")
            )
        return contract

    def family(self, family: str) -> list[Contract]:
        """Every major of one message, oldest first."""
        return list(self._families().get(family, ()))

    def _families(self) -> dict[str, list[Contract]]:
        """family -> its majors, oldest first: built once per catalogue (lint asks for every contract's)."""
        cached = self.__dict__.get("_family_index")
        if cached is None or cached[0] != len(self.contracts):
            index: dict[str, list[Contract]] = {}
            for contract in sorted(self.contracts.values(), key=lambda c: c.major):
                index.setdefault(contract.family, []).append(contract)
            cached = (len(self.contracts), index)
            self.__dict__["_family_index"] = cached  # not a field: a frozen dataclass may still cache
        return cached[1]

    def predecessor(self, contract: Contract) -> Contract | None:
        """The previous major of the same message, if the catalogue still holds it."""
        earlier = [c for c in self.family(contract.family) if c.major < contract.major]
        return earlier[-1] if earlier else None

    def successor(self, contract: Contract) -> Contract | None:
        if contract.superseded_by:
            return self.contracts.get(contract.superseded_by)
        later = [c for c in self.family(contract.family) if c.major > contract.major]
        return later[0] if later else None

    def by_exchange(self, exchange: str) -> list[Contract]:
        return [c for c in self if c.transport.exchange == exchange]

    def archive_window(self, exchange: str) -> timedelta | None:
        """How long the archive keeps ``exchange``'s partitions, which hold every version it carries: the longest
        ``retention.archive`` of its contracts (retired ones included); None when no contract names it."""
        return max((c.retention.archive for c in self.by_exchange(exchange)), default=None)

    @property
    def exchanges(self) -> list[str]:
        return sorted({c.transport.exchange for c in self.contracts.values()})
