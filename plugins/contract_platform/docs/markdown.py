"""Markdown pages for contracts: what a service team reads before producing or consuming a message."""

from __future__ import annotations

import json
from pathlib import Path

from contract_platform.catalog.model import Catalog, Contract, Kind
from contract_platform.docs.fields import field_rows
from contract_platform.durations import format_duration

__all__ = ["render_contract_page", "render_index", "write_docs"]


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_contract_page(contract: Contract, catalog: Catalog) -> str:
    t = contract.transport
    lines = [
        f"# {contract.message_type}",
        "",
        f"> {contract.description}",
        "",
        "| | |",
        "|---|---|",
        f"| Kind | {contract.kind} ({'a fact that happened' if contract.kind is Kind.EVENT else 'a request to act'}) |",
        f"| Version | {contract.version} |",
        f"| Declared status | {contract.status} |",
        f"| Owner | {contract.owner.team} / {contract.owner.service}"
        + (f" — {contract.owner.contact}" if contract.owner.contact else "")
        + " |",
        *([f"| Callers | {', '.join(contract.callers)} |"] if contract.callers else []),
        f"| Exchange | `{t.exchange}` (topic) |",
        f"| Routing key | `{t.routing_key}` |",
        f"| Compatibility | {contract.compatibility} ({contract.compatibility_policy} content model) |",
    ]
    if contract.replay.on_evidence:
        replay = contract.replay
        lines.append(
            f"| Tightening | on evidence: a narrowing passes as a minor version when replay of at least "
            f"{replay.min_messages} messages over {format_duration(replay.window)} finds no violation (docs/replay.md) |"
        )
    if contract.superseded_by:
        lines.append(f"| Superseded by | [{contract.superseded_by}]({contract.superseded_by}.md) |")
    if contract.sunset:
        lines.append(f"| Sunset | {contract.sunset.isoformat()} |")
    lines += [
        "",
        "## Delivery semantics",
        "",
        "- At-least-once: consumers must be idempotent. Deduplicate on "
        f"`{contract.idempotency_key}` (it stays the same across majors, so a migration never looks like new facts).",
        "- Persistent messages (delivery mode 2), published with confirms and `mandatory`: "
        "nothing is published without a bound queue.",
    ]
    if contract.ordering:
        lines.append(
            f"- Ordered per `{contract.ordering.key}` by `{contract.ordering.sequence}`: "
            "a lower sequence than one already seen is out of order."
        )
    else:
        lines.append("- No ordering guarantee.")
    if contract.tenancy_required:
        lines.append("- Every message carries `metadata.tenantId`.")
    lines += ["", "## Payload", ""]
    if contract.dialect:
        lines += [f"Schema dialect: {contract.dialect}.", ""]
    lines += ["| Field | Type | Required | Constraints | Description |", "|---|---|---|---|---|"]
    for row in field_rows(contract.payload_schema):
        lines.append(
            f"| `{row.path}` | {_cell(row.type)} | {'yes' if row.required else 'no'} | {_cell(row.constraints)} | {_cell(row.description)} |"
        )
    lines += ["", "## Personal data", ""]
    if contract.pii.contains_pii:
        lines += [f"- `{p}`" for p in contract.pii.fields]
        lines.append("- Never copied into AMQP headers or routing keys; masked in quarantines and reports.")
    else:
        lines.append("None declared.")
    r = contract.retention
    lines += [
        "",
        "## Retention",
        "",
        f"- Queues: {format_duration(r.queue)}; dead-letter queues: {format_duration(r.dlq)}; archive: {format_duration(r.archive)}.",
    ]
    if contract.holds:
        lines += [f"- Hold ({h.kind}) until {h.until.isoformat()}: {h.reason}" for h in contract.holds]
    lines += ["", "## Consumers and topology", ""]
    if contract.consumers:
        lines += ["| Service | Queue | Dead letters | Parking lot |", "|---|---|---|---|"]
        for c in contract.consumers:
            lines.append(f"| {c.service} | `{c.queue}` | `{c.queue}.dlq` | `{c.queue}.parking-lot` |")
    else:
        lines.append("No declared consumers.")
    lines.append(f"\nEvery message is also archived through `archive.{t.exchange}`.")
    example = next((f for f in contract.fixtures if f.valid), None)
    if example is not None:
        lines += ["", "## Example", "", "```json", json.dumps(example.document, indent=2), "```"]
    lines.append("")
    return "\n".join(lines)


def render_index(catalog: Catalog) -> str:
    lines = [
        "# Contract catalogue",
        "",
        "| Message type | Kind | Version | Status | Owner | Exchange | Routing key |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in catalog:
        lines.append(
            f"| [{c.message_type}]({c.message_type}.md) | {c.kind} | {c.version} | {c.status} | "
            f"{c.owner.team} | `{c.transport.exchange}` | `{c.transport.routing_key}` |"
        )
    lines.append("")
    return "\n".join(lines)


def write_docs(catalog: Catalog, out_dir: Path) -> list[Path]:
    """Write one page per contract and an index; returns the files written (unchanged files are rewritten)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for contract in catalog:
        path = out_dir / f"{contract.message_type}.md"
        path.write_text(render_contract_page(contract, catalog), encoding="utf-8")
        written.append(path)
    index = out_dir / "index.md"
    index.write_text(render_index(catalog), encoding="utf-8")
    written.append(index)
    return written
