"""Human documentation of the catalogue: one Markdown page per contract version, plus an index."""

from contract_platform.docs.fields import FieldRow, field_rows
from contract_platform.docs.markdown import render_contract_page, render_index, write_docs

__all__ = ["FieldRow", "field_rows", "render_contract_page", "render_index", "write_docs"]
