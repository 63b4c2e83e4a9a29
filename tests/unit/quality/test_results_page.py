"""The envelope quality results page: every expectation's outcome, readable with no network and no script."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.quality import quality_report

from contract_platform.quality.report import QualityReport
from contract_platform.quality.results_page import RESULTS_PAGE_NAME, link_from_data_docs, write_results_page


def _report(data_docs: str | None = None) -> QualityReport:
    return quality_report(data_docs, "/gx", samples=("m-1", "<script>alert(1)</script>"))


def _outcomes(page: str) -> dict[str, str]:
    return dict(re.findall(r'data-expectation="([^"]+)">.*?class="verdict \w+">([^<]+)<', page, re.S))


def test_the_page_lists_every_expectation_with_its_outcome(tmp_path: Path) -> None:
    page = write_results_page(_report(), tmp_path / "local_site").read_text(encoding="utf-8")
    assert _outcomes(page) == {
        "message-id-unique": "met",
        "published-after-occurred": "missed",
        "producer-is-owner-service": "could not be evaluated",
    }
    assert 'id="overall">fail<' in page and "97.60%" in page and "12 of 500" in page
    assert "tenant-id-present" in page and "column producer missing" in page and "(none)" in page


def test_the_page_needs_nothing_from_outside_and_escapes_what_messages_carry(tmp_path: Path) -> None:
    page = write_results_page(_report(), tmp_path).read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<link" not in page and "@import" not in page


def test_the_data_docs_index_links_to_the_page_once(tmp_path: Path) -> None:
    index = tmp_path / "index.html"
    index.write_text('<html><head><script src="https://cdn.example/x.js"></script></head><body class="x"><div/></body>')
    write_results_page(_report(str(index)), tmp_path)
    link_from_data_docs(index)  # again: still one link
    text = index.read_text()
    assert text.count(f'href="{RESULTS_PAGE_NAME}"') == 1
    assert text.index(f'href="{RESULTS_PAGE_NAME}"') > text.index('<body class="x">')
    assert 'href="index.html"' in (tmp_path / RESULTS_PAGE_NAME).read_text()  # and back, when the site exists
