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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.retirement.model import AuditResult, CheckName, CheckResult, iso

__all__ = ["AuditPaths", "audit_folder", "record_audit", "render_audit_page", "write_audit_bundle"]

_VERDICT_WORD = {Verdict.PASS: "PASS", Verdict.FAIL: "FAIL", Verdict.UNKNOWN: "UNKNOWN (not a pass)"}


@dataclass(frozen=True)
class AuditPaths:
    json: Path  # latest.json
    markdown: Path  # latest.md
    snapshot: Path  # the timestamped JSON copy (what the evidence record references)
    snapshot_markdown: Path

    @property
    def all(self) -> tuple[Path, ...]:
        return (self.json, self.markdown, self.snapshot, self.snapshot_markdown)


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
        (paths.snapshot, document),
        (paths.snapshot_markdown, page),
        (paths.json, document),
        (paths.markdown, page),
    ):
        _write_atomically(path, text)
    return paths


def record_audit(result: AuditResult, registry: Any, *, reference: str | Path | None = None) -> Any:
    """Store the audit as ``retirement_audit`` evidence (``reference``: the JSON file it was written to)."""
    return registry.add_evidence(
        result.message_type,
        contract_version=result.contract_version,
        kind=EvidenceKind.RETIREMENT_AUDIT,
        verdict=result.verdict,
        figures=result.figures(),
        reference=str(reference) if reference is not None else None,
        run_id=result.run_id,
        collected_at=result.audited_at,
    )


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


# -- Markdown --------------------------------------------------------------------------------------


def _cell(value: object) -> str:
    return ("" if value is None else str(value)).replace("|", "\\|").replace("\n", " ")


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
        lines.append(f"{number}. **{check.name}** ({check.verdict}): {check.blocker}.{when}")
    lines += ["", "## Checks", "", "| Check | Verdict | Clears at |", "|---|---|---|"]
    lines += [f"| {c.name} | {c.verdict} | {iso(c.clears_at) or ''} |" for c in result.checks]
    for check in result.checks:
        lines += ["", f"### {check.name}", "", *_details(check)]
    return "\n".join(lines) + "\n"


def _details(check: CheckResult) -> list[str]:
    figures = check.figures
    if check.name is CheckName.QUEUES:
        rows = [
            f"| `{q['queue']}` | {q['role']} | {'yes' if q['exists'] else 'no'} | {q['ready']} | "
            f"{'?' if q['unacked'] is None else q['unacked']} | {q['consumers']} |"
            for q in figures.get("queues", [])
        ]
        return ["| Queue | Role | Exists | Ready | Unacked | Consumers |", "|---|---|---|---|---|---|", *rows]
    if check.name is CheckName.DEAD_LETTERS:
        head = [
            f"Scanned {figures.get('scanned', 0)} DLQs and parking lots ({figures.get('coverage')}); "
            f"{figures.get('matching', 0)} messages of the type found.",
            "",
        ]
        rows = [
            f"| `{q['queue']}` | {q['depth']} | {q['inspected']} | {q.get('matching', 0)} | "
            f"{_cell(q.get('skipped') or ('vanished' if q.get('vanished') else ''))} |"
            for q in figures.get("queues", [])
        ]
        return head + (
            ["| Queue | Depth | Inspected | Of the type | Note |", "|---|---|---|---|---|", *rows] if rows else []
        )
    return [f"- {key}: {_cell(_plain(value))}" for key, value in figures.items()]


def _plain(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)
