"""Names other clients chose, through the one pair of helpers every report uses: whatever a name holds, it
renders as the characters it is, on one line, never as markup (CommonMark code spans and backslash escapes,
GitHub's tables), and the text output shows it with control and bidirectional characters as escapes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

from contract_platform.errors import markdown_code, markdown_text, printable

RENDERER = MarkdownIt("commonmark").enable("table")
MARKUP = "`|\\*_[]()<>&!~#-+=.: \n\r\t\x00\x1b\x07\u202e\u2066"
NAMES = st.one_of(
    st.text(alphabet=MARKUP + "ab", min_size=1, max_size=24),
    st.text(min_size=1, max_size=24),
    st.sampled_from(
        ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "a`b``c", "`", " ` ", "a|b", "&amp;"]
    ),
)


def cells(cell: str) -> str:
    """The HTML of a one-row table whose first cell is ``cell``, as a reader's viewer shows it."""
    return RENDERER.render(f"| Queue | Vhost |\n|---|---|\n| {cell} | / |\n")


@settings(max_examples=300, deadline=None)
@given(name=NAMES)
def test_a_name_in_a_table_cell_is_one_whole_code_span(name: str) -> None:
    page = cells(markdown_code(name, in_table=True))

    assert f"<td><code>{escapeHtml(printable(name))}</code></td>\n<td>/</td>" in page, page


@settings(max_examples=300, deadline=None)
@given(name=NAMES)
def test_a_name_in_prose_or_a_cell_is_its_own_text(name: str) -> None:
    shown = escapeHtml(printable(name))

    assert (
        RENDERER.render(f"1. **queues** (fail): {markdown_text(name)}.")
        == f"<ol>\n<li><strong>queues</strong> (fail): {shown}.</li>\n</ol>\n"
    )
    assert f"<td>{shown.strip(' ')}</td>\n<td>/</td>" in cells(markdown_text(name))  # a cell is trimmed
    assert RENDERER.render(f"- {markdown_code(name)}: found").startswith(f"<ul>\n<li><code>{shown}</code>: found")


@given(name=NAMES)
def test_a_name_printed_as_text_stays_on_its_line(name: str) -> None:
    shown = printable(name)

    assert shown.isprintable() and "\n" not in shown and "\u202e" not in shown
    if "\\" not in name:  # a person can read the name back from what was printed
        assert shown.encode("ascii", "backslashreplace").decode("unicode_escape") == name
