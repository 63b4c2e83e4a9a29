"""The audit's evidence: a JSON document and a readable Markdown page, and the ``retirement_audit`` record.

::

    <docs>/retirement/<messageType>/latest.json           the latest audit (replaced atomically)
    <docs>/retirement/<messageType>/latest.md
    <docs>/retirement/<messageType>/<YYYYmmddTHHMMSSZ>.json   a copy that never changes: the evidence cites it
    <docs>/retirement/<messageType>/<YYYYmmddTHHMMSSZ>.md
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract_platform import evidence
from contract_platform.errors import markdown_code, markdown_text
from contract_platform.evidence import EvidenceRecord, Registry, Verdict
from contract_platform.retirement.model import AuditResult, CheckName, CheckResult, iso

__all__ = [
    "AuditPaths",
    "audit_folder",
    "considered_queues",
    "record_audit",
    "render_audit_page",
    "write_audit_bundle",
]

_VERDICT_WORD = {Verdict.PASS: "PASS", Verdict.FAIL: "FAIL", Verdict.UNKNOWN: "UNKNOWN (not a pass)"}


@dataclass(frozen=True)
class AuditPaths:
    json: Path  # latest.json
    markdown: Path  # latest.md
    stamped: Path  # the timestamped JSON copy (what the evidence record references)
    stamped_markdown: Path

    @property
    def all(self) -> tuple[Path, ...]:
        return (self.json, self.markdown, self.stamped, self.stamped_markdown)


def audit_folder(docs_dir: str | Path, message_type: str) -> Path:
    return Path(docs_dir) / "retirement" / message_type


def write_audit_bundle(result: AuditResult, docs_dir: str | Path) -> AuditPaths:
    """Write the audit as JSON and Markdown under ``<docs>/retirement/<messageType>/``."""
    folder = audit_folder(docs_dir, result.message_type)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = result.audited_at.strftime("%Y%m%dT%H%M%SZ")
    document = json.dumps(result.to_dict(), indent=2, sort_keys=False) + "\n"
    page = render_audit_page(result)
    paths = AuditPaths(folder / "latest.json", folder / "latest.md", folder / f"{stamp}.json", folder / f"{stamp}.md")
    for path, text in (
        (paths.stamped, document),
        (paths.stamped_markdown, page),
        (paths.json, document),
        (paths.markdown, page),
    ):
        _write_atomically(path, text)
    return paths


def record_audit(result: AuditResult, registry: Registry, *, reference: str | Path | None = None) -> EvidenceRecord:
    """Store the audit as ``retirement_audit`` evidence (``reference``: the JSON file it was written to)."""
    return evidence.record(
        registry,
        result.message_type,
        result.contract_version,
        result.evidence_figures(),
        verdict=result.verdict,
        reference=str(reference) if reference is not None else None,
        run_id=result.run_id,
        collected_at=result.audited_at,
    )


@dataclass(frozen=True)
class KeptAudit:
    paths: AuditPaths
    evidence: EvidenceRecord


def keep_audit(result: AuditResult, registry: Registry, docs_dir: str | Path) -> KeptAudit:
    """What the DAG and ``contractctl audit --record`` keep of an audit: the bundle, then the evidence that
    references its timestamped JSON (the order matters: evidence never points at a file not yet written)."""
    paths = write_audit_bundle(result, docs_dir)
    return KeptAudit(paths, record_audit(result, registry, reference=paths.stamped))


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


# -- Markdown --------------------------------------------------------------------------------------


# Queue, connection and virtual host names, message ids and the blockers that quote them come from other
# clients: every one goes through markdown_text (prose, table cells) or markdown_code (names in code spans).


def _cell(value: object) -> str:
    return markdown_text("" if value is None else str(value))


def _code(name: object) -> str:
    """A name in a code span inside a table row."""
    return markdown_code(str(name), in_table=True)


def render_audit_page(result: AuditResult) -> str:
    lines = [
        f"# Retirement audit: {result.message_type}",
        "",
        "| | |",
        "|---|---|",
        f"| Verdict | **{_VERDICT_WORD[result.verdict]}** |",
        f"| Contract version | {result.contract_version} |",
        f"| Audited at | {iso(result.audited_at)} |",
        f"| Run | {_cell(result.run_id or '-')} |",
        "",
        "## Blockers",
        "",
    ]
    if not result.blocking:
        lines.append("None: every check passed.")
    for number, check in enumerate(result.blocking, 1):
        when = f" Might clear at {iso(check.clears_at)}." if check.clears_at else " Needs someone to act."
        lines.append(f"{number}. **{check.name}** ({check.verdict}): {_cell(check.blocker)}.{when}")
    lines += ["", "## Checks", "", "| Check | Verdict | Clears at |", "|---|---|---|"]
    lines += [f"| {c.name} | {c.verdict} | {iso(c.clears_at) or ''} |" for c in result.checks]
    for check in result.checks:
        lines += ["", f"### {check.name}", "", *_details(check)]
    return "\n".join(lines) + "\n"


def _details(check: CheckResult) -> list[str]:
    figures = check.figures
    if check.name is CheckName.QUEUES:
        searched = figures.get("searched") or {}
        head = []
        if searched.get("vhosts"):
            vhosts = ", ".join(markdown_code(str(v)) for v in searched["vhosts"])
            head = [f"Every queue the version reaches, searched in virtual hosts {vhosts}.", ""]
        if searched.get("notJudged"):
            head += [
                "Not judged (the platform's archive, shared by the exchange): "
                f"{', '.join(markdown_code(str(q)) for q in searched['notJudged'])}.",
                "",
            ]
        rows = [
            f"| {_code(q['queue'])} | {_cell(q.get('vhost') or '')} | {_cell(', '.join(q.get('foundBy', [])))} | "
            f"{q['role']} | {'yes' if q['exists'] else 'no'} | {q['ready']} | "
            f"{'?' if q['unacked'] is None else q['unacked']} | {q['consumers']} | {_cell(_readers(q))} |"
            for q in figures.get("queues", [])
        ]
        return [
            *head,
            "| Queue | Vhost | Found by | Role | Exists | Ready | Unacked | Consumers | Read by |",
            "|---|---|---|---|---|---|---|---|---|",
            *rows,
            *_reasons(figures.get("queues", [])),
        ]
    if check.name is CheckName.DEAD_LETTERS:
        head = [
            f"Scanned {figures.get('scanned', 0)} dead-letter queues ({figures.get('coverage')}); "
            f"{figures.get('matching', 0)} messages of the type found.",
            "",
        ]
        rows = [
            f"| {_code(q['queue'])} | {_cell(q.get('vhost') or '')} | {_cell(', '.join(q.get('foundBy', [])))} | "
            f"{q['depth']} | {q['inspected']} | {q.get('matching', 0)} | {_cell(', '.join(q.get('matchingIds', [])))} | "
            f"{_cell(_note(q))} |"
            for q in figures.get("queues", [])
        ]
        table = [
            "| Queue | Vhost | Found by | Depth | Inspected | Of the type | messageIds | Note |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
        ]
        return head + (table + _reasons(figures.get("queues", [])) if rows else [])
    if check.name is CheckName.SUCCESSOR_CONSUMERS and figures.get("stillOnSource") is not None:
        plain = [f"- {key}: {_cell(_plain(value))}" for key, value in figures.items() if key != "stillOnSource"]
        waiting = figures["stillOnSource"]
        if not waiting:
            return [*plain, "", "Every consumer reads the successor and no longer this version (reader sessions)."]
        rows = [
            f"| {_code(m['service'])} | {_cell(m.get('team') or '?')} | {_cell(m.get('contact') or '?')} | "
            f"{m['state']} | {_cell(m.get('why') or '')} |"
            for m in waiting
        ]
        return [
            *plain,
            "",
            "Consumers still on this version, as the broker shows them (reader sessions), with their owners:",
            "",
            "| Consumer | Team | Contact | State | Why |",
            "|---|---|---|---|---|",
            *rows,
        ]
    return [f"- {key}: {_cell(_plain(value))}" for key, value in figures.items()]


def considered_queues(figures: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every queue an audit considered, from its evidence figures: one row each for the CLI and the UI.

    ``check`` is ``queues`` (the version reaches it) or ``dead_letters``; ``held`` its messages (ready and
    unacked, or its depth); ``ofType`` the messages of the version found in a dead-letter queue.
    """
    checks = figures.get("checks") or {}
    rows = []
    for look in (checks.get("queues") or {}).get("figures", {}).get("queues", []):
        held = look["ready"] + (look.get("unacked") or 0) if look.get("exists") else None
        rows.append(
            {
                "queue": look["queue"],
                "vhost": look.get("vhost"),
                "foundBy": ", ".join(look.get("foundBy", [])),
                "check": "queues",
                "held": held,
                "ofType": None,
                "consumers": look.get("consumers"),
                "readBy": _readers(look),
                "why": "; ".join(look.get("why", [])),
            }
        )
    for scan in (checks.get("dead_letters") or {}).get("figures", {}).get("queues", []):
        rows.append(
            {
                "queue": scan["queue"],
                "vhost": scan.get("vhost"),
                "foundBy": ", ".join(scan.get("foundBy", [])),
                "check": "dead_letters",
                "held": scan.get("depth"),
                "ofType": scan.get("matching", 0),
                "consumers": None,
                "readBy": _note(scan),
                "why": "; ".join(scan.get("why", [])),
            }
        )
    return rows


def _note(scan: Mapping[str, Any]) -> str:
    """Why a dead-letter queue was not read, or that it vanished; and the bodies that could not be parsed."""
    notes = [scan.get("skipped") or ("vanished" if scan.get("vanished") else "")]
    unreadable = scan.get("unreadable") or {}
    notes += [f"{count} unreadable: {reason}" for reason, count in sorted(unreadable.items())]
    return "; ".join(note for note in notes if note)


def _readers(queue: Mapping[str, Any]) -> str:
    """``billing-reader from 10.0.0.7 (guest)``: whom to call about a consumer."""
    shown = []
    for reader in queue.get("readers", []):
        name = reader.get("clientName") or reader.get("connection") or "unnamed connection"
        where = f" from {reader['peerHost']}" if reader.get("peerHost") else ""
        user = f" ({reader['user']})" if reader.get("user") else ""
        shown.append(f"{name}{where}{user}")
    return "; ".join(shown)


def _reasons(queues: list[dict[str, Any]]) -> list[str]:
    """How each queue not declared by the platform was found, one line each."""
    lines = [
        f"- {markdown_code(str(q['queue']))}: {_cell('; '.join(q['why']))}"
        for q in queues
        if q.get("why") and q.get("foundBy") != ["platform topology"]
    ]
    return ["", "How they were found:", "", *lines] if lines else []


def _plain(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)
