"""The Data Docs index built again from the results that are left, after housekeeping removed old runs.

Great Expectations builds the index (``<gx>/uncommitted/data_docs/local_site/index.html``) from the result pages of
its site, each checked against the validation results store (a page whose result is gone is removed too), so once
old runs are gone from both, building the index again gives one that links to nothing removed. No page is rendered
again: ``build_data_docs`` is given a resource list that names no result (it then renders only what it names), and
builds the index alone. The index is then made to open offline and, when the results page is there, linked to it
again, as ``run_suite`` leaves it (``quality.offline_site``, ``quality.results_page``).
"""

from __future__ import annotations

from pathlib import Path

from contract_platform.errors import QualityError
from contract_platform.quality.offline_site import make_offline
from contract_platform.quality.results_page import RESULTS_PAGE_NAME, link_from_data_docs
from contract_platform.quality.runner import DATA_DOCS_INDEX, PREFIX, _open_context

__all__ = ["rebuild_index"]

_NO_PAGE = f"{PREFIX}.__index_only__"  # a suite name no result has: the section builders render nothing


def rebuild_index(context_root: Path) -> Path | None:
    """Build the Data Docs index of the context in ``context_root`` again from the pages and results on disk; its
    path, or None when no index was ever built there (nothing links to anything)."""
    index = Path(context_root) / DATA_DOCS_INDEX
    if not index.is_file():
        return None
    context = _open_context(Path(context_root))
    from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier
    from great_expectations.exceptions import GreatExpectationsError

    try:
        context.build_data_docs(resource_identifiers=[ExpectationSuiteIdentifier(name=_NO_PAGE)], build_index=True)
    except GreatExpectationsError as exc:
        raise QualityError(f"{index}: Great Expectations could not build the Data Docs index again: {exc}") from exc
    try:
        make_offline(index.parent)
        if (index.parent / RESULTS_PAGE_NAME).is_file():  # the link to it, as the quality run left it
            link_from_data_docs(index)
    except OSError as exc:
        raise QualityError(f"{index.parent}: cannot rewrite the Data Docs index there ({exc})") from exc
    return index
