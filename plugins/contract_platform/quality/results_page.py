"""The envelope quality results as one self-contained HTML page that opens anywhere, without a network.

Great Expectations' Data Docs spread a run over many pages, each loading a dozen scripts and stylesheets
(the platform's copies, ``quality.offline_site``: the site opens offline too). This page is written beside
them (``<gx>/uncommitted/data_docs/local_site/envelope_quality.html``) after every run from the same
``QualityReport``: per message type its verdict and every expectation, met or missed, with the share
of envelopes that met it, its threshold (``mostly``), the unexpected count, sample messageIds and
what was skipped. Inline CSS, no script, no external reference: one file to open, mail or archive.
The Data Docs index gets a line at its top that links here.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime
from pathlib import Path

from contract_platform.quality.report import QualityReport, TypeQuality

__all__ = ["RESULTS_PAGE_NAME", "link_from_data_docs", "render_results_page", "write_results_page"]

RESULTS_PAGE_NAME = "envelope_quality.html"
_MARK = "<!-- contract-platform: offline results link -->"

_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1100px;
       padding: 0 1em; color: #1d2733; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #d5dbe3; }
table { border-collapse: collapse; width: 100%; margin: .5em 0 1em; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #e4e8ee; vertical-align: top; }
th { background: #f3f5f8; font-weight: 600; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.verdict { display: inline-block; padding: 0 .5em; border-radius: 3px; font-weight: 600; }
.pass { background: #e3f4e8; color: #1b6b35; } .fail { background: #fde5e5; color: #a11d1d; }
.unknown { background: #fff1d6; color: #8a5a00; } .muted { color: #6b7785; } code { font-size: .92em; }
tr.missed td { background: #fff6f6; } .samples { font-size: .85em; color: #445; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.2f}%"


def _type_section(quality: TypeQuality) -> str:
    verdict = str(quality.verdict)
    rows = []
    for result in quality.results:
        outcome = "met" if result.success else ("could not be evaluated" if result.error else "missed")
        css = "pass" if result.success else ("unknown" if result.error else "fail")
        samples = ", ".join(result.samples)
        detail = _e(result.error) if result.error else f'<span class="samples">{_e(samples)}</span>'
        rows.append(
            f'<tr class="expectation {"met" if result.success else "missed"}" data-expectation="{_e(result.id)}">'
            f"<td><code>{_e(result.id)}</code><div class=muted>{_e(result.gx_type)}</div></td>"
            f'<td><span class="verdict {css}">{outcome}</span></td>'
            f'<td class="num">{_percent(result.observed)}</td><td class="num">{_percent(result.mostly)}</td>'
            f'<td class="num">{result.unexpected:,} of {result.judged:,}</td><td>{detail}</td></tr>'
        )
    skipped = "".join(f"<li><code>{_e(key)}</code>: {_e(why)}</li>" for key, why in sorted(quality.skipped.items()))
    missed = f" ({_e(', '.join(quality.failed))})" if quality.failed else ""
    return (
        f'<section class="message-type" id="{_e(quality.message_type)}">'
        f"<h2>{_e(quality.message_type)} <span class=muted>v{_e(quality.contract_version)}</span> "
        f'<span class="verdict {_e(verdict)}">{_e(verdict)}</span></h2>'
        f"<p>{quality.rows:,} envelopes; {quality.evaluated} expectations evaluated, "
        f"{len(quality.failed)} missed{missed}. "
        f"Suite <code>{_e(quality.suite)}</code>.</p>"
        "<table><thead><tr><th>expectation</th><th>outcome</th><th>met by</th><th>threshold (mostly)</th>"
        "<th>unexpected</th><th>sample messageIds / error</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        + (f"<p>Not judged:</p><ul>{skipped}</ul>" if skipped else "")
        + "</section>"
    )


def render_results_page(report: QualityReport, *, generated_at: datetime | None = None) -> str:
    """The whole page, as text."""
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    window = ""
    if report.archive or report.since or report.until:
        window = (
            f"<p>Archive <code>{_e(report.archive or '—')}</code>, from {_e(report.since or 'the start')} "
            f"until {_e(report.until or 'the end')} (exclusive).</p>"
        )
    overall = "pass" if report.success else "fail"
    listing = "".join(
        f'<li><a href="#{_e(t.message_type)}">{_e(t.message_type)}</a> '
        f'<span class="verdict {_e(t.verdict)}">{_e(t.verdict)}</span></li>'
        for t in report.types
    )
    unassigned = "".join(
        f"<li><code>{_e(name)}</code>: {count:,} envelopes</li>" for name, count in report.unassigned.items()
    )
    docs = (
        '<p class="muted">The same run in Great Expectations\' Data Docs: <a href="index.html">index.html</a> '
        "(opens offline too: its scripts and styles are in the site's <code>static/vendor</code> folder).</p>"
        if report.data_docs
        else ""
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Envelope quality results</title><style>{_CSS}</style></head><body>"
        f'<h1>Envelope quality results <span class="verdict {overall}" id="overall">{overall}</span></h1>'
        f"<p>Written {when}; {len(report.types)} message type{'' if len(report.types) == 1 else 's'} judged, "
        f"{report.redeliveries:,} redeliveries left out.</p>"
        f"{window}<ul class=types>{listing}</ul>"
        + (f"<p>Envelopes no suite judged (not in the catalogue):</p><ul>{unassigned}</ul>" if unassigned else "")
        + docs
        + "".join(_type_section(t) for t in report.types)
        + "</body></html>"
    )


def write_results_page(report: QualityReport, site: Path) -> Path:
    """Write the page into ``site`` (the Data Docs' ``local_site`` folder) and link it from the index there."""
    site.mkdir(parents=True, exist_ok=True)
    page = site / RESULTS_PAGE_NAME
    page.write_text(render_results_page(report), encoding="utf-8")
    link_from_data_docs(site / "index.html")
    return page


def link_from_data_docs(index: Path) -> None:
    """Put a plain link to the results page at the top of the Data Docs index (once), above GX's own header."""
    if not index.is_file():
        return
    text = index.read_text(encoding="utf-8")
    if _MARK in text:
        return
    banner = (
        f'{_MARK}<p style="margin:0;padding:8px 12px;background:#fff8e1;border-bottom:1px solid #e0c36a;'
        'font:15px system-ui,sans-serif">Every envelope quality result of the last run on one page, to read, mail or '
        f'archive: <a href="{RESULTS_PAGE_NAME}">{RESULTS_PAGE_NAME}</a></p>'
    )
    start = text.find("<body")
    end = text.find(">", start) if start >= 0 else -1
    if end < 0:
        return
    index.write_text(text[: end + 1] + banner + text[end + 1 :], encoding="utf-8")
