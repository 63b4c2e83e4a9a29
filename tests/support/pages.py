"""The parts of a Contracts page the UI tests read."""

from __future__ import annotations

__all__ = ["page_section"]


def page_section(page: str, marker: str) -> str:
    """The HTML of ``page`` after ``marker`` up to the end of the section it opens."""
    assert marker in page, f"no {marker} on the page"
    return page.split(marker, 1)[1].split("</section>", 1)[0]
