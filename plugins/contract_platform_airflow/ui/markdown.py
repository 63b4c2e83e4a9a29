"""A tiny, safe Markdown -> HTML for the docs pages ``docs.render_contract_page`` writes.

Everything is escaped first; only headings, block quotes, tables, bullet lists, fenced code,
inline code, bold and links are turned into tags. A link is kept only when it points at another
contract page (``<messageType>.md``, rewritten to ``<base>/c/<messageType>``) or at http(s);
any other target is shown as its text. The result is marked safe for Jinja by the caller.
"""

from __future__ import annotations

import re
from html import escape

__all__ = ["markdown_to_html"]

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CONTRACT_PAGE = re.compile(r"^([a-z0-9][a-z0-9-]*\.[a-z0-9][a-z0-9-]*\.v[0-9]+)\.md$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def _link(match: re.Match[str], base: str) -> str:
    text, target = match.group(1), match.group(2)
    page = _CONTRACT_PAGE.match(target)
    if page:
        return f'<a href="{escape(base)}/c/{page.group(1)}">{text}</a>'
    if target.startswith(("https://", "http://")):
        return f'<a href="{target}" rel="noopener noreferrer" target="_blank">{text}</a>'
    return text


def _inline(text: str, base: str) -> str:
    """Escape ``text``; render `code`, **bold** and links outside code spans."""
    parts = text.split("`")
    out = []
    for index, part in enumerate(parts):
        if index % 2 == 1 and index < len(parts) - 1:
            out.append(f"<code>{escape(part)}</code>")
            continue
        chunk = escape(part if index % 2 == 0 else "`" + part)
        chunk = _LINK.sub(lambda m: _link(m, base), chunk)
        out.append(_BOLD.sub(r"<strong>\1</strong>", chunk))
    return "".join(out)


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(inner)]


def _is_separator(line: str) -> bool:
    cells = _cells(line)
    return bool(cells) and all(re.fullmatch(r":?-{3,}:?", cell) for cell in cells)


def _table(lines: list[str], base: str) -> str:
    header, body = (lines[0], lines[2:]) if len(lines) > 1 and _is_separator(lines[1]) else (None, lines)
    html = ["<table>"]
    if header is not None and any(_cells(header)):
        html.append("<thead><tr>" + "".join(f"<th>{_inline(c, base)}</th>" for c in _cells(header)) + "</tr></thead>")
    html.append("<tbody>")
    for line in body:
        html.append("<tr>" + "".join(f"<td>{_inline(c, base)}</td>" for c in _cells(line)) + "</tr>")
    html.append("</tbody></table>")
    return "".join(html)


def markdown_to_html(text: str, *, base: str = "") -> str:
    """HTML for ``text``; ``base`` is the URL prefix of the contracts app (for links between pages)."""
    lines = text.splitlines()
    html: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            html.append("<p>" + " ".join(_inline(p, base) for p in paragraph) + "</p>")
            paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("```")), len(lines))
            html.append("<pre><code>" + escape("\n".join(lines[i + 1 : end])) + "</code></pre>")
            i = end + 1
            continue
        if stripped.startswith("|"):
            flush()
            end = next((j for j in range(i, len(lines)) if not lines[j].strip().startswith("|")), len(lines))
            html.append(_table([ln.strip() for ln in lines[i:end]], base))
            i = end
            continue
        if stripped.startswith("- "):
            flush()
            end = next((j for j in range(i, len(lines)) if not lines[j].strip().startswith("- ")), len(lines))
            html.append("<ul>" + "".join(f"<li>{_inline(ln.strip()[2:], base)}</li>" for ln in lines[i:end]) + "</ul>")
            i = end
            continue
        heading = _HEADING.match(stripped)
        if heading:
            flush()
            level = len(heading.group(1))
            html.append(f"<h{level}>{_inline(heading.group(2), base)}</h{level}>")
        elif stripped.startswith(">"):
            flush()
            html.append(f"<blockquote><p>{_inline(stripped.lstrip('>').strip(), base)}</p></blockquote>")
        elif not stripped:
            flush()
        else:
            paragraph.append(stripped)
        i += 1
    flush()
    return "\n".join(html)
