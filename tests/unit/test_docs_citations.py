"""Code and docs cite sections of docs/design.md that exist, and no design document outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("plugins", "spark_jobs", "dags", "tests", "benchmarks", "contracts", "docs", "scripts")
CITATION = re.compile(r"design\.md#([A-Za-z0-9_-]+)")


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6} (.+)$", markdown, re.MULTILINE)
    return {re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def texts() -> dict[Path, str]:
    files = [REPO / "README.md"] + [
        path
        for folder in SOURCES
        for path in (REPO / folder).rglob("*")
        if path.is_file() and path.suffix in {".py", ".md", ".json", ".yaml", ".yml", ".toml", ""}
    ]
    return {path: path.read_text(encoding="utf-8", errors="replace") for path in files}


def test_every_design_citation_names_a_section_that_exists():
    sections = anchors((REPO / "docs" / "design.md").read_text(encoding="utf-8"))
    cited = {(path, anchor) for path, text in texts().items() for anchor in CITATION.findall(text)}
    assert len(cited) > 30  # the code does cite it
    missing = sorted(f"{path.relative_to(REPO)}: #{anchor}" for path, anchor in cited if anchor not in sections)
    assert missing == [], missing


def test_nothing_cites_a_design_document_outside_the_repository():
    word = "DESIGN"  # spelled apart so that this file does not match itself
    pattern = re.compile(word + r" (section|sections|§)|shared/" + word)
    stale = sorted(str(path.relative_to(REPO)) for path, text in texts().items() if pattern.search(text))
    assert stale == [], stale
