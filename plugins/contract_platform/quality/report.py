"""The envelope quality report: per message type, every expectation's outcome, as typed data.

``run_suite`` builds it from Great Expectations results; the Spark job adds what it read; the CLI
prints it; ``record_quality`` turns it into evidence. ``to_dict`` is the JSON the job writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contract_platform.evidence import Verdict

__all__ = ["NO_TYPE", "SAMPLES", "ExpectationResult", "QualityReport", "TypeQuality"]

NO_TYPE = "(none)"  # unassigned envelopes whose body names no messageType
SAMPLES = 10  # messageIds kept per expectation


@dataclass(frozen=True)
class ExpectationResult:
    """One expectation on one type's envelopes.

    ``judged`` counts the rows the expectation looked at (for value checks: rows where the value
    is present); ``observed`` is the share of them that met it, the figure ``mostly`` is held to.
    """

    id: str
    gx_type: str
    mostly: float
    success: bool
    judged: int
    unexpected: int
    observed: float | None
    samples: tuple[str, ...] = ()  # messageIds of unexpected rows (at most SAMPLES)
    error: str | None = None  # GX could not evaluate it (then success is False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "gx_type": self.gx_type,
            "mostly": self.mostly,
            "success": self.success,
            "judged": self.judged,
            "unexpected": self.unexpected,
            "observed": self.observed,
            "samples": list(self.samples),
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExpectationResult:
        return cls(**{**data, "samples": tuple(data.get("samples") or ())})


@dataclass(frozen=True)
class TypeQuality:
    """One message type's suite run: its envelopes, the outcomes, and what was skipped (and why)."""

    message_type: str
    contract_version: str
    rows: int
    results: tuple[ExpectationResult, ...]
    skipped: Mapping[str, str] = field(default_factory=dict)  # id -> why it was not judged
    suite: str = ""

    @property
    def evaluated(self) -> int:
        return len(self.results)

    @property
    def failed(self) -> list[str]:
        return [r.id for r in self.results if not r.success]

    @property
    def success(self) -> bool:
        return not self.failed

    @property
    def verdict(self) -> Verdict:
        """fail when an expectation was evaluated and missed; unknown when GX could not evaluate one."""
        if any(r.error is not None for r in self.results):
            return Verdict.UNKNOWN
        return Verdict.PASS if self.success else Verdict.FAIL

    @property
    def unexpected(self) -> dict[str, int]:
        return {r.id: r.unexpected for r in self.results}

    @property
    def samples(self) -> dict[str, list[str]]:
        return {r.id: list(r.samples[:SAMPLES]) for r in self.results if r.samples}

    def result(self, expectation_id: str) -> ExpectationResult:
        for result in self.results:
            if result.id == expectation_id:
                return result
        raise KeyError(f"{self.message_type} has no result for {expectation_id!r} (evaluated: {self.evaluated})")

    def to_dict(self) -> dict[str, Any]:
        return {
            "message_type": self.message_type,
            "contract_version": self.contract_version,
            "suite": self.suite,
            "rows": self.rows,
            "verdict": str(self.verdict),
            "evaluated": self.evaluated,
            "failed_expectations": self.failed,
            "skipped": dict(self.skipped),
            "results": [r.to_dict() for r in self.results],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TypeQuality:
        return cls(
            message_type=data["message_type"],
            contract_version=data["contract_version"],
            rows=data["rows"],
            results=tuple(ExpectationResult.from_dict(r) for r in data["results"]),
            skipped=dict(data.get("skipped") or {}),
            suite=data.get("suite", ""),
        )


@dataclass(frozen=True)
class QualityReport:
    """Every type found in the window, where the Data Docs are, and what no suite judged."""

    types: tuple[TypeQuality, ...]
    data_docs: str | None  # the Data Docs index.html (None when not built)
    gx_root: str
    unassigned: Mapping[str, int] = field(default_factory=dict)  # messageType (or NO_TYPE) -> envelopes
    archive: str | None = None
    since: str | None = None
    until: str | None = None  # exclusive; None: no end
    redeliveries: int = 0  # deliveries left out because they were redelivered
    elapsed_seconds: float = 0.0
    results_page: str | None = None  # the same results as one HTML page that opens offline (quality.results_page)
    engine: str | None = None  # where GX computed: "in-process" (pandas) or "spark" (quality.runner.choose_engine)
    engine_reason: str | None = None  # why, in one line

    @property
    def success(self) -> bool:
        return all(t.verdict is Verdict.PASS for t in self.types)

    @property
    def exit_code(self) -> int:
        """0 every expectation met, 1 any missed (or could not be evaluated)."""
        return 0 if self.success else 1

    def of(self, message_type: str) -> TypeQuality:
        for quality in self.types:
            if quality.message_type == message_type:
                return quality
        raise KeyError(f"no envelopes of {message_type} in the window (found: {[t.message_type for t in self.types]})")

    def to_dict(self) -> dict[str, Any]:
        return {
            "archive": self.archive,
            "since": self.since,
            "until": self.until,
            "success": self.success,
            "data_docs": self.data_docs,
            "results_page": self.results_page,
            "gx_root": self.gx_root,
            "redeliveries_excluded": self.redeliveries,
            "unassigned": dict(self.unassigned),
            "elapsed_seconds": round(self.elapsed_seconds, 3),
            "engine": self.engine,
            "engine_reason": self.engine_reason,
            "types": [t.to_dict() for t in self.types],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QualityReport:
        return cls(
            types=tuple(TypeQuality.from_dict(t) for t in data["types"]),
            data_docs=data.get("data_docs"),
            results_page=data.get("results_page"),
            gx_root=data.get("gx_root", ""),
            unassigned=dict(data.get("unassigned") or {}),
            archive=data.get("archive"),
            since=data.get("since"),
            until=data.get("until"),
            redeliveries=int(data.get("redeliveries_excluded") or 0),
            elapsed_seconds=float(data.get("elapsed_seconds") or 0.0),
            engine=data.get("engine"),
            engine_reason=data.get("engine_reason"),
        )
